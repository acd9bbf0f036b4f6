import Foundation

/// capacity.svg: the steps of a capacity search, p99 against rate, with the objective as a horizontal
/// line, the answer and the knee marked. No browser needed.
public enum CapacityChart {
    /// One step on the chart.
    public struct Point: Sendable, Equatable {
        /// Requests per second asked for.
        public var rate: Double
        /// The latency plotted, µs (p99, or the percentile the objective names).
        var latencyMicros: Int64
        /// `held`, `objective`, `errors` or `sender`.
        public var verdict: String

        /// A point; see the properties.
        public init(rate: Double, latencyMicros: Int64, verdict: String) {
            self.rate = rate
            self.latencyMicros = latencyMicros
            self.verdict = verdict
        }
    }

    static let colors = ["held": "#2e7d32", "objective": "#c62828", "errors": "#ef6c00", "sender": "#757575", "rate": "#6a1b9a",
                         "machine": "#8d6e63"]

    /// The knee of the curve: of the points (ordered by rate), the one furthest below the straight line
    /// from the first to the last, with both axes scaled to 0…1 (the Kneedle rule). Nil with fewer than 3
    /// distinct rates or a curve that never bends upward.
    public static func knee(_ points: [Point]) -> Point? {
        var byRate: [Double: Point] = [:]
        for p in points { byRate[p.rate] = p }   // a rate run twice (the confirming rerun): the later one
        let sorted = byRate.values.sorted { $0.rate < $1.rate }
        guard sorted.count >= 3, let first = sorted.first, let last = sorted.last, last.rate > first.rate else { return nil }
        let lo = Double(sorted.map(\.latencyMicros).min()!), hi = Double(sorted.map(\.latencyMicros).max()!)
        guard hi > lo else { return nil }
        func x(_ p: Point) -> Double { (p.rate - first.rate) / (last.rate - first.rate) }
        func y(_ p: Point) -> Double { (Double(p.latencyMicros) - lo) / (hi - lo) }
        let (x0, y0, x1, y1) = (x(first), y(first), x(last), y(last))
        var best: (Point, Double)?
        for p in sorted.dropFirst().dropLast() {
            let chord = y0 + (y1 - y0) * (x(p) - x0) / (x1 - x0)
            let below = chord - y(p)
            if below > 0 && below > (best?.1 ?? 0) { best = (p, below) }
        }
        return best?.0
    }

    /// The chart: `points`; `objective` the latency objective (its limit in µs, drawn as a line, and its
    /// text; nil when the objectives name no latency); `answer` the capacity found; `knee` from ``knee(_:)``.
    public static func svg(title: String, subtitle: String, points: [Point], latencyName: String,
                           objective: (micros: Double, text: String)?, answer: Double?, knee: Point?) -> String {
        let objectiveMicros = objective?.micros
        let width = 1000.0
        var svg = SVG(width: width)
        svg.text(24, 34, title, size: 20, weight: "bold")
        svg.text(24, 58, subtitle, size: 13, color: "#444")
        let x = 90.0, w = width - 130, h = 380.0
        var legend = [LegendItem(color: colors["held"]!, text: "held", mark: .dot),
                      LegendItem(color: colors["objective"]!, text: "objective missed", mark: .dot)]
        if points.contains(where: { $0.verdict == "errors" }) {
            legend.append(LegendItem(color: colors["errors"]!, text: "too many errors", mark: .dot))
        }
        if points.contains(where: { $0.verdict == "rate" }) {
            legend.append(LegendItem(color: colors["rate"]!, text: "rate not taken", mark: .dot))
        }
        if points.contains(where: { $0.verdict == "sender" }) {
            legend.append(LegendItem(color: colors["sender"]!, text: "sender fell behind", mark: .dot))
        }
        if points.contains(where: { $0.verdict == "machine" }) {
            legend.append(LegendItem(color: colors["machine"]!, text: "host stole CPU (rerun)", mark: .dot))
        }
        if objectiveMicros != nil { legend.append(LegendItem(color: "#c62828", text: "objective", mark: .line(dash: "6,4"))) }
        if knee != nil { legend.append(LegendItem(color: "#1f5fbf", text: "knee", mark: .dot)) }
        let top = ChartParts.panelHeader(&svg, x: x, top: 72, w: w, title: "\(latencyName) against the rate of each step", legend: legend)
        let rates = points.map(\.rate)
        let rAxis = ChartAxis.linear(lo: 0, hi: Swift.max(rates.max() ?? 1, answer ?? 0), count: 8, integer: true, headroom: 0.05)
        let values = points.map { Double($0.latencyMicros) / 1000 } + (objectiveMicros.map { [$0 / 1000] } ?? [])
        let sortedValues = values.sorted()
        let lAxis = ChartAxis.latency(smallest: sortedValues.first ?? 0.001, body: sortedValues.isEmpty ? 0 : sortedValues[sortedValues.count / 2],
                                      largest: (values.max() ?? 1) * 1.1)
        ChartParts.frame(&svg, x: x, y: top, w: w, h: h)
        lAxis.drawY(&svg, x: x, y: top, w: w, h: h)
        rAxis.drawX(&svg, x: x, y: top, w: w, h: h)
        func px(_ r: Double) -> Double { x + w * rAxis.fraction(r) }
        func py(_ ms: Double) -> Double { top + h - h * lAxis.fraction(ms) }
        if let o = objectiveMicros {
            svg.line(x, py(o / 1000), x + w, py(o / 1000), stroke: "#c62828", width: 1.5, dash: "6,4")
            svg.text(x + 6, py(o / 1000) - 6, "objective \(objective?.text ?? "")", size: 12, color: "#c62828")
        }
        if let answer {
            svg.line(px(answer), top, px(answer), top + h, stroke: "#2e7d32", width: 1.5, dash: "3,3")
            let right = rAxis.fraction(answer) > 0.6
            svg.text(px(answer) + (right ? -6 : 6), top + 16, "capacity \(ChartParts.grouped(answer)) rps", size: 12,
                     anchor: right ? "end" : "start", color: "#2e7d32")
        }
        // The steps joined in the order of rate, then each as a dot coloured by its verdict.
        let line = points.sorted { $0.rate < $1.rate }.map { (px($0.rate), py(Double($0.latencyMicros) / 1000)) }
        svg.polyline(line, stroke: "#9e9e9e", width: 1)
        // The knee: a blue halo behind its step's dot, named below it.
        if let knee { svg.circle(px(knee.rate), py(Double(knee.latencyMicros) / 1000), 9, fill: "#1f5fbf") }
        for p in points {
            svg.circle(px(p.rate), py(Double(p.latencyMicros) / 1000), 5, fill: colors[p.verdict] ?? "#000")
        }
        if let knee {
            svg.text(px(knee.rate), py(Double(knee.latencyMicros) / 1000) + 26, "knee \(ChartParts.grouped(knee.rate)) rps",
                     size: 12, anchor: "middle", color: "#1f5fbf")
        }
        ChartParts.yTitle(&svg, x: x - 62, y: top, h: h, lAxis.scale == .log ? "\(latencyName) (ms, log scale)" : "\(latencyName) (ms)")
        svg.text(x + w / 2, top + h + 40, "rate asked for (requests / s)", size: 13, anchor: "middle")
        svg.height = top + h + 60
        return svg.finish()
    }
}
