import Foundation

/// A minimal SVG builder: the charts need text, lines, rectangles, circles, polylines and groups.
/// The size is written when the drawing is finished, so a chart can grow as its panels are laid out.
struct SVG {
    var body = ""
    let width: Double
    var height: Double

    init(width: Double, height: Double = 0) {
        self.width = width
        self.height = height
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
        body += t + ">\(Self.escape(s))</text>\n"
    }

    mutating func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String, width: Double = 1, dash: String? = nil) {
        body += "<line x1=\"\(n(x1))\" y1=\"\(n(y1))\" x2=\"\(n(x2))\" y2=\"\(n(y2))\" stroke=\"\(stroke)\" stroke-width=\"\(n(width))\""
        if let dash { body += " stroke-dasharray=\"\(dash)\"" }
        body += "/>\n"
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

    mutating func polyline(_ pts: [(Double, Double)], stroke: String, width: Double, dash: String? = nil, opacity: Double = 1) {
        guard !pts.isEmpty else { return }
        body += "<polyline fill=\"none\" stroke=\"\(stroke)\" stroke-width=\"\(n(width))\" stroke-linejoin=\"round\""
        if let dash { body += " stroke-dasharray=\"\(dash)\"" }
        if opacity < 1 { body += " stroke-opacity=\"\(n(opacity))\"" }
        body += " points=\"" + pts.map { "\(n($0.0)),\(n($0.1))" }.joined(separator: " ") + "\"/>\n"
    }

    /// Polylines through `pts`, broken wherever a point is nil: a gap in the data stays a gap.
    mutating func segments(_ pts: [(Double, Double)?], stroke: String, width: Double, dash: String? = nil, opacity: Double = 1) {
        var run: [(Double, Double)] = []
        for p in pts + [nil] {
            if let p {
                run.append(p)
            } else if !run.isEmpty {
                if run.count == 1 {
                    circle(run[0].0, run[0].1, Swift.max(width, 3), fill: stroke)
                } else {
                    polyline(run, stroke: stroke, width: width, dash: dash, opacity: opacity)
                }
                run = []
            }
        }
    }

    /// Opens a group; `attributes` is written as given (e.g. `class="axis"`).
    mutating func open(_ attributes: String) { body += "<g \(attributes)>\n" }

    mutating func close() { body += "</g>\n" }

    func finish() -> String {
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(n(width))\" height=\"\(n(height))\" viewBox=\"0 0 \(n(width)) \(n(height))\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
            + "<rect x=\"0\" y=\"0\" width=\"\(n(width))\" height=\"\(n(height))\" fill=\"#ffffff\"/>\n"
            + body + "</svg>\n"
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// Width of `s` in DejaVu Sans at `size` px, from its advance widths rounded up a little, so that a
    /// layout that fits by this estimate fits on screen. Charts lay out legends with it; the tests check
    /// with it that no two texts overlap.
    static func textWidth(_ s: String, size: Double, bold: Bool = false) -> Double {
        var em = 0.0
        for ch in s {
            switch ch {
            case "i", "j", "l", "'", "|", "!", ".", ",", ":", ";", "·": em += 0.32
            case "f", "t", "r", " ", "(", ")", "[", "]", "/", "-": em += 0.42
            case "m", "w", "M", "W", "×", "…", "%": em += 0.98
            case "0"..."9", "a"..."z", "#", "$", "+", "=", "<", ">", "~", "_", "−", "µ": em += 0.66
            default: em += 0.78
            }
        }
        return em * size * (bold ? 1.12 : 1)
    }
}
