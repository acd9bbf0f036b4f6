#!/usr/bin/env python3
"""scripts/bench-dashboard's rounds: a run with 5 dashboard viewers against one with no dashboard.

Usage: bench_dashboard.py PUSHBENCH RATE ROUNDS DURATION RATE_PERCENT
"""
import json, re, socket, statistics, subprocess, sys, tempfile, threading, time

binary, rate, rounds, duration, rate_percent = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
VIEWERS = 5


def viewer(port, path):
    """A viewer as light as a browser tab on another machine would be here: curl reading /events into a
    file (counted afterwards), so the harness's own CPU stays out of the run's figures."""
    return subprocess.Popen(["curl", "-sN", "--max-time", "600", "http://127.0.0.1:%d/events" % port],
                            stdout=open(path, "wb"), stderr=subprocess.DEVNULL)


def run(with_viewers, out):
    args = [binary, "run", "--rps", rate, "--duration", duration, "--json", "--quiet", "--out", out]
    if with_viewers:
        args += ["--dashboard", "127.0.0.1:0"]
    limit = float(re.sub(r"[^0-9.]", "", duration) or 10) * (60 if duration.endswith("m") else 1) + 60
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    viewers = []
    if with_viewers:
        port = None
        deadline = time.time() + 30
        line = ""
        while port is None and time.time() < deadline:
            line = p.stderr.readline()
            m = re.search(r"dashboard at http://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
            elif not line and p.poll() is not None:
                break
        if port is None:
            p.kill()
            sys.exit("no dashboard address from pushbench: %s" % line)
        for i in range(VIEWERS):
            viewers.append(viewer(port, "%s/viewer-%d.txt" % (out, i)))
    try:
        out_text, err_text = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        p.kill()
        sys.exit("a run took longer than %d s" % limit)
    counts = []
    for i, v in enumerate(viewers):
        try:
            v.wait(5)
        except subprocess.TimeoutExpired:
            v.kill()
            v.wait()
        with open("%s/viewer-%d.txt" % (out, i), "rb") as f:
            counts.append(f.read().count(b"event: second\n"))
    if p.returncode != 0:
        sys.exit("pushbench exited %d: %s" % (p.returncode, err_text.strip()[-500:]))
    s = json.loads(out_text)
    machine = s.get("machine") or {}
    return {"rps": s["throughput"]["achieved_rps"], "p99_us": s["latency_us"]["p99"],
            "load": machine.get("load_average_1m_at_start"), "steal_ms": machine.get("steal_ms"), "seconds_seen": min(counts) if viewers else None}


results = {True: [], False: []}
with tempfile.TemporaryDirectory(prefix="bench-dashboard-") as out:
    for r in range(rounds):
        order = [True, False] if r % 2 == 0 else [False, True]
        for with_viewers in order:
            x = run(with_viewers, out)
            results[with_viewers].append(x)
            print("round %d  %-13s  %10.1f rps  p99 %7d us  load %s  steal %s ms%s" % (
                r + 1, "5 viewers" if with_viewers else "no dashboard", x["rps"], x["p99_us"], x["load"], x["steal_ms"],
                "  (each viewer got %d seconds)" % x["seconds_seen"] if with_viewers else ""), flush=True)

median = lambda side, key: statistics.median(x[key] for x in results[side])
with_rate, without_rate = median(True, "rps"), median(False, "rps")
with_p99, without_p99 = median(True, "p99_us"), median(False, "p99_us")
spread = max(x["p99_us"] for x in results[False]) - min(x["p99_us"] for x in results[False])
print("median  5 viewers     %10.1f rps  p99 %7d us" % (with_rate, with_p99))
print("median  no dashboard  %10.1f rps  p99 %7d us  (p99 spread over its rounds %d us)" % (without_rate, without_p99, spread))
rate_ok = abs(with_rate - without_rate) <= without_rate * rate_percent / 100
p99_ok = abs(with_p99 - without_p99) <= spread
print("rate within %g%%: %s; p99 within the spread: %s" % (rate_percent, "yes" if rate_ok else "NO", "yes" if p99_ok else "NO"))
sys.exit(0 if rate_ok and p99_ok else 1)
