import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Several runs of one A/B invocation side by side (e.g. the encoder variants of
/// `pushbench --encoder zerocopy,copy,foundation`): a terminal or Markdown table, one chart with every
/// variant's latency-by-percentile curve, and a comparison folder (comparison.md, comparison.svg,
/// comparison.json). Each variant after the first is also judged against the first (the reference) with
/// ``RunComparison``'s thresholds.
///
/// ```swift
/// let entries = runs.map { VariantComparison.Entry(name: $0.encoder, runID: $0.id, record: $0.record,
///                                                   cpuSecondsPerMillion: $0.cpuPerM, rounds: $0.rounds) }
/// let c = VariantComparison(label: "ab", entries: entries, roundOrder: ["zerocopy", "copy", "zerocopy", "copy"])
/// print(c.table(markdown: false))
/// let folder = try c.write(root: URL(fileURLWithPath: "results"))
/// ```
public struct VariantComparison {
    /// One variant: its run (already written as an ordinary run folder) and its cost.
    public struct Entry {
        /// Variant name (the encoder).
        public var name: String
        /// Run id of its run folder.
        public var runID: String
        /// Its run.
        public var record: RunRecord
        /// Client (driver-thread) CPU seconds per million pushes, when known.
        public var cpuSecondsPerMillion: Double?
        /// Rounds it ran.
        public var rounds: Int
        /// Each round's own figures (for the round-to-round spread).
        public var perRound: [RoundPoint]

        /// Creates an entry.
        public init(name: String, runID: String, record: RunRecord, cpuSecondsPerMillion: Double?, rounds: Int,
                    perRound: [RoundPoint] = []) {
            self.name = name
            self.runID = runID
            self.record = record
            self.cpuSecondsPerMillion = cpuSecondsPerMillion
            self.rounds = rounds
            self.perRound = perRound
        }

        /// summary.json of the entry's run (what ``RunComparison`` reads).
        var summary: JSONValue { ResultsWriter.summaryJSON(record, runID: runID) }
    }

    /// One round of one variant.
    public struct RoundPoint: Sendable, Equatable {
        /// Position of the round in the run.
        public var index: Int
        /// Completed requests per measured second.
        public var achievedRPS: Double
        /// Corrected latency p50 and p99, µs.
        public var p50: Int64, p99: Int64
        /// Driver-thread CPU seconds per million pushes.
        public var cpuSecondsPerMillion: Double?

        /// Creates a round's figures.
        public init(index: Int, achievedRPS: Double, p50: Int64, p99: Int64, cpuSecondsPerMillion: Double?) {
            self.index = index
            self.achievedRPS = achievedRPS
            self.p50 = p50
            self.p99 = p99
            self.cpuSecondsPerMillion = cpuSecondsPerMillion
        }
    }

    /// Label of the invocation (the comparison folder is `<run id>-comparison`).
    public var label: String
    /// The variants; the first is the reference.
    public var entries: [Entry]
    /// Variant names in the order their rounds ran.
    public var roundOrder: [String]
    /// Length of a full round in seconds.
    public var roundSeconds: Double
    /// ``RunComparison`` thresholds (metric → percent) for the verdicts against the reference.
    public var thresholds: [String: Double]

    /// Creates a comparison of `entries` (the first is the reference).
    public init(label: String, entries: [Entry], roundOrder: [String], roundSeconds: Double = 1,
                thresholds: [String: Double] = [:]) {
        self.label = label
        self.entries = entries
        self.roundOrder = roundOrder
        self.roundSeconds = roundSeconds
        self.thresholds = thresholds
    }

    /// Each entry against the reference (nil for the reference itself).
    public var againstReference: [RunComparison?] {
        guard let ref = entries.first else { return [] }
        let base = ref.summary
        return entries.enumerated().map { i, e in
            i == 0 ? nil : RunComparison(base: base, new: e.summary, thresholds: thresholds, baseName: ref.name, newName: e.name)
        }
    }

    /// Names of the gated metrics on which each entry regressed against the reference (empty for it).
    public var regressions: [[String]] {
        againstReference.map { c in c?.rows.filter { $0.verdict == .regression }.map(\.metric.name) ?? [] }
    }

    // MARK: Table

    /// Header of the table.
    static let header = ["encoder", "rounds", "achieved rps", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms",
                         "errors", "CPU s / M pushes", "CPU vs ref", "p99 vs ref", "verdict vs ref"]

    /// The rows as text cells.
    var cells: [[String]] {
        let ref = entries.first
        let regs = regressions
        return entries.enumerated().map { i, e in
            let r = e.record, l = r.latency
            let errors = r.counts.failed + r.counts.transportErrors
            var row = [e.name, String(e.rounds), ReportChart.grouped(r.achievedRPS)]
            row += [l.valueAtPercentile(50), l.valueAtPercentile(90), l.valueAtPercentile(99),
                    l.valueAtPercentile(99.9), l.max].map { Self.ms($0) }
            row.append(ReportChart.grouped(Double(errors)))
            row.append(e.cpuSecondsPerMillion.map { String(format: "%.2f", $0) } ?? "-")
            if i == 0 {
                row += ["1.00x", "1.00x", "reference"]
            } else {
                row.append(Self.ratio(e.cpuSecondsPerMillion, ref?.cpuSecondsPerMillion))
                row.append(Self.ratio(Double(l.valueAtPercentile(99)), (ref?.record.latency.valueAtPercentile(99)).map(Double.init)))
                row.append(regs[i].isEmpty ? "ok" : "REGRESSION: " + regs[i].joined(separator: ", "))
            }
            return row
        }
    }

    /// The table as plain text for the terminal, or GitHub-flavoured Markdown.
    public func table(markdown: Bool) -> String {
        let rows = cells
        if markdown {
            var out = "| " + Self.header.joined(separator: " | ") + " |\n"
            out += "|---|" + String(repeating: "---:|", count: Self.header.count - 2) + "---|\n"
            for r in rows {
                var c = r
                if c[c.count - 1].hasPrefix("REGRESSION") { c[c.count - 1] = "**\(c[c.count - 1])**" }
                out += "| " + c.joined(separator: " | ") + " |\n"
            }
            return out
        }
        let widths = Self.header.indices.map { i in ([Self.header] + rows).map { $0[i].count }.max() ?? 0 }
        func line(_ c: [String]) -> String {
            c.enumerated().map { i, s in
                let pad = String(repeating: " ", count: widths[i] - s.count)
                return i == 0 || i == c.count - 1 ? s + pad : pad + s
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        return ([line(Self.header)] + rows.map(line)).joined(separator: "\n") + "\n"
    }

    /// comparison.md: what ran, the table, how to read it, the run folders.
    public func markdown(comparisonID: String) -> String {
        var out = "# pushbench encoder comparison \(comparisonID)\n\n"
        if let c = entries.first?.record.config {
            let rate = c.rps.map { "\(ReportChart.grouped(Double($0))) rps" } ?? "closed loop (rps max)"
            out += "\(c.protocolName) · \(c.target) · \(rate) · \(c.connections) conn × \(c.streams) streams · "
            out += "\(c.threads) thread\(c.threads == 1 ? "" : "s") · \(String(format: "%.1f", entries.first?.record.measuredSeconds ?? 0)) s measured per variant\n\n"
        }
        out += "Rounds of \(String(format: "%g", roundSeconds)) s per variant, round robin (\(roundOrder.count) rounds: "
        out += roundOrder.prefix(12).joined(separator: ", ") + (roundOrder.count > 12 ? ", …" : "") + ").\n\n"
        out += table(markdown: true)
        out += "\nLatency is corrected latency (from each request's intended send time). CPU s / M pushes is the CPU time of the "
        out += "client's driver threads during the variant's rounds per million requests sent (warm-up included). "
        out += "Verdicts compare each variant with the first using `pushbench compare`'s thresholds.\n\n"
        if entries.contains(where: { $0.perRound.count > 1 }) {
            out += "Round to round (min … median … max over each variant's rounds): a difference between variants "
            out += "smaller than these spreads may well be noise.\n\n"
            out += "| encoder | CPU s / M pushes | p99 ms | achieved rps |\n|---|---:|---:|---:|\n"
            for e in entries {
                let cpu = Self.spread(e.perRound.compactMap(\.cpuSecondsPerMillion)) { String(format: "%.2f", $0) }
                let p99 = Self.spread(e.perRound.map { Double($0.p99) / 1000 }) { String(format: "%.3f", $0) }
                let rps = Self.spread(e.perRound.map(\.achievedRPS)) { ReportChart.grouped($0) }
                out += "| \(e.name) | \(cpu) | \(p99) | \(rps) |\n"
            }
            out += "\n"
        }
        out += "![latency by percentile](comparison.svg)\n\nRun folders:\n\n"
        for e in entries { out += "- \(e.name): `\(e.runID)`\n" }
        return out
    }

    /// comparison.json: the same figures for scripts.
    public func json(comparisonID: String) -> JSONValue {
        let regs = regressions
        return .object([
            ("comparison_id", .string(comparisonID)),
            ("label", .string(label)),
            ("reference", entries.first.map { .string($0.name) } ?? .null),
            ("round_s", .double(roundSeconds)),
            ("rounds", .array(roundOrder.map { .string($0) })),
            ("variants", .array(entries.enumerated().map { i, e in
                let r = e.record, l = r.latency
                return .object([
                    ("encoder", .string(e.name)), ("run_id", .string(e.runID)), ("rounds", .int(Int64(e.rounds))),
                    ("target_rps", r.config.rps.map { .int(Int64($0)) } ?? .string("max")),
                    ("achieved_rps", .double(ResultsWriter.round3(r.achievedRPS))),
                    ("p50_us", .int(l.valueAtPercentile(50))), ("p90_us", .int(l.valueAtPercentile(90))),
                    ("p99_us", .int(l.valueAtPercentile(99))), ("p999_us", .int(l.valueAtPercentile(99.9))),
                    ("max_us", .int(l.max)),
                    ("errors", .int(r.counts.failed + r.counts.transportErrors)),
                    ("cpu_s_per_million", e.cpuSecondsPerMillion.map { .double(ResultsWriter.round3($0)) } ?? .null),
                    ("regressions_vs_reference", .array(regs[i].map { .string($0) })),
                    ("per_round", .array(e.perRound.map { p in
                        .object([
                            ("round", .int(Int64(p.index))), ("achieved_rps", .double(ResultsWriter.round3(p.achievedRPS))),
                            ("p50_us", .int(p.p50)), ("p99_us", .int(p.p99)),
                            ("cpu_s_per_million", p.cpuSecondsPerMillion.map { .double(ResultsWriter.round3($0)) } ?? .null),
                        ])
                    })),
                ])
            })),
        ])
    }

    // MARK: Chart

    static let palette = ["#1f5fbf", "#e07b00", "#2e7d32", "#6a1b9a", "#c62828", "#00838f", "#6d4c41", "#ad1457"]

    /// comparison.svg: every variant's corrected-latency percentile curve on one plot, then CPU per
    /// million pushes and achieved throughput per variant.
    public func svg(comparisonID: String) -> String {
        let width = ReportChart.width
        let barRows = Double(Swift.max(entries.count, 1))
        let barsY = 600.0, barH = 26.0
        var svg = SVG(width: width, height: barsY + barRows * (barH + 10) + 10 + 40)
        svg.text(24, 34, "pushbench encoder comparison \(comparisonID)", size: 20, weight: "bold")
        if let c = entries.first?.record.config {
            let rate = c.rps.map { "target \(ReportChart.grouped(Double($0))) rps" } ?? "closed loop (rps max)"
            svg.text(24, 58, "\(c.protocolName) · \(c.target) · \(rate) · \(c.connections) conn × \(c.streams) streams · "
                     + "rounds of \(String(format: "%g", roundSeconds)) s, round robin", size: 13, color: "#444")
        }
        let x = 90.0, y = 110.0, w = width - 130, h = 400.0
        svg.text(x, y - 8, "Corrected latency by percentile", size: 15, weight: "bold")
        let hists = entries.map(\.record.latency)
        let n = hists.map(\.totalCount).max() ?? 0
        let decades = Swift.max(2, Swift.min(6, Int(ceil(log10(Double(Swift.max(n, 1)))))))
        let xmax = Double(decades)
        let yt = ReportChart.niceTicks(0, Swift.max(Double(hists.map(\.max).max() ?? 0) / 1000, 0.001), 6)
        let ymax = yt.last ?? 1
        func px(_ lx: Double) -> Double { x + w * Swift.min(lx, xmax) / xmax }
        func py(_ v: Double) -> Double { y + h - h * v / ymax }
        svg.rect(x, y, w, h, fill: "#fafafa", stroke: "#999")
        for (t, label) in zip(yt, ReportChart.axisLabels(yt)) {
            svg.line(x, py(t), x + w, py(t), stroke: "#ddd")
            svg.text(x - 8, py(t) + 4, label, size: 12, anchor: "end")
        }
        let pctLabels = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"]
        for d in 0...decades {
            svg.line(px(Double(d)), y, px(Double(d)), y + h, stroke: "#ddd")
            svg.text(px(Double(d)), y + h + 18, pctLabels[d], size: 12, anchor: "middle")
        }
        svg.text(x + w / 2, y + h + 40, "percentile (log scale of 1/(1−p))", size: 13, anchor: "middle")
        svg.text(x - 62, y + h / 2, "latency (ms)", size: 13, anchor: "middle", rotate: -90)
        for (i, hist) in hists.enumerated() where hist.totalCount > 0 {
            ReportChart.percentileCurve(&svg, hist, color: Self.palette[i % Self.palette.count], xmax: xmax, px: px, py: py)
        }
        ReportChart.legend(&svg, right: x + w, y: y - 8,
                           items: entries.enumerated().map { (Self.palette[$0.offset % Self.palette.count], $0.element.name, false) }
                               + [("#555", "max", true)])

        // CPU per million pushes, one bar per variant, with achieved throughput beside it.
        svg.text(x, barsY - 8, "Client CPU seconds per million pushes (driver threads) · achieved rps", size: 15, weight: "bold")
        let cpus = entries.map { $0.cpuSecondsPerMillion ?? 0 }
        let ct = ReportChart.niceTicks(0, Swift.max(cpus.max() ?? 0, 0.001), 5)
        let cmax = ct.last ?? 1
        let barW = w - 260
        let top = barsY + 10
        let panelH = barRows * (barH + 10) + 10
        svg.rect(x, barsY, barW, panelH, fill: "#fafafa", stroke: "#999")
        for t in ct {
            let xx = x + barW * t / cmax
            svg.line(xx, barsY, xx, barsY + panelH, stroke: "#ddd")
            svg.text(xx, barsY + panelH + 16, ReportChart.fmt(t), size: 12, anchor: "middle")
        }
        for (i, e) in entries.enumerated() {
            let yy = top + Double(i) * (barH + 10)
            let color = Self.palette[i % Self.palette.count]
            svg.rect(x, yy, barW * cpus[i] / cmax, barH, fill: color, stroke: nil, opacity: 0.85)
            svg.text(x - 8, yy + barH / 2 + 4, e.name, size: 12, anchor: "end")
            let cpuText = e.cpuSecondsPerMillion.map { String(format: "%.2f s", $0) } ?? "n/a"
            svg.text(x + barW + 12, yy + barH / 2 + 4,
                     "\(cpuText) · \(ReportChart.grouped(e.record.achievedRPS)) rps", size: 12)
        }
        return svg.finish()
    }

    // MARK: Folder

    /// Writes `<root>/<YYYYMMDD-HHMMSS>-<label>-comparison/` (comparison.md, comparison.svg,
    /// comparison.json), points `<root>/latest-comparison` at it, and returns its URL.
    @discardableResult
    public func write(root: URL) throws -> URL {
        let fm = FileManager.default
        try ResultsWriter.createDirectory(root)
        let start = entries.map(\.record.startedAt).min() ?? Date()
        let base = ResultsWriter.runID(startedAt: start, label: "\(label)-comparison")
        var id = base, n = 2
        while fm.fileExists(atPath: root.appendingPathComponent(id).path) {
            id = "\(base)-\(n)"
            n += 1
        }
        let folder = root.appendingPathComponent(id)
        try ResultsWriter.createDirectory(folder)
        try ResultsWriter.save(markdown(comparisonID: id), folder.appendingPathComponent("comparison.md"))
        try ResultsWriter.save(svg(comparisonID: id), folder.appendingPathComponent("comparison.svg"))
        try ResultsWriter.save(json(comparisonID: id).render(), folder.appendingPathComponent("comparison.json"))
        try ResultsWriter.pointLink("latest-comparison", root: root, at: id)
        return folder
    }

    // MARK: Helpers

    static func ms(_ us: Int64) -> String { String(format: "%.3f", Double(us) / 1000) }

    /// `min … median … max` of `values`, each formatted by `f`.
    static func spread(_ values: [Double], _ f: (Double) -> String) -> String {
        guard !values.isEmpty else { return "-" }
        let v = values.sorted()
        let median = v.count % 2 == 1 ? v[v.count / 2] : (v[v.count / 2 - 1] + v[v.count / 2]) / 2
        return "\(f(v[0])) … \(f(median)) … \(f(v[v.count - 1]))"
    }

    static func ratio(_ v: Double?, _ ref: Double?) -> String {
        guard let v, let ref, ref > 0 else { return "-" }
        return String(format: "%.2fx", v / ref)
    }
}
