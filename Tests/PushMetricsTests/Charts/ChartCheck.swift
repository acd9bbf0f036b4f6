import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import PushMetrics

/// Reads a chart back from its SVG text and checks what a reader would see: every axis label
/// against its gridline, and no two texts on top of each other. Renders charts with rsvg-convert.
enum ChartCheck {
    struct Text {
        var x: Double, y: Double, size: Double, anchor: String, bold: Bool, rotate: Double?, content: String
    }

    struct Axis {
        var orient: String, scale: String
        var lo: Double, hi: Double, from: Double, to: Double
        /// Gridline position and the label's anchor position along the axis, with the label.
        var ticks: [(grid: Double, labelAt: Double, label: String)] = []
    }

    struct Chart {
        var texts: [Text] = []
        var axes: [Axis] = []
    }

    private final class Reader: NSObject, XMLParserDelegate {
        var chart = Chart()
        var axisDepth: Int?
        var depth = 0
        var pendingGrid: Double?
        var currentText: Text?
        var wellFormed = true

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes a: [String: String] = [:]) {
            depth += 1
            func d(_ k: String) -> Double { Double(a[k] ?? "") ?? .nan }
            switch name {
            case "g" where a["class"] == "axis":
                chart.axes.append(Axis(orient: a["data-orient"] ?? "?", scale: a["data-scale"] ?? "?", lo: d("data-lo"), hi: d("data-hi"),
                                       from: d("data-from"), to: d("data-to")))
                axisDepth = depth
            case "line" where axisDepth != nil:
                pendingGrid = chart.axes.last!.orient == "y" ? d("y1") : d("x1")
            case "text":
                var rotate: Double?
                if let t = a["transform"], t.hasPrefix("rotate(") {
                    rotate = Double(t.dropFirst(7).split(separator: " ").first ?? "")
                }
                currentText = Text(x: d("x"), y: d("y"), size: d("font-size"), anchor: a["text-anchor"] ?? "start",
                                   bold: a["font-weight"] == "bold", rotate: rotate, content: "")
            default: break
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { currentText?.content += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == "text", let t = currentText {
                chart.texts.append(t)
                if axisDepth != nil, let grid = pendingGrid {
                    let at = chart.axes.last!.orient == "y" ? t.y - 4 : t.x
                    chart.axes[chart.axes.count - 1].ticks.append((grid, at, t.content))
                    pendingGrid = nil
                }
                currentText = nil
            }
            if name == "g" && axisDepth == depth { axisDepth = nil }
            depth -= 1
        }
    }

    /// The texts and axes of `svg` (nil when it is not well-formed XML).
    static func read(_ svg: String) -> Chart? {
        let parser = XMLParser(data: Data(svg.utf8))
        let reader = Reader()
        parser.delegate = reader
        return parser.parse() ? reader.chart : nil
    }

    /// The number a tick label says ("12,500" → 12500, "99.9%" → 99.9).
    static func number(_ label: String) -> Double? {
        var s = label.replacingOccurrences(of: ",", with: "")
        if s.hasSuffix("%") { s.removeLast() }
        return Double(s)
    }

    /// Where the value `v` belongs on `axis`, in pixels, by the scale's own definition.
    static func position(_ v: Double, on a: Axis) -> Double? {
        let f: Double
        switch a.scale {
        case "linear": f = (v - a.lo) / (a.hi - a.lo)
        case "log": f = (log10(v) - log10(a.lo)) / (log10(a.hi) - log10(a.lo))
        case "percentile": f = -log10(1 - v / 100) / a.hi
        default: return nil
        }
        return a.from + (a.to - a.from) * f
    }

    /// Problems with one axis: a label that is not a number, that does not say the value of its
    /// gridline (to within the SVG's 0.1 px rounding), or a step that is not 1, 2 or 5 × 10^k.
    static func problems(_ a: Axis) -> [String] {
        var out: [String] = []
        let name = "\(a.orient) axis (\(a.scale), \(a.lo) … \(a.hi))"
        if a.ticks.count < 2 { out.append("\(name): \(a.ticks.count) tick(s)") }
        var values: [Double] = []
        for t in a.ticks {
            guard let v = number(t.label) else { out.append("\(name): label '\(t.label)' is not a number"); continue }
            values.append(v)
            guard let p = position(v, on: a) else { out.append("\(name): unknown scale"); continue }
            if abs(p - t.grid) > 0.11 { out.append("\(name): label '\(t.label)' belongs at \(p) but its gridline is at \(t.grid)") }
            if abs(t.labelAt - t.grid) > 0.11 { out.append("\(name): label '\(t.label)' is drawn at \(t.labelAt), its gridline at \(t.grid)") }
            let lo = Swift.min(a.from, a.to), hi = Swift.max(a.from, a.to)
            if t.grid < lo - 0.11 || t.grid > hi + 0.11 { out.append("\(name): gridline at \(t.grid) outside the axis") }
        }
        if zip(values, values.dropFirst()).contains(where: { $0 >= $1 }) { out.append("\(name): labels not ascending: \(a.ticks.map(\.label))") }
        if Set(a.ticks.map(\.label)).count != a.ticks.count { out.append("\(name): repeated labels \(a.ticks.map(\.label))") }
        func oneTwoFive(_ x: Double) -> Bool {
            let m = x / pow(10, floor(log10(x) + 1e-9))
            return [1.0, 2, 5, 10].contains { abs(m - $0) < 1e-6 }
        }
        switch a.scale {
        case "linear" where values.count >= 2:
            let step = values[1] - values[0]
            if !oneTwoFive(step) { out.append("\(name): step \(step) is not 1, 2 or 5 × 10^k") }
            for (p, q) in zip(values, values.dropFirst()) where abs((q - p) - step) > step * 1e-6 {
                out.append("\(name): uneven step between \(p) and \(q)")
            }
        case "log":
            for v in values where !oneTwoFive(v) { out.append("\(name): log tick \(v) is not 1, 2 or 5 × 10^k") }
        default: break
        }
        return out
    }

    /// Box of a text on the page (x0, y0, x1, y1), from the same advance widths the charts lay out with.
    static func box(_ t: Text) -> (Double, Double, Double, Double)? {
        let w = SVG.textWidth(t.content, size: t.size, bold: t.bold)
        let start = t.anchor == "middle" ? -w / 2 : t.anchor == "end" ? -w : 0
        // Rotating by −90° about (x, y) turns the text's run upwards and its ascent to the left.
        guard let r = t.rotate else { return (t.x + start, t.y - 0.8 * t.size, t.x + start + w, t.y + 0.2 * t.size) }
        return r == -90 ? (t.x - 0.8 * t.size, t.y - start - w, t.x + 0.2 * t.size, t.y - start) : nil
    }

    /// Pairs of texts that overlap.
    static func overlaps(_ texts: [Text]) -> [String] {
        let boxes = texts.compactMap { t in box(t).map { (t, $0) } }
        var out: [String] = []
        for i in boxes.indices {
            for j in boxes.indices where j > i {
                let a = boxes[i].1, b = boxes[j].1
                if a.0 < b.2 - 0.5 && b.0 < a.2 - 0.5 && a.1 < b.3 - 0.5 && b.1 < a.3 - 0.5 {
                    out.append("'\(boxes[i].0.content)' overlaps '\(boxes[j].0.content)'")
                }
            }
        }
        return out
    }

    /// Everything wrong with `svg` as a reader would see it.
    static func allProblems(_ svg: String) -> [String] {
        guard let chart = read(svg) else { return ["not well-formed XML"] }
        var out = chart.axes.flatMap(problems)
        if chart.axes.isEmpty { out.append("no axes") }
        out += overlaps(chart.texts)
        return out
    }

    // MARK: Rendering

    static let rsvgConvert: String? = ["/usr/bin/rsvg-convert", "/usr/local/bin/rsvg-convert"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Renders `svg` to PNG with rsvg-convert; returns nil on success, else why it failed.
    static func render(_ svg: String, to png: URL) -> String? {
        guard let tool = rsvgConvert else { return "rsvg-convert is missing (scripts/setup installs librsvg2-bin)" }
        let src = png.deletingPathExtension().appendingPathExtension("svg")
        do { try Data(svg.utf8).write(to: src) } catch { return "cannot write \(src.path): \(error)" }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = ["--format", "png", "--output", png.path, src.path]
        let err = Pipe()
        p.standardError = err
        do { try p.run() } catch { return "cannot run \(tool): \(error)" }
        let e = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { return "rsvg-convert exit \(p.terminationStatus): \(e)" }
        guard let data = try? Data(contentsOf: png), data.count > 1000, data.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else {
            return "rsvg-convert wrote no PNG"
        }
        return nil
    }

    /// The `<svg>…</svg>` inside an HTML page.
    static func embeddedSVG(_ html: String) -> String? {
        guard let a = html.range(of: "<svg "), let b = html.range(of: "</svg>", range: a.upperBound..<html.endIndex) else { return nil }
        return String(html[a.lowerBound..<b.upperBound]) + "\n"
    }
}
