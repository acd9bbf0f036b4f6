extension DashboardScript {
    /// The stream's handling: the seconds kept (at most an hour), the status line from `live`, the
    /// charts redrawn at most five times a second, the final figures from `final`.
    static let main = #"""
    const C = { target: "#999", sent: "#1f77b4", completed: "#2ca02c", ok: "#145214", p50: "#2ca02c", p90: "#1f77b4",
                p99: "#ff7f0e", p999: "#d62728", curve: "#6a3d9a", failed: "#d62728", transport: "#8c564b",
                flight: "#1f77b4", conns: "#2ca02c", limit: "#999", steal: "#d62728", busy: "#1f77b4" };
    const REASONS = ["#e377c2", "#bcbd22", "#17becf", "#9467bd", "#ff9896", "#c49c94", "#7f7f7f", "#aec7e8"];
    const model = { seconds: [], gateway: [], pipeline: [], marks: [], live: null, final: null, warmup: 0, kind: "run", label: "", lost: false };
    const most = 3600;
    function fmt(v) { return v === undefined || v === null ? "–" : grouped(String(v)); }
    function us(v) { return v === undefined || v === null ? "–" : grouped(String(v)) + " µs"; }
    function cell(id, text) { return `<td class="n" id="${id}">${esc(text)}</td>`; }
    let queued = false;
    function later() { if (!queued) { queued = true; setTimeout(() => { queued = false; render(); }, 200); } }

    function addSecond(s) {
      const list = model.seconds;
      if (list.length && list[list.length - 1].second >= s.second) {
        const i = list.findIndex(o => o.second >= s.second);
        if (list[i].second === s.second) list[i] = s; else list.splice(i, 0, s);
      } else list.push(s);
      if (list.length > most) list.splice(0, list.length - most);
    }

    function showStatus() {
      const v = model.live, el = document.getElementById("status");
      const phase = model.final ? "done" : model.refused ? "refused" : model.lost ? "lost" : v ? v.phase : "connecting";
      const names = { warmup: "warm-up", measure: "measuring", drain: "draining", done: "done", lost: "stream ended", connecting: "connecting",
                      refused: "refused" };
      let t = `<span class="phase ${phase}" id="phase">${names[phase] || esc(phase)}</span>`;
      if (model.refused) t += ` <b id="refused">this dashboard serves at most ${fmt(model.refused)} viewers at once (--dashboard-viewers)</b>`;
      if (v) {
        t += `<b>${v.elapsed_s.toFixed(0)} s</b> · sent <b>${fmt(v.sent)}</b> · completed <b>${fmt(v.completed)}</b> · errors <b>${fmt(v.errors)}</b>`;
        t += ` · in flight <b>${fmt(v.in_flight)}</b> · backlog <b>${fmt(v.backlog)}</b>`;
        if (v.target_rps !== undefined) t += ` · target <b>${fmt(v.target_rps)}</b>/s`;
        if (v.p50_us !== undefined) t += ` · last second p50 <b>${us(v.p50_us)}</b> p99 <b>${us(v.p99_us)}</b>`;
        if (v.stage) t += ` · <b>${esc(v.stage)}</b>`;
      }
      el.innerHTML = t;
    }

    function showLast() {
      const s = model.seconds[model.seconds.length - 1];
      if (!s) return;
      document.body.dataset.lastSecond = String(s.second);
      let t = `<table><tr><th>second</th>${cell("last-second", String(s.second))}<th>p50</th>${cell("last-p50", us(s.p50_us))}</tr>`;
      t += `<tr><th>target</th>${cell("last-target", fmt(s.target))}<th>p90</th>${cell("last-p90", us(s.p90_us))}</tr>`;
      t += `<tr><th>sent</th>${cell("last-sent", fmt(s.sent))}<th>p99</th>${cell("last-p99", us(s.p99_us))}</tr>`;
      t += `<tr><th>completed</th>${cell("last-completed", fmt(s.completed))}<th>p99.9</th>${cell("last-p999", us(s.p999_us))}</tr>`;
      t += `<tr><th>ok</th>${cell("last-ok", fmt(s.succeeded))}<th>max</th>${cell("last-max", us(s.max_us))}</tr>`;
      t += `<tr><th>errors</th>${cell("last-failed", fmt(s.failed))}<th>transport errors</th>${cell("last-transport", fmt(s.transport_errors))}</tr>`;
      if (s.agents !== undefined) {
        // A second merged from several agents (pushbench dashboard): who is in it, who did not answer.
        const missing = s.missing_agents || [];
        t += `<tr><th>agents</th>${cell("last-agents", `${s.agents} of ${s.agents + missing.length}`)}`;
        t += `<th>missing</th>${cell("last-missing", missing.length ? missing.join(", ") : "none")}</tr>`;
      }
      t += `</table>`;
      document.getElementById("last").innerHTML = t;
    }

    function showFinal() {
      const f = model.final;
      if (!f) return;
      document.getElementById("final").style.display = "block";
      document.body.dataset.done = "1";
      if (model.kind === "gateway") { showGatewayFinal(f); return; }
      if (f.kind === "capacity") {
        document.getElementById("final-title").textContent = "Capacity (capacity.json)";
        const a = f.answer || {};
        document.getElementById("final-body").innerHTML = `<p id="final-line">${esc(a.line || "")}</p>`
          + `<table><tr><th>answer</th>${cell("final-capacity", a.rps === null || a.rps === undefined ? "none" : fmt(a.rps) + " rps")}</tr>`
          + `<tr><th>limited by</th>${cell("final-limit", a.limited_by || "")}</tr></table>`;
        return;
      }
      const lat = f.latency_us || {}, req = f.requests || {}, thr = f.throughput || {};
      let t = `<table><tr><th>p50</th>${cell("final-p50", us(lat.p50))}<th>sent</th>${cell("final-sent", fmt(req.sent))}</tr>`;
      t += `<tr><th>p90</th>${cell("final-p90", us(lat.p90))}<th>ok</th>${cell("final-ok", fmt(req.succeeded))}</tr>`;
      t += `<tr><th>p99</th>${cell("final-p99", us(lat.p99))}<th>errors</th>${cell("final-failed", fmt(req.failed))}</tr>`;
      t += `<tr><th>p99.9</th>${cell("final-p999", us(lat.p999))}<th>transport errors</th>${cell("final-transport", fmt(req.transport_errors))}</tr>`;
      t += `<tr><th>max</th>${cell("final-max", us(lat.max))}<th>achieved rate</th>${cell("final-achieved", fmt(thr.achieved_rps) + " /s")}</tr>`;
      t += `</table>`;
      const reasons = Object.entries(req.by_reason || {}), statuses = Object.entries(req.by_status || {});
      if (reasons.length || statuses.length) {
        t += `<h2>Answers by status, errors by reason</h2><table id="final-reasons">`;
        reasons.forEach(([k, v]) => { t += `<tr><th>${esc(k)}</th><td class="n" data-reason="${esc(k)}">${fmt(v)}</td></tr>`; });
        statuses.forEach(([k, v]) => { t += `<tr><th>status ${esc(k)}</th><td class="n" data-status="${esc(k)}">${fmt(v)}</td></tr>`; });
        t += `</table>`;
      }
      if (f.pipeline) t += pipelineFinal(f.pipeline);
      document.getElementById("final-body").innerHTML = t;
      document.getElementById("final").style.display = "block";
      document.body.dataset.done = "1";
    }

    function render() {
      if (model.kind === "gateway") { renderGateway(); return; }
      const list = model.seconds;
      if (!list.length) {
        const why = model.live && model.live.phase === "warmup" ? "warm-up: no measured second yet" : "waiting for the first measured second";
        ["chart-rate", "chart-latency", "chart-curve", "chart-errors", "chart-flight", "chart-host"].forEach(id => emptyChart(id, why));
        return;
      }
      showLast();
      const first = list[0].second, last = list[list.length - 1].second;
      const lo = model.warmup > 0 && first === 0 ? -model.warmup : first;
      const x = linearAxis(lo, last + 1, 6, true);
      const bands = lo < 0 ? [{ from: lo, to: 0, text: "warm-up" }] : [];
      const marks = [];
      list.forEach((s, i) => {
        if (s.stage && (i === 0 || list[i - 1].stage !== s.stage)) marks.push({ at: s.second, text: s.stage, row: marks.length % 3 });
      });
      model.marks.forEach(m => marks.push({ at: m.second, text: m.text, row: marks.length % 3 }));
      const common = { x: x, xUnit: "measured second", bands: bands, marks: marks };
      if (model.kind === "pipeline") renderPipeline(x, common);
      const pts = key => list.map(s => [s.second, s[key] === undefined ? null : s[key]]);
      const max = (keys) => Math.max(1, ...list.flatMap(s => keys.map(k => s[k] || 0)));

      drawChart("chart-rate", Object.assign({ title: "requests per second", yUnit: "requests/s",
        y: linearAxis(0, max(["target", "sent", "completed", "succeeded"]), 5, true, 0.05),
        series: [{ name: "target", color: C.target, points: pts("target") }, { name: "sent", color: C.sent, points: pts("sent") },
                 { name: "completed", color: C.completed, points: pts("completed") }, { name: "ok", color: C.ok, points: pts("succeeded") }] }, common));

      const ms = key => list.map(s => [s.second, s[key] === undefined ? null : s[key] / 1000]);
      const p50s = list.filter(s => s.p50_us !== undefined).map(s => s.p50_us / 1000).sort((a, b) => a - b);
      const tops = list.filter(s => s.p999_us !== undefined).map(s => s.p999_us / 1000);
      if (p50s.length) {
        drawChart("chart-latency", Object.assign({ title: "corrected latency per second", yUnit: "ms",
          y: latencyAxis(p50s[0], p50s[Math.floor(p50s.length / 2)], Math.max(...tops)),
          series: [{ name: "p50", color: C.p50, points: ms("p50_us") }, { name: "p90", color: C.p90, points: ms("p90_us") },
                   { name: "p99", color: C.p99, points: ms("p99_us") }, { name: "p99.9", color: C.p999, points: ms("p999_us") }] }, common));
      } else emptyChart("chart-latency", "no answer yet");

      const withCurve = list.filter(s => s.curve_us).pop();
      if (withCurve) {
        const curve = withCurve.curve_us.map(([p, v]) => [p, v / 1000]);
        const seen = list.filter(s => s.second <= withCurve.second).reduce((n, s) => n + s.completed, 0);
        const body = curve.find(([p]) => p >= 50)[1];
        drawChart("chart-curve", { title: "latency by percentile", yUnit: "ms", xUnit: "percentile", joinAll: true,
          x: percentileAxis(seen), y: latencyAxis(curve[0][1], body, curve[curve.length - 1][1]),
          series: [{ name: `every second to ${withCurve.second}`, color: C.curve, points: curve }] });
      } else emptyChart("chart-curve", "no answer yet");

      const reasons = [...new Set(list.flatMap(s => Object.keys(s.errors || {})))].sort();
      const errorSeries = [{ name: "error answers", color: C.failed, points: pts("failed") },
                           { name: "transport errors", color: C.transport, points: pts("transport_errors") }]
        .concat(reasons.map((r, i) => ({ name: r, color: REASONS[i % REASONS.length],
                                         points: list.map(s => [s.second, s.errors ? (s.errors[r] || 0) : null]) })));
      drawChart("chart-errors", Object.assign({ title: "errors per second", yUnit: "per second",
        y: linearAxis(0, max(["failed", "transport_errors"]), 5, true, 0.05), series: errorSeries }, common));

      drawChart("chart-flight", Object.assign({ title: "in flight and connections", yUnit: "requests, connections",
        y: linearAxis(0, max(["in_flight", "connections", "peer_stream_limit"]), 5, true, 0.05),
        series: [{ name: "in flight", color: C.flight, points: pts("in_flight") }, { name: "connections", color: C.conns, points: pts("connections") },
                 { name: "peer stream limit", color: C.limit, points: pts("peer_stream_limit") }] }, common));

      const busy = list.map(s => [s.second, s.busy === undefined ? null : Math.round(s.busy * 1000)]);
      drawChart("chart-host", Object.assign({ title: "sender busy and host steal", yUnit: "ms per second",
        y: linearAxis(0, Math.max(10, ...busy.map(p => p[1] || 0), ...list.map(s => s.steal_ms || 0)), 5, true, 0.05),
        series: [{ name: "busy", color: C.busy, points: busy }, { name: "steal", color: C.steal, points: pts("steal_ms") }] }, common));
    }

    function start(state) {
      model.warmup = state.warmup_s || 0;
      model.kind = state.kind || "run";
      model.label = state.label || "";
      document.getElementById("title").textContent = `pushbench ${model.kind}` + (model.label ? `: ${model.label}` : "");
      document.title = `pushbench ${model.kind} ${model.label}`;
      if (model.kind === "pipeline") document.body.classList.add("pipeline");
      if (model.kind === "gateway") {
        document.body.classList.add("gateway");
        document.getElementById("title").textContent = "pushbench gateway";
        document.getElementById("gw-behaviours").textContent = model.label;
      }
      const events = new EventSource("/events");
      events.addEventListener("second", e => { addSecond(JSON.parse(e.data)); later(); });
      events.addEventListener("live", e => { model.live = JSON.parse(e.data); showStatus(); if (!model.seconds.length) later(); });
      events.addEventListener("pipeline", e => { addPipeline(JSON.parse(e.data)); later(); });
      events.addEventListener("gateway", e => { addGateway(JSON.parse(e.data)); later(); });
      events.addEventListener("mark", e => { model.marks.push(JSON.parse(e.data)); later(); });
      events.addEventListener("final", e => {
        model.final = JSON.parse(e.data);
        events.close();
        showStatus(); showFinal(); later();
      });
      // The run is over or the process is gone: stop here rather than retry a closed port.
      // A stream refused past --dashboard-viewers ends here too, and EventSource cannot read the 503's
      // reason: /state says whether the viewers are at their limit.
      events.onerror = () => {
        if (model.final) return;
        events.close(); model.lost = true; showStatus();
        fetch("/state").then(r => r.json()).then(s => {
          if (s.max_viewers !== undefined && s.viewers >= s.max_viewers && !s.done) { model.refused = s.max_viewers; showStatus(); }
        }, () => {});
      };
      render();
    }
    fetch("/state").then(r => r.json()).then(start, () => { model.lost = true; showStatus(); });

    """#
}
