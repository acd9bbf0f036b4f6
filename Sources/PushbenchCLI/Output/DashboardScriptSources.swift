extension DashboardScript {
    /// The parts of the other sources: the gateway's page (`pushbench gateway --dashboard`), from its
    /// `gateway` events, one a second, each the requests and answers of that second and what is open at its
    /// end; and the pipeline's charts beside a run's (`pushbench pipeline --dashboard`), from its `pipeline`
    /// events.
    static let sources = #"""
    function addGateway(g) {
      const list = model.gateway;
      if (list.length && list[list.length - 1].second >= g.second) return;
      list.push(g);
      if (list.length > 3600) list.splice(0, list.length - 3600);
    }
    function keysOf(list, member) { return [...new Set(list.flatMap(g => Object.keys(g[member] || {})))].sort(); }
    function renderGateway() {
      const list = model.gateway;
      const charts = ["chart-gw-routes", "chart-gw-status", "chart-gw-reasons", "chart-gw-conns"];
      if (!list.length) { charts.forEach(id => emptyChart(id, "waiting for the gateway's first second")); return; }
      const last = list[list.length - 1];
      document.body.dataset.lastSecond = String(last.second);
      if (!model.final) {
        document.getElementById("status").innerHTML = `<span class="phase measure" id="phase">serving</span><b>${fmt(last.second + 1)} s</b>`
          + ` · requests <b id="gw-requests-total">${fmt(last.requests_total)}</b> · last second <b id="gw-last-requests">${fmt(last.requests)}</b>/s`
          + ` · connections open <b id="gw-connections">${fmt(last.connections_open)}</b> · streams open <b>${fmt(last.streams_open)}</b>`;
      }
      const x = linearAxis(list[0].second, last.second + 1, 6, true);
      const pts = key => list.map(g => [g.second, g[key]]);
      const top = (...keys) => Math.max(1, ...list.flatMap(g => keys.map(k => g[k] || 0)));
      drawChart("chart-gw-routes", { title: "requests per second by route", yUnit: "requests/s", xUnit: "second", x: x,
        y: linearAxis(0, top("requests", "fcm", "http1"), 5, true, 0.05),
        series: [{ name: "all routes", color: C.sent, points: pts("requests") }, { name: "FCM", color: C.completed, points: pts("fcm") },
                 { name: "HTTP/1.1", color: C.p99, points: pts("http1") }] });
      const byKey = (member, palette) => keysOf(list, member).map((k, i) => ({ name: member === "by_status" ? "status " + k : k,
        color: palette[i % palette.length], points: list.map(g => [g.second, (g[member] || {})[k] || 0]) }));
      const most = member => Math.max(1, ...list.flatMap(g => Object.values(g[member] || {})));
      const statuses = byKey("by_status", [C.completed, C.failed, C.p99, C.sent].concat(REASONS));
      if (statuses.length) drawChart("chart-gw-status", { title: "answers per second by status", yUnit: "answers/s", xUnit: "second", x: x,
        y: linearAxis(0, most("by_status"), 5, true, 0.05), series: statuses });
      else emptyChart("chart-gw-status", "no answer yet");
      const reasons = byKey("by_reason", REASONS);
      if (reasons.length) drawChart("chart-gw-reasons", { title: "error answers per second by reason", yUnit: "answers/s", xUnit: "second", x: x,
        y: linearAxis(0, most("by_reason"), 5, true, 0.05), series: reasons });
      else emptyChart("chart-gw-reasons", "no error answer yet");
      drawChart("chart-gw-conns", { title: "connections and streams", yUnit: "open", xUnit: "second", x: x,
        y: linearAxis(0, top("connections_open", "streams_open", "connections_new"), 5, true, 0.05),
        series: [{ name: "connections open", color: C.conns, points: pts("connections_open") },
                 { name: "streams open", color: C.flight, points: pts("streams_open") },
                 { name: "connections opened", color: C.limit, points: pts("connections_new") }] });
      const sums = {};
      list.forEach(g => {
        ["goaways", "drops", "http1_refused", "delayed"].forEach(k => { sums[k] = (sums[k] || 0) + (g[k] || 0); });
        Object.entries(g.limits || {}).forEach(([k, v]) => { sums["limit " + k] = (sums["limit " + k] || 0) + v; });
      });
      document.getElementById("gw-limits").innerHTML = `<table>` + Object.entries(sums)
        .map(([k, v]) => `<tr><th>${esc(k)}</th><td class="n">${fmt(v)}</td></tr>`).join("") + `</table>`;
    }
    function addPipeline(p) {
      const list = model.pipeline;
      if (list.length && list[list.length - 1].second >= p.second) return;
      list.push(p);
      if (list.length > 3600) list.splice(0, list.length - 3600);
    }
    function renderPipeline(x, common) {
      const list = model.pipeline;
      if (!list.length) { ["chart-pl-rates", "chart-pl-latency", "chart-pl-backlog"].forEach(id => emptyChart(id, "waiting for the pipeline's first second")); return; }
      const pts = key => list.map(p => [p.second, p[key] === undefined ? null : p[key]]);
      const top = (...keys) => Math.max(1, ...list.flatMap(p => keys.map(k => p[k] || 0)));
      drawChart("chart-pl-rates", Object.assign({ title: "front door and egress per second", yUnit: "per second",
        y: linearAxis(0, top("front_door", "egress"), 5, true, 0.05),
        series: [{ name: "front door answers", color: C.sent, points: pts("front_door") }, { name: "pushes at the egress", color: C.completed, points: pts("egress") },
                 { name: "APNs", color: "#9467bd", points: pts("apns") }, { name: "FCM", color: C.p99, points: pts("fcm") }] }, common));
      const ms = key => list.map(p => [p.second, p[key] === undefined ? null : p[key] / 1000]);
      const p50s = list.filter(p => p.p50_us !== undefined).map(p => p.p50_us / 1000).sort((a, b) => a - b);
      if (p50s.length) drawChart("chart-pl-latency", Object.assign({ title: "end-to-end latency per second", yUnit: "ms",
          y: latencyAxis(p50s[0], p50s[Math.floor(p50s.length / 2)], Math.max(...list.map(p => (p.p999_us || 0) / 1000))),
          series: [{ name: "p50", color: C.p50, points: ms("p50_us") }, { name: "p90", color: C.p90, points: ms("p90_us") },
                   { name: "p99", color: C.p99, points: ms("p99_us") }, { name: "p99.9", color: C.p999, points: ms("p999_us") }] }, common));
      else emptyChart("chart-pl-latency", "no push arrived yet");
      drawChart("chart-pl-backlog", Object.assign({ title: "backlog, lost and duplicated", yUnit: "pushes",
        y: linearAxis(0, top("backlog", "lost_so_far", "duplicated_so_far"), 5, true, 0.05),
        series: [{ name: "backlog", color: C.flight, points: pts("backlog") }, { name: "lost so far", color: C.failed, points: pts("lost_so_far") },
                 { name: "duplicated so far", color: C.p99, points: pts("duplicated_so_far") }] }, common));
    }
    function pipelineFinal(p) {
      const e = p.end_to_end_latency_us || {};
      let t = `<h2>Pipeline</h2><table><tr><th>expected</th>${cell("final-pl-expected", fmt(p.expected))}<th>end-to-end p50</th>${cell("final-pl-p50", us(e.p50))}</tr>`;
      t += `<tr><th>delivered</th>${cell("final-pl-delivered", fmt(p.delivered))}<th>p99</th>${cell("final-pl-p99", us(e.p99))}</tr>`;
      t += `<tr><th>lost</th>${cell("final-pl-lost", fmt(p.lost))}<th>p99.9</th>${cell("final-pl-p999", us(e.p999))}</tr>`;
      t += `<tr><th>duplicated</th>${cell("final-pl-duplicated", fmt(p.duplicated))}<th>max</th>${cell("final-pl-max", us(e.max))}</tr></table>`;
      return t;
    }
    function showGatewayFinal(f) {
      document.getElementById("final-title").textContent = "Final figures (the gateway's stats as it stopped)";
      let t = `<table><tr><th>requests</th>${cell("final-requests", fmt(f.requests))}</tr>`;
      t += `<tr><th>connections</th>${cell("final-connections", fmt(f.connections_total))}</tr>`;
      t += `<tr><th>GOAWAYs</th>${cell("final-goaways", fmt(f.goaways))}</tr><tr><th>drops</th>${cell("final-drops", fmt(f.drops))}</tr></table>`;
      t += `<h2>Answers by status, errors by reason</h2><table id="final-reasons">`;
      Object.entries(f.by_status || {}).forEach(([k, v]) => { t += `<tr><th>status ${esc(k)}</th><td class="n" data-status="${esc(k)}">${fmt(v)}</td></tr>`; });
      Object.entries(f.by_reason || {}).forEach(([k, v]) => { t += `<tr><th>${esc(k)}</th><td class="n" data-reason="${esc(k)}">${fmt(v)}</td></tr>`; });
      Object.entries(f.limits || {}).forEach(([k, v]) => { t += `<tr><th>limit ${esc(k)}</th><td class="n">${fmt(v)}</td></tr>`; });
      document.getElementById("final-body").innerHTML = t + `</table>`;
      document.getElementById("status").innerHTML = `<span class="phase done" id="phase">stopped</span> requests <b>${fmt(f.requests)}</b>`;
    }

    """#
}
