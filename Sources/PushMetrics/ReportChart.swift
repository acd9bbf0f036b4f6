import Foundation

/// The title block of a report: run id plus a one-line configuration summary.
public struct ReportTitle: Sendable {
    /// First line (run id).
    public var title: String
    /// Second line (configuration and headline figures).
    public var subtitle: String

    /// Builds the title of a run's report.
    public init(runID: String, record r: RunRecord) {
        title = "pushbench \(runID)" + (r.interrupted ? "  (interrupted)" : "")
        let c = r.config
        var parts = [c.protocolName, c.target]
        parts.append(c.rps.map { "target \(ReportChart.grouped(Double($0))) rps" } ?? "closed loop (rps max)")
        parts.append("achieved \(ReportChart.grouped(r.achievedRPS)) rps")
        parts.append("\(c.connections) conn × \(c.streams) streams")
        parts.append("\(c.threads) thread\(c.threads == 1 ? "" : "s")")
        parts.append("encoder \(c.encoder)")
        parts.append(String(format: "%.1f s", r.measuredSeconds))
        subtitle = parts.joined(separator: " · ")
    }
}

/// SVG (and HTML) charts that need no browser or JavaScript: a run's latency-by-percentile and
/// timeline charts, and the trend of history.csv.
public enum ReportChart {
    static let width = 1000.0
    static let colors = (latency: "#1f5fbf", service: "#e07b00", sent: "#7a7a7a", errors: "#c62828", p50: "#2e7d32", p99: "#6a1b9a", p999: "#c62828", steal: "#f0a030")

    // MARK: Run report

    /// report.svg of a run: (a) latency by percentile on the 1/(1-p) log axis, corrected latency and
    /// service time; (b) completed/sent per second and errors; (c) p50 and p99 per second.
    public static func runSVG(record r: RunRecord, intervals: [TimelineInterval], title: ReportTitle) -> String {
        var svg = SVG(width: width, height: 1040)
        svg.text(24, 34, title.title, size: 20, weight: "bold")
        svg.text(24, 58, title.subtitle, size: 13, color: "#444")
        let l = r.latency, s = r.serviceTime
        let errs = r.counts.failed + r.counts.transportErrors
        let headline = "corrected latency p50 \(ms(l.valueAtPercentile(50))) · p99 \(ms(l.valueAtPercentile(99))) · p99.9 \(ms(l.valueAtPercentile(99.9))) · max \(ms(l.max))"
            + "   |   completed \(grouped(Double(r.counts.completed))) of \(grouped(Double(r.counts.sent))) sent, \(grouped(Double(errs))) errors"
        svg.text(24, 80, headline, size: 13, color: "#222")

        percentileChart(&svg, x: 90, y: 110, w: width - 130, h: 380, latency: l, service: s)
        timelineCharts(&svg, x: 90, y: 560, w: width - 130, intervals: intervals, measuredSeconds: r.measuredSeconds)
        return svg.finish()
    }

    static func percentileChart(_ svg: inout SVG, x: Double, y: Double, w: Double, h: Double, latency: HdrHistogram, service: HdrHistogram) {
        svg.text(x, y - 8, "Latency by percentile", size: 15, weight: "bold")
        let curves = [(latency, colors.latency, "corrected latency (from intended send)"),
                      (service, colors.service, "service time (from actual send)")]
        // x = log10(1/(1-p)); the 100% tick has no finite position, so the axis ends at the
        // decade that the sample count can resolve.
        let n = Swift.max(latency.totalCount, service.totalCount)
        let decades = Swift.max(2, Swift.min(6, Int(ceil(log10(Double(Swift.max(n, 1)))))))
        let xmax = Double(decades)
        let ymaxRaw = Double(Swift.max(latency.max, service.max)) / 1000
        // A tail far above the body (max > 50 × p50) would flatten the body into the x axis on a
        // linear scale, so such runs get a log latency axis (said in the axis title).
        let bodies = [latency, service].filter { $0.totalCount > 0 }.map { Double($0.valueAtPercentile(50)) / 1000 }
        let body = bodies.min() ?? 0
        let logY = body > 0 && ymaxRaw > 50 * body
        let yt: [Double]
        let py: (Double) -> Double
        if logY {
            // 1-2-5 ticks from the one at or below the smallest value to the one at or above the max.
            let smallest = Swift.max(Double([latency, service].filter { $0.totalCount > 0 }.map(\.min).min() ?? 1) / 1000, 0.001)
            var ticks: [Double] = []
            var decade = pow(10, floor(log10(smallest)))
            outer: while true {
                for m in [1.0, 2, 5] {
                    let t = decade * m
                    if t * 2.5 <= smallest && m < 5 { continue }
                    ticks.append(t)
                    if t >= ymaxRaw { break outer }
                }
                decade *= 10
            }
            if let i = ticks.lastIndex(where: { $0 <= smallest }) { ticks.removeFirst(i) }
            yt = ticks
            let lo = ticks.first!, hi = ticks.last!
            let l0 = log10(lo), l1 = log10(hi)
            py = { v in y + h - h * (log10(Swift.max(v, lo)) - l0) / (l1 - l0) }
        } else {
            yt = niceTicks(0, Swift.max(ymaxRaw, 0.001), 6)
            let ymax = yt.last ?? 1
            py = { v in y + h - h * v / ymax }
        }
        func px(_ lx: Double) -> Double { x + w * Swift.min(lx, xmax) / xmax }
        svg.rect(x, y, w, h, fill: "#fafafa", stroke: "#999")
        for (t, label) in zip(yt, logY ? yt.map { $0 >= 1 ? String(format: "%.0f", $0) : String(format: "%g", $0) } : axisLabels(yt)) {
            svg.line(x, py(t), x + w, py(t), stroke: "#ddd")
            svg.text(x - 8, py(t) + 4, label, size: 12, anchor: "end")
        }
        let pctLabels = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"]
        for d in 0...decades {
            let xx = px(Double(d))
            svg.line(xx, y, xx, y + h, stroke: "#ddd")
            svg.text(xx, y + h + 18, pctLabels[d], size: 12, anchor: "middle")
        }
        svg.text(x + w / 2, y + h + 40, "percentile (log scale of 1/(1−p))", size: 13, anchor: "middle")
        svg.text(x - 62, y + h / 2, logY ? "latency (ms, log scale)" : "latency (ms)", size: 13, anchor: "middle", rotate: -90)
        for (hist, color, _) in curves where hist.totalCount > 0 {
            percentileCurve(&svg, hist, color: color, xmax: xmax, px: px, py: py)
        }
        legend(&svg, right: x + w, y: y - 8, items: curves.map { ($0.1, $0.0.totalCount == 0 ? $0.2 + ": no data" : $0.2, false) } + [("#555", "max", true)])
    }

    static func timelineCharts(_ svg: inout SVG, x: Double, y: Double, w: Double, intervals: [TimelineInterval], measuredSeconds: Double) {
        svg.text(x, y - 8, "Per second: throughput and errors", size: 15, weight: "bold")
        let h1 = 180.0, h2 = 180.0, gap = 70.0
        let seconds = intervals.map(\.second)
        let x0 = Double(seconds.min() ?? 0), x1 = Double(Swift.max((seconds.max() ?? 0) + 1, Int(x0) + 1))
        let xt = niceTicks(x0, x1, 10, minStep: 1)
        func px(_ s: Double) -> Double { x + w * (s - x0) / (x1 - x0) }

        // Throughput panel. A trailing partial second (the measured phase rarely ends on a whole
        // second) would plot as a fake collapse of the rate, so only whole seconds are drawn.
        let wholeSeconds = measuredSeconds > 0 ? Int((measuredSeconds + 1e-6).rounded(.down)) : Int.max
        let full = intervals.filter { $0.second < wholeSeconds }
        let rates = full.flatMap { [Double($0.completed), Double($0.sent)] }
        let yt = niceTicks(0, Swift.max(rates.max() ?? 1, 1), 5)
        let ymax = yt.last ?? 1
        func py(_ v: Double) -> Double { y + h1 - h1 * v / ymax }
        svg.rect(x, y, w, h1, fill: "#fafafa", stroke: "#999")
        for t in yt {
            svg.line(x, py(t), x + w, py(t), stroke: "#ddd")
            svg.text(x - 8, py(t) + 4, grouped(t), size: 12, anchor: "end")
        }
        for t in xt where t >= x0 && t <= x1 { svg.line(px(t), y, px(t), y + h1, stroke: "#eee") }
        let barW = Swift.max(1, w / (x1 - x0) * 0.8)
        for i in full where i.failed + i.transportErrors > 0 {
            let e = Double(i.failed + i.transportErrors)
            svg.rect(px(Double(i.second) + 0.1), py(e), barW, y + h1 - py(e), fill: colors.errors, stroke: nil, opacity: 0.6)
        }
        let mid = { (i: TimelineInterval) in px(Double(i.second) + 0.5) }
        svg.polyline(full.map { (mid($0), py(Double($0.sent))) }, stroke: colors.sent, width: 1.5, dash: "5,4")
        svg.polyline(full.map { (mid($0), py(Double($0.completed))) }, stroke: colors.latency, width: 2.2)
        if full.count < intervals.count && measuredSeconds > 0 {
            let tail = measuredSeconds - Double(wholeSeconds)
            svg.text(x + w - 8, y + h1 - 8, String(format: "last partial second (%.3f s measured) and drain not drawn as a rate; see timeline.csv", Swift.max(tail, 0)),
                     size: 11, anchor: "end", color: "#666")
        }
        svg.text(x - 72, y + h1 / 2, "requests / s", size: 13, anchor: "middle", rotate: -90)
        legend(&svg, right: x + w, y: y - 8, items: [(colors.latency, "completed / s", false), (colors.sent, "sent / s", false),
                                                     (colors.errors, "errors / s (non-2xx + transport)", false)])

        // Latency panel.
        let y2 = y + h1 + gap
        svg.text(x, y2 - 8, "Per second: corrected latency p50 and p99", size: 15, weight: "bold")
        let decoded = intervals.map { $0.latency.decode() }
        let p50 = decoded.map { Double($0.valueAtPercentile(50)) / 1000 }
        let p99 = decoded.map { Double($0.valueAtPercentile(99)) / 1000 }
        let lt = niceTicks(0, Swift.max(p99.max() ?? 0.001, 0.001), 5)
        let lmax = lt.last ?? 1
        func ly(_ v: Double) -> Double { y2 + h2 - h2 * v / lmax }
        svg.rect(x, y2, w, h2, fill: "#fafafa", stroke: "#999")
        for (t, label) in zip(lt, axisLabels(lt)) {
            svg.line(x, ly(t), x + w, ly(t), stroke: "#ddd")
            svg.text(x - 8, ly(t) + 4, label, size: 12, anchor: "end")
        }
        for t in xt where t >= x0 && t <= x1 {
            svg.line(px(t), y2, px(t), y2 + h2, stroke: "#eee")
            svg.text(px(t), y2 + h2 + 18, fmt(t), size: 12, anchor: "middle")
        }
        // Seconds in which the host stole CPU time, shaded behind the lines (darkest from 100 ms): on a
        // shared machine they are where a p99 spike comes from.
        for i in intervals {
            guard let steal = i.stealMs, steal > 0 else { continue }
            let left = px(Double(i.second)), right = Swift.min(px(Double(i.second) + 1), x + w)
            svg.rect(left, y2, right - left, h2, fill: colors.steal, stroke: nil, opacity: 0.1 + 0.35 * Swift.min(1, Double(steal) / 100))
        }
        let withData = intervals.indices.filter { decoded[$0].totalCount > 0 }
        svg.polyline(withData.map { (mid(intervals[$0]), ly(p99[$0])) }, stroke: colors.p99, width: 2)
        svg.polyline(withData.map { (mid(intervals[$0]), ly(p50[$0])) }, stroke: colors.p50, width: 2)
        svg.text(x - 62, y2 + h2 / 2, "latency (ms)", size: 13, anchor: "middle", rotate: -90)
        svg.text(x + w / 2, y2 + h2 + 40, "time since start of measurement (s)", size: 13, anchor: "middle")
        var items = [(colors.p99, "p99", false), (colors.p50, "p50", false)]
        if intervals.contains(where: { $0.stealMs != nil }) { items.append((colors.steal, "host steal in that second (shade)", false)) }
        legend(&svg, right: x + w, y: y2 - 8, items: items)
        if intervals.isEmpty {
            svg.text(x + w / 2, y + h1 / 2, "no per-second data", size: 14, anchor: "middle", color: "#888")
        }
    }

    /// report.html: the SVG inline plus the summary tables.
    public static func runHTML(record r: RunRecord, intervals: [TimelineInterval], title: ReportTitle, summary: JSONValue) -> String {
        var h = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>\(esc(title.title))</title>\n"
        h += "<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:12px 0}"
        h += "td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}th{background:#f0f0f0}td:first-child{text-align:left}</style>\n"
        h += "</head><body>\n<h1>\(esc(title.title))</h1>\n<p>\(esc(title.subtitle))</p>\n"
        h += runSVG(record: r, intervals: intervals, title: title)
        h += "\n<h2>Latency (ms)</h2>\n<table><tr><th></th><th>min</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th><th>mean</th><th>count</th></tr>\n"
        for (name, hist) in [("corrected latency", r.latency), ("service time", r.serviceTime)] {
            h += "<tr><td>\(name)</td>"
            for v in [hist.min, hist.valueAtPercentile(50), hist.valueAtPercentile(90), hist.valueAtPercentile(99),
                      hist.valueAtPercentile(99.9), hist.valueAtPercentile(99.99), hist.max] {
                h += "<td>\(ms(v))</td>"
            }
            h += "<td>\(String(format: "%.3f", hist.mean / 1000))</td><td>\(hist.totalCount)</td></tr>\n"
        }
        h += "</table>\n<h2>Requests</h2>\n<table>"
        let c = r.counts
        for (k, v) in [("sent", c.sent), ("completed", c.completed), ("succeeded", c.succeeded), ("failed", c.failed),
                       ("transport errors", c.transportErrors), ("unfinished", c.unfinished)] {
            h += "<tr><td>\(k)</td><td>\(v)</td></tr>"
        }
        for (k, v) in c.byStatus.sorted(by: { $0.key < $1.key }) { h += "<tr><td>status \(esc(k))</td><td>\(v)</td></tr>" }
        for (k, v) in c.byReason.sorted(by: { $0.key < $1.key }) { h += "<tr><td>reason \(esc(k))</td><td>\(v)</td></tr>" }
        h += "</table>\n<h2>summary.json</h2>\n<pre>"
        var shown = summary
        shown.set("histograms", .string("(compressed histograms omitted)"))
        h += esc(shown.render())
        h += "</pre>\n</body></html>\n"
        return h
    }

    // MARK: History

    /// One row of history.csv.
    public struct HistoryRow: Sendable, Equatable {
        /// Run id (`YYYYMMDD-HHMMSS-<label>`).
        public var runID: String
        /// The run's label.
        public var label: String
        /// Encoder variant.
        public var encoder: String
        /// Target rate, or `max`.
        public var targetRPS: String
        /// Completed requests per measured second.
        public var achievedRPS: Double
        /// Corrected latency percentiles in µs.
        public var p50: Double, p99: Double, p999: Double
        /// Non-2xx responses plus transport errors.
        public var errors: Int64
        /// User plus system CPU seconds.
        public var cpuSeconds: Double
    }

    /// Parses history.csv; errors name the line.
    public static func parseHistory(_ text: String, file: String = "history.csv") throws -> [HistoryRow] {
        var rows: [HistoryRow] = []
        let lines = text.split(whereSeparator: \.isNewline).map(String.init)
        guard let header = lines.first, header.hasPrefix("run_id,") else {
            throw ResultsError("\(file): missing header \"\(ResultsWriter.historyHeader)\"")
        }
        for (n, line) in lines.dropFirst().enumerated() where !line.isEmpty {
            let f = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 10, let a = Double(f[4]), let p50 = Double(f[5]), let p99 = Double(f[6]),
                  let p999 = Double(f[7]), let e = Int64(f[8]), let cpu = Double(f[9]) else {
                throw ResultsError("\(file): line \(n + 2): expected 10 fields (\(ResultsWriter.historyHeader))")
            }
            rows.append(HistoryRow(runID: f[0], label: f[1], encoder: f[2], targetRPS: f[3], achievedRPS: a,
                                   p50: p50, p99: p99, p999: p999, errors: e, cpuSeconds: cpu))
        }
        return rows
    }

    /// The trend of history.csv: achieved rps (top) and p50/p99/p99.9 (bottom), one point per run.
    public static func historySVG(_ rows: [HistoryRow], title: String = "pushbench history") -> String {
        var svg = SVG(width: width, height: 760)
        svg.text(24, 34, title, size: 20, weight: "bold")
        svg.text(24, 58, "\(rows.count) run\(rows.count == 1 ? "" : "s")" + (rows.last.map { ", latest \($0.runID)" } ?? ""), size: 13, color: "#444")
        let x = 100.0, w = width - 140
        let n = Swift.max(rows.count, 1)
        func px(_ i: Int) -> Double { n == 1 ? x + w / 2 : x + w * Double(i) / Double(n - 1) }

        let y = 100.0, h = 220.0
        svg.text(x, y - 8, "Achieved throughput per run", size: 15, weight: "bold")
        let rt = niceTicks(0, Swift.max(rows.map(\.achievedRPS).max() ?? 1, 1), 5)
        let rmax = rt.last ?? 1
        svg.rect(x, y, w, h, fill: "#fafafa", stroke: "#999")
        for t in rt {
            let yy = y + h - h * t / rmax
            svg.line(x, yy, x + w, yy, stroke: "#ddd")
            svg.text(x - 8, yy + 4, grouped(t), size: 12, anchor: "end")
        }
        let rpts = rows.indices.map { (px($0), y + h - h * rows[$0].achievedRPS / rmax) }
        svg.polyline(rpts, stroke: colors.latency, width: 2)
        for p in rpts { svg.circle(p.0, p.1, 3, fill: colors.latency) }
        svg.text(x - 80, y + h / 2, "requests / s", size: 13, anchor: "middle", rotate: -90)

        let y2 = y + h + 80
        svg.text(x, y2 - 8, "Corrected latency per run", size: 15, weight: "bold")
        let lt = niceTicks(0, Swift.max((rows.map(\.p999).max() ?? 1) / 1000, 0.001), 5)
        let lmax = lt.last ?? 1
        svg.rect(x, y2, w, h, fill: "#fafafa", stroke: "#999")
        for (t, label) in zip(lt, axisLabels(lt)) {
            let yy = y2 + h - h * t / lmax
            svg.line(x, yy, x + w, yy, stroke: "#ddd")
            svg.text(x - 8, yy + 4, label, size: 12, anchor: "end")
        }
        for (kp, color) in [(\HistoryRow.p999, colors.p999), (\HistoryRow.p99, colors.p99), (\HistoryRow.p50, colors.p50)] {
            let pts = rows.indices.map { (px($0), y2 + h - h * rows[$0][keyPath: kp] / 1000 / lmax) }
            svg.polyline(pts, stroke: color, width: 2)
            for p in pts { svg.circle(p.0, p.1, 3, fill: color) }
        }
        svg.text(x - 62, y2 + h / 2, "latency (ms)", size: 13, anchor: "middle", rotate: -90)
        legend(&svg, right: x + w, y: y2 - 8, items: [(colors.p999, "p99.9", false), (colors.p99, "p99", false), (colors.p50, "p50", false)])
        // Run labels under the axis, thinned so they never overlap.
        let step = Swift.max(1, Int(ceil(Double(rows.count) / 12)))
        for i in stride(from: 0, to: rows.count, by: step) {
            svg.text(px(i), y2 + h + 16, String(rows[i].runID.prefix(15)), size: 10, anchor: "end", rotate: -30, pivot: (px(i), y2 + h + 16))
        }
        if rows.isEmpty { svg.text(x + w / 2, y + h / 2, "history.csv has no runs yet", size: 14, anchor: "middle", color: "#888") }
        return svg.finish()
    }

    // MARK: Helpers

    /// A one-row legend, right-aligned so it ends at `right`, on the panel's title line (outside the data).
    /// One latency-by-percentile curve in ms: steps through `hist`'s percentile ticks up to `xmax`
    /// decades of 1/(1-p), then on to the right edge at the max, which is where the distribution ends
    /// (marked with a dot).
    static func percentileCurve(_ svg: inout SVG, _ hist: HdrHistogram, color: String, xmax: Double,
                                px: (Double) -> Double, py: (Double) -> Double) {
        var pts: [(Double, Double)] = []
        var prevY: Double?
        for t in hist.percentileTicks(ticksPerHalfDistance: 5) where t.percentile < 100 {
            let lx = log10(1 / (1 - t.percentile / 100))
            if lx > xmax { break }
            let v = Double(t.value) / 1000
            if let p = prevY, p != v { pts.append((px(lx), py(p))) }
            pts.append((px(lx), py(v)))
            prevY = v
        }
        let maxV = Double(hist.max) / 1000
        if let p = prevY { pts.append((px(xmax), py(p))) }
        pts.append((px(xmax), py(maxV)))
        svg.polyline(pts, stroke: color, width: 2.2)
        svg.circle(px(xmax), py(maxV), 3.5, fill: color)
    }

    static func legend(_ svg: inout SVG, right: Double, y: Double, items: [(String, String, Bool)]) {
        let widths = items.map { 34 + Double($0.1.count) * 6.6 + 14 }
        var x = right - widths.reduce(0, +)
        for (it, w) in zip(items, widths) {
            if it.2 {
                svg.circle(x + 12, y - 4, 3.5, fill: it.0)
            } else {
                svg.line(x, y - 4, x + 24, y - 4, stroke: it.0, width: 3)
            }
            svg.text(x + 30, y, it.1, size: 12)
            x += w
        }
    }

    /// Tick labels with the same number of decimals on one axis.
    static func axisLabels(_ ticks: [Double]) -> [String] {
        guard ticks.count > 1 else { return ticks.map { fmt($0) } }
        let step = ticks[1] - ticks[0]
        let decimals = step >= 1 ? 0 : Swift.min(6, Int(ceil(-log10(step) - 1e-9)) + (abs(step * pow(10, ceil(-log10(step) - 1e-9)) - 2.5) < 1e-6 ? 1 : 0))
        return ticks.map { String(format: "%.\(decimals)f", $0) }
    }

    /// Evenly spaced "nice" ticks (1, 2, 5 × 10^k) covering lo…hi.
    static func niceTicks(_ lo: Double, _ hi: Double, _ count: Int, minStep: Double = 0) -> [Double] {
        let span = Swift.max(hi - lo, 1e-9)
        let raw = span / Double(Swift.max(count, 1))
        let mag = pow(10, floor(log10(raw)))
        let step = Swift.max(minStep, [1.0, 2, 2.5, 5, 10].map { $0 * mag }.first { $0 >= raw } ?? 10 * mag)
        let first = floor(lo / step) * step
        var ticks: [Double] = []
        var t = first
        while t < hi + step * 0.999 && ticks.count < 50 {
            ticks.append(t)
            t += step
        }
        return ticks
    }

    static func fmt(_ v: Double) -> String {
        if v == v.rounded() { return String(format: "%.0f", v) }
        if abs(v) >= 10 { return String(format: "%.1f", v) }
        if abs(v) >= 1 { return String(format: "%.2f", v) }
        return String(format: "%.3f", v)
    }

    static func ms(_ us: Int64) -> String {
        let v = Double(us) / 1000
        return (v >= 100 ? String(format: "%.1f", v) : v >= 10 ? String(format: "%.2f", v) : String(format: "%.3f", v)) + " ms"
    }

    static func grouped(_ v: Double) -> String {
        let r = Int64(v.rounded())
        let s = String(abs(r))
        var out = ""
        for (i, ch) in s.enumerated() {
            if i > 0 && (s.count - i) % 3 == 0 { out.append(",") }
            out.append(ch)
        }
        return (r < 0 ? "-" : "") + out
    }

    static func esc(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

/// A minimal SVG builder.
struct SVG {
    var body = ""
    let width: Double, height: Double

    init(width: Double, height: Double) {
        self.width = width
        self.height = height
        body = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(n(width))\" height=\"\(n(height))\" viewBox=\"0 0 \(n(width)) \(n(height))\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
        body += "<rect x=\"0\" y=\"0\" width=\"\(n(width))\" height=\"\(n(height))\" fill=\"#ffffff\"/>\n"
    }

    func n(_ v: Double) -> String { String(format: "%.1f", v) }

    mutating func text(_ x: Double, _ y: Double, _ s: String, size: Double, anchor: String = "start", weight: String = "normal",
                       color: String = "#222", rotate: Double = 0, pivot: (Double, Double)? = nil) {
        var t = "<text x=\"\(n(x))\" y=\"\(n(y))\" font-size=\"\(n(size))\" text-anchor=\"\(anchor)\" fill=\"\(color)\""
        if weight != "normal" { t += " font-weight=\"\(weight)\"" }
        if rotate != 0 {
            let p = pivot ?? (x, y)
            t += " transform=\"rotate(\(n(rotate)) \(n(p.0)) \(n(p.1)))\""
        }
        body += t + ">\(ReportChart.esc(s))</text>\n"
    }

    mutating func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String, width: Double = 1) {
        body += "<line x1=\"\(n(x1))\" y1=\"\(n(y1))\" x2=\"\(n(x2))\" y2=\"\(n(y2))\" stroke=\"\(stroke)\" stroke-width=\"\(n(width))\"/>\n"
    }

    mutating func rect(_ x: Double, _ y: Double, _ w: Double, _ h: Double, fill: String, stroke: String?, opacity: Double = 1) {
        body += "<rect x=\"\(n(x))\" y=\"\(n(y))\" width=\"\(n(Swift.max(w, 0)))\" height=\"\(n(Swift.max(h, 0)))\" fill=\"\(fill)\""
        if let stroke { body += " stroke=\"\(stroke)\"" }
        if opacity < 1 { body += " fill-opacity=\"\(n(opacity))\"" }
        body += "/>\n"
    }

    mutating func circle(_ x: Double, _ y: Double, _ r: Double, fill: String) {
        body += "<circle cx=\"\(n(x))\" cy=\"\(n(y))\" r=\"\(n(r))\" fill=\"\(fill)\"/>\n"
    }

    mutating func polyline(_ pts: [(Double, Double)], stroke: String, width: Double, dash: String? = nil) {
        guard !pts.isEmpty else { return }
        body += "<polyline fill=\"none\" stroke=\"\(stroke)\" stroke-width=\"\(n(width))\" stroke-linejoin=\"round\""
        if let dash { body += " stroke-dasharray=\"\(dash)\"" }
        body += " points=\"" + pts.map { "\(n($0.0)),\(n($0.1))" }.joined(separator: " ") + "\"/>\n"
    }

    mutating func finish() -> String { body + "</svg>\n" }
}

/// `pushbench report` without the command line.
public enum RunReport {
    /// Redraws report.svg and report.html of the run folder at `path`; returns the files written.
    public static func redraw(_ path: String) throws -> [URL] {
        let run = try LoadedRun.load(path, requireIntervals: true)
        guard let folder = run.folder else { throw ResultsError("\(path): not a run folder") }
        let title = ReportTitle(runID: run.runID, record: run.record)
        let svg = folder.appendingPathComponent(ResultsWriter.File.svg)
        let html = folder.appendingPathComponent(ResultsWriter.File.html)
        try ResultsWriter.save(ReportChart.runSVG(record: run.record, intervals: run.record.intervals, title: title), svg)
        try ResultsWriter.save(ReportChart.runHTML(record: run.record, intervals: run.record.intervals, title: title, summary: run.summary), html)
        return [svg, html]
    }

    /// Draws `<root>/history.csv` as `<root>/history.svg`; returns the file written.
    public static func drawHistory(root: URL) throws -> URL {
        let csv = root.appendingPathComponent("history.csv")
        let rows = try ReportChart.parseHistory(LoadedRun.readText(csv), file: csv.path)
        let out = root.appendingPathComponent("history.svg")
        try ResultsWriter.save(ReportChart.historySVG(rows), out)
        return out
    }
}
