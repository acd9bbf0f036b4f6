import Foundation

/// What a legend entry shows beside its text.
enum LegendMark {
    /// A line, optionally dashed (`stroke-dasharray`).
    case line(dash: String?)
    /// A dot (a point marker, e.g. the max).
    case dot
    /// A filled box (bars and shaded seconds), at the given opacity.
    case box(opacity: Double)
}

/// One legend entry.
struct LegendItem {
    var color: String
    var text: String
    var mark: LegendMark = .line(dash: nil)
}

/// Pieces every chart shares: panel headers with their legends, the latency-by-percentile panel,
/// and number formats.
enum ChartParts {
    static let titleSize = 15.0, legendSize = 12.0

    /// Draws a panel's title at the left and its legend at the right, on one line when both fit in
    /// `w` and on lines of their own below the title otherwise, so they never overlap. Returns the
    /// top of the plot area.
    static func panelHeader(_ svg: inout SVG, x: Double, top: Double, w: Double, title: String, legend items: [LegendItem]) -> Double {
        let baseline = top + 18
        svg.text(x, baseline, title, size: titleSize, weight: "bold")
        let titleW = SVG.textWidth(title, size: titleSize, bold: true)
        let rows = legendRows(items, width: w)
        if rows.count == 1 && titleW + 24 + legendWidth(rows[0]) <= w {
            drawLegendRow(&svg, rows[0], right: x + w, y: baseline)
            return baseline + 12
        }
        var y = baseline
        for row in rows {
            y += 20
            drawLegendRow(&svg, row, right: x + w, y: y)
        }
        return y + 12
    }

    static func itemWidth(_ item: LegendItem) -> Double { 30 + SVG.textWidth(item.text, size: legendSize) + 16 }

    static func legendWidth(_ items: [LegendItem]) -> Double { items.map(itemWidth).reduce(0, +) }

    /// Items split into rows no wider than `width`.
    static func legendRows(_ items: [LegendItem], width: Double) -> [[LegendItem]] {
        var rows: [[LegendItem]] = []
        var row: [LegendItem] = [], used = 0.0
        for item in items {
            let iw = itemWidth(item)
            if !row.isEmpty && used + iw > width {
                rows.append(row)
                row = []
                used = 0
            }
            row.append(item)
            used += iw
        }
        if !row.isEmpty { rows.append(row) }
        return rows
    }

    /// One legend row, right-aligned so it ends at `right`.
    static func drawLegendRow(_ svg: inout SVG, _ items: [LegendItem], right: Double, y: Double) {
        var x = right - legendWidth(items) + 16
        for item in items {
            switch item.mark {
            case .line(let dash): svg.line(x, y - 4, x + 24, y - 4, stroke: item.color, width: 3, dash: dash)
            case .dot: svg.circle(x + 12, y - 4, 3.5, fill: item.color)
            case .box(let opacity): svg.rect(x + 4, y - 10, 16, 12, fill: item.color, stroke: nil, opacity: opacity)
            }
            svg.text(x + 30, y, item.text, size: legendSize)
            x += itemWidth(item)
        }
    }

    /// A plot's frame (drawn under its gridlines and data).
    static func frame(_ svg: inout SVG, x: Double, y: Double, w: Double, h: Double) {
        svg.rect(x, y, w, h, fill: "#fafafa", stroke: "#999")
    }

    /// A vertical axis title, centred on the plot's height.
    static func yTitle(_ svg: inout SVG, x: Double, y: Double, h: Double, _ text: String) {
        svg.text(x, y + h / 2, text, size: 13, anchor: "middle", rotate: -90)
    }

    // MARK: Latency by percentile

    /// A latency-by-percentile panel (x: log scale of 1/(1 − p), ending where the largest sample count
    /// stops resolving percentiles; y: latency in ms, log when the tail is far above the body or
    /// `forceLog`) with one curve per histogram. Returns the bottom of what it drew.
    static func percentilePanel(_ svg: inout SVG, x: Double, top: Double, w: Double, h: Double, title: String,
                                curves: [(hist: HdrHistogram, color: String, name: String)], forceLog: Bool = false) -> Double {
        let withData = curves.filter { $0.hist.totalCount > 0 }
        let n = withData.map(\.hist.totalCount).max() ?? 0
        let xAxis = ChartAxis.percentile(samples: n)
        let yAxis = ChartAxis.latency(smallest: withData.map { Double($0.hist.min) / 1000 }.min() ?? 0.001,
                                      body: withData.map { Double($0.hist.valueAtPercentile(50)) / 1000 }.min() ?? 0,
                                      largest: withData.map { Double($0.hist.max) / 1000 }.max() ?? 1, forceLog: forceLog)
        let items = curves.map { LegendItem(color: $0.color, text: $0.hist.totalCount > 0 ? $0.name : $0.name + " (no data)") }
            + [LegendItem(color: "#555", text: "max", mark: .dot)]
        let y = panelHeader(&svg, x: x, top: top, w: w, title: title, legend: items)
        frame(&svg, x: x, y: y, w: w, h: h)
        yAxis.drawY(&svg, x: x, y: y, w: w, h: h)
        xAxis.drawX(&svg, x: x, y: y, w: w, h: h)
        let samples = n > 0 ? ", up to 1 − 1/n for n = \(grouped(Double(n))) samples" : ""
        svg.text(x + w / 2, y + h + 40, "percentile (log scale of 1/(1−p))\(samples)", size: 13, anchor: "middle")
        yTitle(&svg, x: x - 62, y: y, h: h, yAxis.scale == .log ? "latency (ms, log scale)" : "latency (ms)")
        for c in withData {
            percentileCurve(&svg, c.hist, color: c.color, xAxis: xAxis,
                            px: { x + w * $0 / xAxis.hi }, py: { y + h - h * yAxis.fraction($0) })
        }
        if withData.isEmpty {
            svg.text(x + w / 2, y + h / 2, "no latency samples: nothing completed", size: 14, anchor: "middle", color: "#888")
        }
        return y + h + 48
    }

    /// One latency-by-percentile curve in ms: steps through `hist`'s percentile ticks up to the
    /// decade its own sample count resolves, then to its max there (marked with a dot).
    static func percentileCurve(_ svg: inout SVG, _ hist: HdrHistogram, color: String, xAxis: ChartAxis,
                                px: (Double) -> Double, py: (Double) -> Double) {
        let end = Swift.min(xAxis.hi, Swift.max(log10(Double(hist.totalCount)), log10(2)))
        var pts: [(Double, Double)] = []
        var prevY: Double?
        for t in hist.percentileTicks(ticksPerHalfDistance: 5) where t.percentile < 100 {
            let lx = ChartAxis.decades(percentile: t.percentile)
            if lx >= end { break }
            let v = Double(t.value) / 1000
            if let p = prevY, p != v { pts.append((px(lx), py(p))) }
            pts.append((px(lx), py(v)))
            prevY = v
        }
        let maxV = Double(hist.max) / 1000
        if let p = prevY { pts.append((px(end), py(p))) }
        pts.append((px(end), py(maxV)))
        svg.polyline(pts, stroke: color, width: 2.2)
        svg.circle(px(end), py(maxV), 3.5, fill: color)
    }

    // MARK: Formats

    /// `us` in ms with three significant decimals' worth of precision and the unit.
    static func ms(_ us: Int64) -> String { msText(Double(us) / 1000) }

    static func msText(_ v: Double) -> String {
        (v >= 100 ? String(format: "%.1f", v) : v >= 10 ? String(format: "%.2f", v) : String(format: "%.3f", v)) + " ms"
    }

    /// `v` rounded to an integer and grouped by thousands ("12,500").
    static func grouped(_ v: Double) -> String { ChartAxis.label(v.rounded(), decimals: 0) }
}
