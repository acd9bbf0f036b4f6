/// The `--dashboard` page, whole: HTML, inline CSS and the script (``DashboardScript``) that draws
/// SVG charts from the event stream. Nothing is fetched from elsewhere, so it works with no network.
enum DashboardPage {
    /// The page `GET /` answers.
    static let html = head + "<script>\n" + DashboardScript.axes + DashboardScript.charts + DashboardScript.sources + DashboardScript.main
        + "</script>\n</body>\n</html>\n"

    private static let head = #"""
    <!DOCTYPE html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <link rel="icon" href="data:,">
    <title>pushbench dashboard</title>
    <style>
    body { font: 14px/1.4 "DejaVu Sans", system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
    header { padding: 10px 16px; background: #fff; border-bottom: 1px solid #ddd; position: sticky; top: 0; z-index: 1; }
    header h1 { font-size: 18px; margin: 0 0 4px 0; font-weight: 600; }
    #status { font-variant-numeric: tabular-nums; color: #444; }
    #status b { color: #222; }
    .phase { display: inline-block; padding: 0 6px; border-radius: 3px; background: #e8eef7; margin-right: 6px; }
    .phase.warmup { background: #fff1cc; } .phase.done { background: #dcf2dc; } .phase.lost { background: #f8d7d7; }
    main { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 12px; padding: 12px 16px; }
    section { background: #fff; border: 1px solid #ddd; border-radius: 4px; padding: 8px 10px; }
    section h2 { font-size: 14px; margin: 0 0 4px 0; font-weight: 600; }
    section p.note { margin: 0 0 4px 0; color: #666; font-size: 12px; }
    svg { width: 100%; height: auto; display: block; }
    svg text { font: 11px "DejaVu Sans", sans-serif; fill: #444; }
    .legend span { margin-right: 12px; font-size: 12px; white-space: nowrap; }
    .legend i { display: inline-block; width: 14px; height: 3px; vertical-align: middle; margin-right: 4px; }
    table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
    td, th { padding: 2px 10px 2px 0; text-align: left; }
    td.n { text-align: right; }
    #final { display: none; grid-column: 1 / -1; border-color: #7a7; }
    .empty { color: #888; font-style: italic; padding: 40px 0; text-align: center; }
    .gw, .pl { display: none; } body.gateway .gw, body.pipeline .pl { display: block; } body.gateway .rn { display: none; }
    #gw-behaviours { font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }
    </style>
    </head>
    <body data-last-second="" data-done="">
    <header>
    <h1 id="title">pushbench dashboard</h1>
    <div id="status">connecting…</div>
    </header>
    <main>
    <section id="final"><h2 id="final-title">Final figures (summary.json)</h2><div id="final-body"></div></section>
    <section class="rn"><h2>Last measured second</h2><div id="last"><p class="empty">waiting for the first measured second</p></div></section>
    <section class="rn"><h2>Requests per second</h2><p class="note">target (what the schedule asked), sent, completed (answered), ok (2xx)</p><div id="chart-rate"></div></section>
    <section class="rn"><h2>Corrected latency per second</h2><p class="note">from each request's intended send time; a log axis when they span decades</p><div id="chart-latency"></div></section>
    <section class="rn"><h2>Latency by percentile, every second so far</h2><p class="note">exact: the seconds' histograms merged</p><div id="chart-curve"></div></section>
    <section class="rn"><h2>Errors per second</h2><p class="note">error answers (by reason where the source knows it) and transport errors</p><div id="chart-errors"></div></section>
    <section class="rn"><h2>In flight and connections</h2><p class="note">at the end of each second; the peer's stream limit when it sent one</p><div id="chart-flight"></div></section>
    <section class="rn"><h2>Sender busy and host steal</h2><p class="note">busy: share of the second the sending threads worked; steal: CPU time the hypervisor took, ms per second</p><div id="chart-host"></div></section>
    <section class="pl"><h2>Front door and egress per second</h2><p class="note">answers of the service's front door, and pushes that reached the egress (APNs and FCM)</p><div id="chart-pl-rates"></div></section>
    <section class="pl"><h2>End-to-end latency per second</h2><p class="note">from each request's intended send time to its push's arrival at the egress</p><div id="chart-pl-latency"></div></section>
    <section class="pl"><h2>Backlog, lost and duplicated</h2><p class="note">pushes expected and not yet arrived at each second's end; lost and duplicated so far</p><div id="chart-pl-backlog"></div></section>
    <section class="gw"><h2>Behaviours in force</h2><p id="gw-behaviours"></p></section>
    <section class="gw"><h2>Requests per second by route</h2><p class="note">every request the gateway received, and those of the FCM route and over HTTP/1.1</p><div id="chart-gw-routes"></div></section>
    <section class="gw"><h2>Answers per second by status</h2><div id="chart-gw-status"></div></section>
    <section class="gw"><h2>Error answers per second by reason</h2><div id="chart-gw-reasons"></div></section>
    <section class="gw"><h2>Connections and streams</h2><p class="note">open at the end of each second, and connections opened in it</p><div id="chart-gw-conns"></div></section>
    <section class="gw"><h2>Limits fired, GOAWAYs, drops, so far</h2><div id="gw-limits"></div></section>
    </main>

    """#
}
