import Foundation
import PushVocabulary

/// The title block of a report: run id plus a one-line configuration summary.
struct ReportTitle: Sendable {
    /// First line (run id).
    var title: String
    /// Second line (configuration and headline figures).
    var subtitle: String

    /// Builds the title of a run's report.
    init(runID: String, record r: RunRecord) {
        title = "pushbench \(runID)" + (r.interrupted ? "  (interrupted)" : "")
        let c = r.config
        var parts = [c.protocolName, c.target]
        if let spec = c.scheduleSpec {
            parts.append("schedule \(spec) (mean \(ReportChart.grouped(Double(c.rps ?? 0))) rps)")
        } else {
            parts.append(c.rps.map { "target \(ReportChart.grouped(Double($0))) rps" } ?? "closed loop (rps max)")
        }
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
enum ReportChart {
    static let width = 1000.0
    static let colors = (latency: "#1f5fbf", service: "#e07b00", sent: "#222222", failed: "#c62828", transport: "#6d4c41",
                         p50: "#2e7d32", p99: "#6a1b9a", p999: "#c62828", steal: "#f0a030", gap: "#d8d8d8",
                  target: "#00897b")

    // MARK: Run report

    /// report.svg of a run: (a) latency by percentile on the 1/(1-p) log axis, corrected latency and
    /// service time; (b) sent and completed per second; (c) errors per second on their own axis;
    /// (d) p50 and p99 per second. `header: false` leaves out the title block (report.html has it).
    static func runSVG(record r: RunRecord, intervals: [TimelineInterval], title: ReportTitle, header: Bool = true) -> String {
        runSVG(record: r, rows: intervals.map(TimelineRow.init), title: title, header: header)
    }

    /// report.svg drawn from the per-second figures the charts need (a run's timeline.csv read back, or
    /// its intervals reduced to them).
    static func runSVG(record r: RunRecord, rows: [TimelineRow], title: ReportTitle, header: Bool = true) -> String {
        var svg = SVG(width: width)
        var y = 12.0
        if header {
            svg.text(24, 34, title.title, size: 20, weight: "bold")
            svg.text(24, 58, title.subtitle, size: 13, color: "#444")
            svg.text(24, 80, headline(r), size: 13, color: "#222")
            y = 92
        }
        let x = 90.0, w = width - 130
        y = ChartParts.percentilePanel(&svg, x: x, top: y, w: w, h: 340, title: "Latency by percentile",
                                       curves: [(r.latency, colors.latency, "corrected latency (from intended send)"),
                                                (r.serviceTime, colors.service, "service time (from actual send)")])
        y = timelinePanels(&svg, x: x, top: y + 8, w: w, rows: rows, time: MeasuredTime(record: r))
        svg.height = y + 12
        return svg.finish()
    }

    /// The figures under the title: percentiles, max and the request counts.
    static func headline(_ r: RunRecord) -> String {
        let l = r.latency
        let errs = r.counts.failed + r.counts.transportErrors
        let latency = l.totalCount == 0 ? "no latency samples"
            : "corrected latency p50 \(ms(l.valueAtPercentile(50))) · p99 \(ms(l.valueAtPercentile(99))) · p99.9 \(ms(l.valueAtPercentile(99.9))) · max \(ms(l.max))"
        return latency + "   |   completed \(grouped(Double(r.counts.completed))) of \(grouped(Double(r.counts.sent))) sent, \(grouped(Double(errs))) errors"
    }

    /// What the per-second panels draw: the seconds measured whole, and what they leave out.
    struct TimelinePlan {
        /// Axis ends in seconds.
        var x0: Double, x1: Double
        /// Each drawn second with its (merged) figures, or nil when nothing was recorded for it.
        var seconds: [(second: Int, interval: TimelineRow?)]
        /// Notes on what is not drawn.
        var notes: [String]
        /// Stretches nobody measured (merged runs that do not overlap).
        var gaps: [MeasuredTime.Span]

        init(intervals: [TimelineRow], time: MeasuredTime) {
            let bySecond = Dictionary(intervals.map { ($0.second, $0) }, uniquingKeysWith: { a, _ in a })
            let first = time.spans.first.map { Int(floor($0.start)) } ?? 0
            let last = time.spans.last.map { Int(ceil($0.end - 1e-6)) } ?? 0
            x0 = Double(Swift.min(first, intervals.map(\.second).min() ?? first))
            x1 = Swift.max(Double(last), x0 + 1)
            seconds = (first..<Swift.max(last, first)).filter(time.coversWholeSecond).map { ($0, bySecond[$0]) }
            gaps = time.gaps
            notes = []
            // A partial second would plot as a fake collapse of the rate, and responses after the
            // measured time (the drain) belong to no measured second: neither is drawn.
            let drawn = Set(seconds.map(\.second))
            var partial: [String] = []
            for span in time.spans where span.end - floor(span.end + 1e-6) > 0.0005 {
                partial.append(String(format: "%.3f s", span.end - floor(span.end + 1e-6)) + " measured in second \(Int(floor(span.end)))")
            }
            let drain = intervals.filter { !drawn.contains($0.second) && !time.touches($0.second) }
            var parts: [String] = []
            if !partial.isEmpty { parts.append("the last partial second (" + partial.joined(separator: ", ") + ")") }
            if !drain.isEmpty {
                let n = drain.reduce(Int64(0)) { $0 + $1.completed }
                parts.append("the drain after the measured time (\(grouped(Double(n))) response\(n == 1 ? "" : "s"))")
            }
            if !parts.isEmpty {
                notes.append("Not drawn per second: " + parts.joined(separator: " and ") + "; timeline.csv has every second.")
            }
            for g in gaps {
                notes.append(String(format: "Nothing measured from %.1f s to %.1f s: the merged runs do not overlap there (shaded).", g.start, g.end))
            }
        }
    }

    /// The per-second panels, one above the other on one time axis; returns the bottom of what they drew.
    static func timelinePanels(_ svg: inout SVG, x: Double, top: Double, w: Double, rows intervals: [TimelineRow], time: MeasuredTime) -> Double {
        let plan = TimelinePlan(intervals: intervals, time: time)
        let tAxis = ChartAxis.linear(lo: plan.x0, hi: plan.x1, count: 10, integer: true)
        func px(_ s: Double) -> Double { x + w * tAxis.fraction(s) }
        let mid = { (s: Int) in px(Double(s) + 0.5) }
        func shadeGaps(_ y: Double, _ h: Double, say: Bool = false) {
            for g in plan.gaps {
                svg.rect(px(g.start), y, px(g.end) - px(g.start), h, fill: colors.gap, stroke: nil, opacity: 0.6)
                if say && px(g.end) - px(g.start) > 90 {
                    svg.text((px(g.start) + px(g.end)) / 2, y + h / 2 + 4, "not measured", size: 12, anchor: "middle", color: "#666")
                }
            }
        }
        func timeGrid(_ y: Double, _ h: Double) {
            for t in tAxis.ticks { svg.line(px(t), y, px(t), y + h, stroke: "#eee") }
        }
        // Consecutive drawn seconds are joined; a missing second breaks the line.
        func line(_ value: (Int, TimelineRow?) -> Double?) -> [(Double, Double)?] {
            var out: [(Double, Double)?] = []
            var prev: Int?
            for (s, i) in plan.seconds {
                if let p = prev, s != p + 1 { out.append(nil) }
                out.append(value(s, i).map { (mid(s), $0) })
                prev = s
            }
            return out
        }
        let empty = plan.seconds.isEmpty

        // Sent and completed. Sent is drawn last, dashed, over completed: at a kept rate they coincide. A
        // schedule's target goes under both, so where the sender or the target stops keeping up shows as
        // the lines parting.
        let hasTarget = plan.seconds.contains { $0.interval?.target != nil }
        var legend = [LegendItem(color: colors.latency, text: "completed / s"),
                      LegendItem(color: colors.sent, text: "sent / s", mark: .line(dash: "5,4"))]
        if hasTarget { legend.append(LegendItem(color: colors.target, text: "target / s (the schedule)")) }
        var y = ChartParts.panelHeader(&svg, x: x, top: top, w: w, title: hasTarget ? "Per second: target, sent and completed" : "Per second: sent and completed",
                                       legend: legend)
        let h1 = 160.0
        let rates = plan.seconds.flatMap { [Double($0.interval?.completed ?? 0), Double($0.interval?.sent ?? 0),
                                            Double($0.interval?.target ?? 0)] }
        let rAxis = ChartAxis.linear(hi: rates.max() ?? 0, count: 5, integer: true, headroom: 0.08)
        ChartParts.frame(&svg, x: x, y: y, w: w, h: h1)
        shadeGaps(y, h1, say: true)
        timeGrid(y, h1)
        rAxis.drawY(&svg, x: x, y: y, w: w, h: h1)
        let ry = { (v: Int64) in y + h1 - h1 * rAxis.fraction(Double(v)) }
        if hasTarget { svg.segments(line { _, i in i?.target.map(ry) }, stroke: colors.target, width: 6, opacity: 0.35) }
        svg.segments(line { _, i in ry(i?.completed ?? 0) }, stroke: colors.latency, width: 3.5, opacity: 0.75)
        svg.segments(line { _, i in ry(i?.sent ?? 0) }, stroke: colors.sent, width: 1.5, dash: "5,4")
        ChartParts.yTitle(&svg, x: x - 72, y: y, h: h1, "requests / s")
        if empty { svg.text(x + w / 2, y + h1 / 2, "no per-second data", size: 14, anchor: "middle", color: "#888") }

        // Errors on their own axis: 44 a second must show beside 5,000 completed.
        y = ChartParts.panelHeader(&svg, x: x, top: y + h1 + 12, w: w, title: "Per second: errors",
                                   legend: [LegendItem(color: colors.failed, text: "non-2xx responses / s", mark: .box(opacity: 0.8)),
                                            LegendItem(color: colors.transport, text: "transport errors / s", mark: .box(opacity: 0.8))])
        let h2 = 80.0
        let errors = plan.seconds.map { ($0.second, $0.interval?.failed ?? 0, $0.interval?.transportErrors ?? 0) }
        let eAxis = ChartAxis.linear(hi: Double(errors.map { $0.1 + $0.2 }.max() ?? 0), count: 2, integer: true)
        ChartParts.frame(&svg, x: x, y: y, w: w, h: h2)
        shadeGaps(y, h2)
        timeGrid(y, h2)
        eAxis.drawY(&svg, x: x, y: y, w: w, h: h2)
        let ey = { (v: Int64) in y + h2 - h2 * eAxis.fraction(Double(v)) }
        let barW = Swift.max(1, (px(1) - px(0)) * 0.8)
        for (s, failed, transport) in errors where failed + transport > 0 {
            let left = px(Double(s) + 0.1)
            svg.rect(left, ey(failed), barW, y + h2 - ey(failed), fill: colors.failed, stroke: nil, opacity: 0.8)
            svg.rect(left, ey(failed + transport), barW, ey(failed) - ey(failed + transport), fill: colors.transport, stroke: nil, opacity: 0.8)
        }
        ChartParts.yTitle(&svg, x: x - 72, y: y, h: h2, "errors / s")
        if !empty && errors.allSatisfy({ $0.1 + $0.2 == 0 }) {
            svg.text(x + w / 2, y + h2 / 2 + 5, "no errors in any second drawn", size: 13, anchor: "middle", color: "#888")
        }

        // Latency per second, for the same seconds as the rates above.
        var items = [LegendItem(color: colors.p99, text: "p99"), LegendItem(color: colors.p50, text: "p50")]
        if intervals.contains(where: { $0.stealMs != nil }) {
            items.append(LegendItem(color: colors.steal, text: "host steal in that second (shade)", mark: .box(opacity: 0.4)))
        }
        y = ChartParts.panelHeader(&svg, x: x, top: y + h2 + 12, w: w, title: "Per second: corrected latency p50 and p99", legend: items)
        let h3 = 160.0
        var p50: [Int: Double] = [:], p99: [Int: Double] = [:]
        for (s, i) in plan.seconds {
            guard let i, let latency = i.latency else { continue }
            p50[s] = Double(latency.p50) / 1000
            p99[s] = Double(latency.p99) / 1000
        }
        let sortedP50 = p50.values.sorted()
        let lAxis = ChartAxis.latency(smallest: sortedP50.first ?? 0.001, body: sortedP50.isEmpty ? 0 : sortedP50[sortedP50.count / 2],
                                      largest: p99.values.max() ?? 1)
        ChartParts.frame(&svg, x: x, y: y, w: w, h: h3)
        shadeGaps(y, h3)
        // Seconds in which the host stole CPU time, shaded behind the lines (darkest from 100 ms): on a
        // shared machine they are where a p99 spike comes from.
        for (s, i) in plan.seconds {
            guard let steal = i?.stealMs, steal > 0 else { continue }
            svg.rect(px(Double(s)), y, px(Double(s) + 1) - px(Double(s)), h3, fill: colors.steal, stroke: nil,
                     opacity: 0.1 + 0.35 * Swift.min(1, Double(steal) / 100))
        }
        lAxis.drawY(&svg, x: x, y: y, w: w, h: h3)
        tAxis.drawX(&svg, x: x, y: y, w: w, h: h3)
        let ly = { (v: Double) in y + h3 - h3 * lAxis.fraction(v) }
        svg.segments(line { s, _ in p99[s].map(ly) }, stroke: colors.p99, width: 2)
        svg.segments(line { s, _ in p50[s].map(ly) }, stroke: colors.p50, width: 2)
        ChartParts.yTitle(&svg, x: x - 62, y: y, h: h3, lAxis.scale == .log ? "latency (ms, log scale)" : "latency (ms)")
        svg.text(x + w / 2, y + h3 + 40, "time since start of measurement (s)", size: 13, anchor: "middle")
        y += h3 + 48
        for note in plan.notes {
            y += 18
            svg.text(x, y, note, size: 12, color: "#555")
        }
        return y
    }

    /// report.html: the title, the SVG (without its own title block) and the summary tables.
    static func runHTML(record r: RunRecord, intervals: [TimelineInterval], title: ReportTitle, summary: JSONValue) -> String {
        runHTML(record: r, rows: intervals.map(TimelineRow.init), title: title, summary: summary)
    }

    /// report.html drawn from the per-second figures the charts need (see ``runSVG(record:rows:title:header:)``).
    static func runHTML(record r: RunRecord, rows: [TimelineRow], title: ReportTitle, summary: JSONValue) -> String {
        var h = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>\(esc(title.title))</title>\n"
        h += "<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:12px 0}"
        h += "td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}th{background:#f0f0f0}td:first-child{text-align:left}</style>\n"
        h += "</head><body>\n<h1>\(esc(title.title))</h1>\n<p>\(esc(title.subtitle))</p>\n<p>\(esc(headline(r)))</p>\n"
        h += runSVG(record: r, rows: rows, title: title, header: false)
        h += "\n<h2>Latency</h2>\n<table><tr><th></th><th>min</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th><th>mean</th><th>count</th></tr>\n"
        for (name, hist) in [("corrected latency", r.latency), ("service time", r.serviceTime)] {
            h += "<tr><td>\(name)</td>"
            for v in [hist.min, hist.valueAtPercentile(50), hist.valueAtPercentile(90), hist.valueAtPercentile(99),
                      hist.valueAtPercentile(99.9), hist.valueAtPercentile(99.99), hist.max] {
                h += "<td>\(ms(v))</td>"
            }
            h += "<td>\(ChartParts.msText(hist.mean / 1000))</td><td>\(hist.totalCount)</td></tr>\n"
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

    // MARK: Helpers

    static func ms(_ us: Int64) -> String { ChartParts.ms(us) }

    static func grouped(_ v: Double) -> String { ChartParts.grouped(v) }

    static func esc(_ s: String) -> String { SVG.escape(s) }
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
