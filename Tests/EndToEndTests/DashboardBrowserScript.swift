/// The browser side of the dashboard tests (Python, Selenium driving Debian's chromium headless, both
/// installed by scripts/setup). Kept as a Swift string so the test target has no unhandled resource file.
let dashboardBrowserSource = #"""
#!/usr/bin/env python3
"""Opens a pushbench dashboard in headless chromium and reports what the page showed.

Usage: dashboard_browser.py DIR MODE SECONDS
Starts the browser first, then writes DIR/ready and waits (at most 90 s) for DIR/url, the page to open.
MODE run: polls the page until it shows the final figures (body data-done) or SECONDS pass.
MODE watch: polls for SECONDS, then stops.
Saves DIR/dashboard.png and prints one JSON object: the seconds seen (body data-last-second at each
poll where it changed), the final figures' texts by cell id, the other texts asked for, the browser
console's messages, and the screenshot's path.
"""
import json, os, sys, time

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
except ImportError as e:
    print("selenium is not installed (%s); scripts/setup installs it" % e, file=sys.stderr)
    sys.exit(3)

folder, mode, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
for path in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
    if not os.path.exists(path):
        print("%s is missing; scripts/setup installs Debian's chromium and chromium-driver" % path, file=sys.stderr)
        sys.exit(4)

options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--window-size=1400,2200", "--no-first-run", "--disable-extensions"):
    options.add_argument(flag)
options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    open(os.path.join(folder, "ready"), "w").close()
    url_file = os.path.join(folder, "url")
    deadline = time.time() + 90
    while not os.path.exists(url_file) and time.time() < deadline:
        time.sleep(0.05)
    url = open(url_file).read().strip()
    driver.get(url)
    seen, statuses = [], []
    deadline = time.time() + seconds
    done = False
    while time.time() < deadline:
        last = driver.execute_script("return document.body.dataset.lastSecond")
        if last and (not seen or seen[-1] != last):
            seen.append(last)
        status = driver.execute_script("return document.getElementById('status').textContent")
        if not statuses or statuses[-1] != status:
            statuses.append(status)
        done = driver.execute_script("return document.body.dataset.done") == "1"
        if mode == "run" and done:
            break
        time.sleep(0.1)
    time.sleep(0.5)
    texts = driver.execute_script("""
        const out = {};
        document.querySelectorAll('[id^="final-"], [id^="last-"], [id^="gw-"], [data-reason], [data-status]').forEach(e => {
          const key = e.id || ('reason:' + (e.dataset.reason || '') + (e.dataset.status ? 'status:' + e.dataset.status : ''));
          out[key] = e.textContent;
        });
        out.charts = document.querySelectorAll('svg path[data-series]').length;
        out.series = Array.from(new Set(Array.from(document.querySelectorAll('svg path[data-series]')).map(p => p.dataset.series)));
        out.axes = Array.from(document.querySelectorAll('svg g.axis[data-orient="y"]')).map(g => g.dataset.scale);
        return out;""")
    shot = os.path.join(folder, "dashboard.png")
    driver.save_screenshot(shot)
    console = [{"level": e["level"], "message": e["message"]} for e in driver.get_log("browser")]
    print(json.dumps({"seen": seen, "statuses": statuses[-5:], "done": done, "texts": texts,
                      "console": console, "screenshot": shot}))
finally:
    driver.quit()
"""#
