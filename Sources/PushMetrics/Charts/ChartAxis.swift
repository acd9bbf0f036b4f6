import Foundation

/// One axis of a chart: ticks 1, 2 or 5 × 10^k apart (or 1-2-5 within each decade on a log scale),
/// each labelled with exactly its value, and where any value falls between the axis ends.
///
/// The ticks are the ends of the axis, so every gridline has a label and no label is rounded away
/// from its gridline (a 2.5 step labelled "2, 5, 8" is what this replaces).
struct ChartAxis {
    /// How values map onto the axis.
    enum Scale: String {
        /// Position proportional to the value.
        case linear
        /// Position proportional to log10 of the value.
        case log
        /// Values are percentiles (0 … 100) placed at log10(1/(1 − p)), in decades from 0%.
        case percentile
    }

    let scale: Scale
    /// Ends of the axis: values for linear and log, decades of 1/(1 − p) for percentile.
    let lo: Double, hi: Double
    /// Tick values (percentiles for the percentile scale), ascending, and their labels.
    let ticks: [Double]
    let labels: [String]

    /// Where `v` falls: 0 at the low end, 1 at the high end (clamped on a log axis, where 0 has no place).
    func fraction(_ v: Double) -> Double {
        switch scale {
        case .linear: return (v - lo) / (hi - lo)
        case .log: return (Foundation.log10(Swift.max(v, lo)) - Foundation.log10(lo)) / (Foundation.log10(hi) - Foundation.log10(lo))
        case .percentile: return Self.decades(percentile: v) / hi
        }
    }

    /// Decades of 1/(1 − p) of the percentile `p` (0 … 100): 90% is 1, 99% is 2.
    static func decades(percentile p: Double) -> Double { -Foundation.log10(1 - p / 100) }

    // MARK: Making axes

    /// A linear axis from `lo` (usually 0) covering `hi`, with about `count` steps. With
    /// `integer`, steps are whole (counts per second: no "0, 0.2, 0.4" under a count). `headroom`
    /// (a fraction) keeps the top tick that far above `hi`, so a line at the maximum stays clear of
    /// the frame.
    static func linear(lo: Double = 0, hi: Double, count: Int = 5, integer: Bool = false, headroom: Double = 0) -> ChartAxis {
        let top = Swift.max(hi * (1 + headroom), lo + (integer ? 1 : 1e-9))
        let raw = (top - lo) / Double(Swift.max(count, 1))
        var exponent = Int(floor(Foundation.log10(raw)))
        var mantissa = [1, 2, 5, 10].first { Self.value($0, exponent) >= raw * (1 - 1e-9) } ?? 10
        if mantissa == 10 { mantissa = 1; exponent += 1 }
        if integer && exponent < 0 { mantissa = 1; exponent = 0 }
        let step = Self.value(mantissa, exponent)
        let k0 = Int(floor(lo / step + 1e-9)), k1 = Swift.max(Int(ceil(top / step - 1e-9)), k0 + 1)
        let ticks = (k0...k1).map { Self.value($0 * mantissa, exponent) }
        return ChartAxis(scale: .linear, lo: ticks.first!, hi: ticks.last!, ticks: ticks,
                         labels: ticks.map { Self.label($0, decimals: Swift.max(0, -exponent)) })
    }

    /// A log axis with 1-2-5 ticks from the one at or below `lo` to the one at or above `hi` (only
    /// the decades when that would be more than 16 ticks).
    static func log(lo: Double, hi: Double) -> ChartAxis {
        let lo = Swift.max(lo, 1e-6), hi = Swift.max(hi, lo * 1.000001)
        // Mark i is [1, 2, 5][i mod 3] × 10^(i div 3), so consecutive marks are consecutive ticks.
        func mark(_ i: Int) -> (m: Int, e: Int) {
            let e = i >= 0 ? i / 3 : -((-i + 2) / 3)
            return ([1, 2, 5][i - 3 * e], e)
        }
        func v(_ i: Int) -> Double { value(mark(i).m, mark(i).e) }
        var first = 3 * Int(floor(Foundation.log10(lo)))
        while v(first) > lo * (1 + 1e-9) { first -= 1 }
        while v(first + 1) <= lo * (1 + 1e-9) { first += 1 }
        var last = first + 1
        while v(last) < hi * (1 - 1e-9) { last += 1 }
        var marks = (first...last).map(mark)
        if marks.count > 16 {
            let e1 = marks.last!.m == 1 ? marks.last!.e : marks.last!.e + 1
            marks = (marks.first!.e...e1).map { (1, $0) }
        }
        let ticks = marks.map { value($0.m, $0.e) }
        return ChartAxis(scale: .log, lo: ticks.first!, hi: ticks.last!, ticks: ticks,
                         labels: marks.map { label(value($0.m, $0.e), decimals: Swift.max(0, -$0.e)) })
    }

    /// The latency axis (ms) for values from `smallest` to `largest`: log when the largest is more
    /// than 50 × `body` (a tail far above the body would flatten the body into the x axis), or when
    /// `forceLog`; linear from 0 otherwise.
    static func latency(smallest: Double, body: Double, largest: Double, forceLog: Bool = false) -> ChartAxis {
        let largest = Swift.max(largest, 0.001)
        if forceLog || (body > 0 && largest > 50 * body) {
            return log(lo: Swift.max(smallest, 0.001), hi: largest)
        }
        return linear(hi: largest, count: 5)
    }

    /// The latency-by-percentile x axis for `n` samples: it ends at log10(n) decades, the 1 − 1/n
    /// percentile that n samples resolve (where the max sits), with a tick at each whole decade.
    static func percentile(samples n: Int64) -> ChartAxis {
        let hi = n > 0 ? Swift.max(Foundation.log10(Double(n)), Foundation.log10(2)) : 2
        var ticks: [Double] = [0]
        var labels = ["0%"]
        if hi < 1 {
            ticks.append(50)
            labels.append("50%")
        }
        var d = 1
        while Double(d) <= hi + 1e-9 {
            ticks.append(100 * (1 - Self.value(1, -d)))
            labels.append(d == 1 ? "90%" : "99" + (d > 2 ? "." + String(repeating: "9", count: d - 2) : "") + "%")
            d += 1
        }
        return ChartAxis(scale: .percentile, lo: 0, hi: hi, ticks: ticks, labels: labels)
    }

    // MARK: Drawing

    /// Horizontal gridlines across the frame with their labels at its left, in one group the tests
    /// read back (`data-lo`/`data-hi`: the axis ends; `data-from`/`data-to`: their pixels).
    func drawY(_ svg: inout SVG, x: Double, y: Double, w: Double, h: Double) {
        svg.open("class=\"axis\" data-orient=\"y\" data-scale=\"\(scale.rawValue)\" data-lo=\"\(lo)\" data-hi=\"\(hi)\" data-from=\"\(svg.n(y + h))\" data-to=\"\(svg.n(y))\"")
        for (t, label) in zip(ticks, labels) {
            let yy = y + h - h * fraction(t)
            svg.line(x, yy, x + w, yy, stroke: "#ddd")
            svg.text(x - 8, yy + 4, label, size: 12, anchor: "end")
        }
        svg.close()
    }

    /// Vertical gridlines across the frame with their labels below it (one group, as ``drawY``).
    func drawX(_ svg: inout SVG, x: Double, y: Double, w: Double, h: Double) {
        svg.open("class=\"axis\" data-orient=\"x\" data-scale=\"\(scale.rawValue)\" data-lo=\"\(lo)\" data-hi=\"\(hi)\" data-from=\"\(svg.n(x))\" data-to=\"\(svg.n(x + w))\"")
        for (t, label) in zip(ticks, labels) {
            let xx = x + w * fraction(t)
            svg.line(xx, y, xx, y + h, stroke: "#ddd")
            svg.text(xx, y + h + 18, label, size: 12, anchor: "middle")
        }
        svg.close()
    }

    // MARK: Helpers

    /// m × 10^e as the double nearest the decimal (10^-e divides rather than multiplying 0.1s).
    static func value(_ m: Int, _ e: Int) -> Double {
        e >= 0 ? Double(m) * pow(10, Double(e)) : Double(m) / pow(10, Double(-e))
    }

    /// `v` with `decimals` decimals and the integer part grouped by thousands ("12,500", "0.25").
    static func label(_ v: Double, decimals: Int) -> String {
        let text = String(format: "%.\(decimals)f", v)
        let parts = text.split(separator: ".", maxSplits: 1)
        let whole = String(parts[0])
        let negative = whole.hasPrefix("-")
        let digits = negative ? String(whole.dropFirst()) : whole
        var grouped = ""
        for (i, ch) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { grouped.append(",") }
            grouped.append(ch)
        }
        return (negative ? "-" : "") + grouped + (parts.count > 1 ? "." + parts[1] : "")
    }
}
