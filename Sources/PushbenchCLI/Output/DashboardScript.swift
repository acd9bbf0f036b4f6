/// The `--dashboard` page's script, in three parts: the axes (the report's rules, ChartAxis.swift:
/// ticks 1, 2 or 5 × 10^k, each labelled with its exact value; 1-2-5 within each decade on a log axis;
/// percentiles in decades of 1/(1 − p)), the SVG charts (a missing second drawn as a gap), and the
/// stream's handling. It shows only figures the stream carries; it decodes nothing.
enum DashboardScript {
    /// Axes, as ChartAxis.swift makes them.
    static let axes = #"""
    "use strict";
    function pow10(m, e) { return e >= 0 ? m * Math.pow(10, e) : m / Math.pow(10, -e); }
    function grouped(text) {
      const neg = text.startsWith("-"), body = neg ? text.slice(1) : text;
      const [whole, frac] = body.split(".");
      let out = "";
      for (let i = 0; i < whole.length; i++) {
        if (i > 0 && (whole.length - i) % 3 === 0) out += ",";
        out += whole[i];
      }
      return (neg ? "-" : "") + out + (frac !== undefined ? "." + frac : "");
    }
    function label(v, decimals) { return grouped(v.toFixed(decimals)); }
    function linearAxis(lo, hi, count, integer, headroom) {
      const top = Math.max(hi * (1 + (headroom || 0)), lo + (integer ? 1 : 1e-9));
      const raw = (top - lo) / Math.max(count, 1);
      let exponent = Math.floor(Math.log10(raw));
      let mantissa = [1, 2, 5, 10].find(m => pow10(m, exponent) >= raw * (1 - 1e-9)) || 10;
      if (mantissa === 10) { mantissa = 1; exponent += 1; }
      if (integer && exponent < 0) { mantissa = 1; exponent = 0; }
      const step = pow10(mantissa, exponent);
      const k0 = Math.floor(lo / step + 1e-9), k1 = Math.max(Math.ceil(top / step - 1e-9), k0 + 1);
      const ticks = [];
      for (let k = k0; k <= k1; k++) ticks.push(pow10(k * mantissa, exponent));
      const a = { scale: "linear", lo: ticks[0], hi: ticks[ticks.length - 1], ticks: ticks,
                  labels: ticks.map(t => label(t, Math.max(0, -exponent))) };
      a.frac = v => (v - a.lo) / (a.hi - a.lo);
      return a;
    }
    function logAxis(lo, hi) {
      lo = Math.max(lo, 1e-6); hi = Math.max(hi, lo * 1.000001);
      const mark = i => { const e = i >= 0 ? Math.floor(i / 3) : -Math.floor((-i + 2) / 3); return [[1, 2, 5][i - 3 * e], e]; };
      const v = i => { const [m, e] = mark(i); return pow10(m, e); };
      let first = 3 * Math.floor(Math.log10(lo));
      while (v(first) > lo * (1 + 1e-9)) first -= 1;
      while (v(first + 1) <= lo * (1 + 1e-9)) first += 1;
      let last = first + 1;
      while (v(last) < hi * (1 - 1e-9)) last += 1;
      let marks = [];
      for (let i = first; i <= last; i++) marks.push(mark(i));
      if (marks.length > 16) {
        const end = marks[marks.length - 1], e1 = end[0] === 1 ? end[1] : end[1] + 1;
        const decades = [];
        for (let e = marks[0][1]; e <= e1; e++) decades.push([1, e]);
        marks = decades;
      }
      const ticks = marks.map(([m, e]) => pow10(m, e));
      const a = { scale: "log", lo: ticks[0], hi: ticks[ticks.length - 1], ticks: ticks,
                  labels: marks.map(([m, e]) => label(pow10(m, e), Math.max(0, -e))) };
      a.frac = x => (Math.log10(Math.max(x, a.lo)) - Math.log10(a.lo)) / (Math.log10(a.hi) - Math.log10(a.lo));
      return a;
    }
    // Latencies in ms: log when the largest is more than 50 times the body (the tail would flatten the body).
    function latencyAxis(smallest, body, largest) {
      largest = Math.max(largest, 0.001);
      if (body > 0 && largest > 50 * body) return logAxis(Math.max(smallest, 0.001), largest);
      return linearAxis(0, largest, 5, false, 0.05);
    }
    function decades(p) { return -Math.log10(1 - p / 100); }
    function percentileAxis(n) {
      const hi = n > 0 ? Math.max(Math.log10(n), Math.log10(2)) : 2;
      const ticks = [0], labels = ["0%"];
      if (hi < 1) { ticks.push(50); labels.push("50%"); }
      for (let d = 1; d <= hi + 1e-9; d++) {
        ticks.push(100 * (1 - pow10(1, -d)));
        labels.push(d === 1 ? "90%" : "99" + (d > 2 ? "." + "9".repeat(d - 2) : "") + "%");
      }
      const a = { scale: "percentile", lo: 0, hi: hi, ticks: ticks, labels: labels };
      a.frac = p => Math.min(decades(Math.min(p, 99.99999999)), hi) / hi;
      return a;
    }

    """#

    /// SVG charts: lines broken where a second is missing, marks on the time axis.
    static let charts = #"""
    const W = 560, H = 230, L = 62, R = 12, T = 10, B = 34;
    function esc(s) { return String(s).replace(/[&<>"]/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c])); }
    function n2(v) { return Math.round(v * 10) / 10; }
    // series: [{name, color, points: [[x, y]], step}] where a point's x is a second; consecutive seconds join.
    function drawChart(id, opts) {
      const el = document.getElementById(id);
      if (!el) return;
      const pw = W - L - R, ph = H - T - B, x = opts.x, y = opts.y;
      const px = v => L + pw * x.frac(v), py = v => T + ph - ph * Math.max(0, Math.min(1, y.frac(v)));
      let s = `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(opts.title)}">`;
      s += `<g class="axis" data-orient="y" data-scale="${y.scale}" data-lo="${y.lo}" data-hi="${y.hi}">`;
      y.ticks.forEach((t, i) => { const yy = n2(py(t)); s += `<line x1="${L}" y1="${yy}" x2="${L + pw}" y2="${yy}" stroke="#ddd"/><text x="${L - 6}" y="${yy + 4}" text-anchor="end">${y.labels[i]}</text>`; });
      s += `</g><g class="axis" data-orient="x" data-scale="${x.scale}" data-lo="${x.lo}" data-hi="${x.hi}">`;
      x.ticks.forEach((t, i) => { const xx = n2(px(t)); s += `<line x1="${xx}" y1="${T}" x2="${xx}" y2="${T + ph}" stroke="#eee"/><text x="${xx}" y="${T + ph + 14}" text-anchor="middle">${x.labels[i]}</text>`; });
      s += `</g>`;
      s += `<text x="12" y="${T + ph / 2}" transform="rotate(-90 12 ${T + ph / 2})" text-anchor="middle">${esc(opts.yUnit)}</text>`;
      s += `<text x="${L + pw}" y="${H - 2}" text-anchor="end">${esc(opts.xUnit)}</text>`;
      (opts.bands || []).forEach(b => {
        const x0 = n2(px(Math.max(b.from, x.lo))), x1 = n2(px(Math.min(b.to, x.hi)));
        if (x1 > x0) s += `<rect x="${x0}" y="${T}" width="${n2(x1 - x0)}" height="${ph}" fill="#fff1cc" opacity="0.6"/><text x="${n2((x0 + x1) / 2)}" y="${T + 12}" text-anchor="middle">${esc(b.text)}</text>`;
      });
      (opts.marks || []).forEach(m => {
        if (m.at < x.lo || m.at > x.hi) return;
        const xx = n2(px(m.at));
        s += `<line class="mark" x1="${xx}" y1="${T}" x2="${xx}" y2="${T + ph}" stroke="#888" stroke-dasharray="3,3"/><text x="${xx + 3}" y="${T + 24 + (m.row || 0) * 12}">${esc(m.text)}</text>`;
      });
      opts.series.forEach(se => {
        let d = "", prev = null;
        se.points.forEach(p => {
          if (p === null || p[1] === null || p[1] === undefined || (y.scale === "log" && p[1] <= 0)) { prev = null; return; }
          const joined = prev !== null && (opts.joinAll || p[0] - prev[0] === 1);
          d += (joined ? "L" : "M") + n2(px(p[0])) + " " + n2(py(p[1])) + " ";
          if (!joined) d += "l0.01 0 ";
          prev = p;
        });
        if (d) s += `<path d="${d}" fill="none" stroke="${se.color}" stroke-width="1.6" stroke-linejoin="round" stroke-linecap="round" data-series="${esc(se.name)}"/>`;
      });
      s += `<rect x="${L}" y="${T}" width="${pw}" height="${ph}" fill="none" stroke="#bbb"/></svg>`;
      s += `<div class="legend">` + opts.series.filter(se => se.points.some(p => p && p[1] !== null && p[1] !== undefined))
        .map(se => `<span><i style="background:${se.color}"></i>${esc(se.name)}</span>`).join("") + `</div>`;
      el.innerHTML = s;
    }
    function emptyChart(id, text) {
      const el = document.getElementById(id);
      if (el) el.innerHTML = `<p class="empty">${esc(text)}</p>`;
    }

    """#
}
