import Foundation
import PushVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// Several runs of one A/B invocation side by side (e.g. the encoder variants of
/// `pushbench --encoder zerocopy,copy,foundation`): a terminal or Markdown table, one chart with every
/// variant's latency-by-percentile curve, and a comparison folder (comparison.md, comparison.svg,
/// comparison.json). Each variant after the first is also judged against the first (the reference) with
/// ``RunComparison``'s thresholds and the round-to-round spread (``differences``).
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
        /// Corrected latency p99.9, µs, when the round reported it.
        public var p999: Int64?
        /// Driver-thread CPU seconds per million pushes.
        public var cpuSecondsPerMillion: Double?

        /// Creates a round's figures.
        public init(index: Int, achievedRPS: Double, p50: Int64, p99: Int64, p999: Int64? = nil, cpuSecondsPerMillion: Double?) {
            self.index = index
            self.achievedRPS = achievedRPS
            self.p50 = p50
            self.p99 = p99
            self.p999 = p999
            self.cpuSecondsPerMillion = cpuSecondsPerMillion
        }
    }

    /// Label of the invocation (the comparison folder is `<run id>-comparison`).
    public var label: String
    /// The variants; the first is the reference.
    var entries: [Entry]
    /// Variant names in the order their rounds ran.
    var roundOrder: [String]
    /// Length of a full round in seconds.
    var roundSeconds: Double
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
    var againstReference: [RunComparison?] {
        guard let ref = entries.first else { return [] }
        let base = ref.summary
        return entries.enumerated().map { i, e in
            i == 0 ? nil : RunComparison(base: base, new: e.summary, thresholds: thresholds, baseName: ref.name, newName: e.name)
        }
    }

    /// Names of the metrics on which each entry regressed against the reference, past both the
    /// threshold and the round-to-round spread (empty for the reference).
    var regressions: [[String]] {
        differences.map { $0.filter { $0.verdict == .regression }.map(\.metric) }
    }

    // MARK: Table

    /// Header of the table.
    static let header = ["encoder", "rounds", "achieved rps", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms",
                         "errors", "CPU s / M pushes", "CPU vs ref (spread)", "p99 vs ref (spread)", "verdict vs ref"]

    /// The rows as text cells.
    var cells: [[String]] {
        let diffs = differences
        return entries.enumerated().map { i, e in
            let r = e.record, l = r.latency
            let errors = r.counts.failed + r.counts.transportErrors
            var row = [e.name, String(e.rounds), ReportChart.grouped(r.achievedRPS)]
            row += [l.valueAtPercentile(50), l.valueAtPercentile(90), l.valueAtPercentile(99),
                    l.valueAtPercentile(99.9), l.max].map { Self.ms($0) }
            row.append(ReportChart.grouped(Double(errors)))
            row.append(e.cpuSecondsPerMillion.map { String(format: "%.2f", $0) } ?? "-")
            if i == 0 {
                row += ["-", "-", "reference"]
            } else {
                row.append(diffs[i].first { $0.metric == "cpu_s_per_million" }?.text ?? "-")
                row.append(diffs[i].first { $0.metric == "p99" }?.text ?? "-")
                row.append(verdictText(diffs[i]))
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
        out += "Each variant is judged against the first: a difference is a regression only when the whole-run change is past "
        out += "`pushbench compare`'s threshold, the change between the two variants' median rounds is past it too and larger than "
        out += "the round-to-round spread (the larger of the two variants' interquartile ranges over their rounds, in % of the "
        out += "reference's median round), and both ran at least \(Self.minimumRounds) rounds; otherwise noise could have made it.\n\n"
        out += differencesTable()
        if entries.contains(where: { $0.perRound.count > 1 }) {
            out += "Round to round (min … median … max over each variant's rounds): a difference between variants "
            out += "smaller than these spreads may well be noise.\n\n"
            out += "| encoder | CPU s / M pushes | p50 ms | p99 ms | p99.9 ms | achieved rps |\n|---|---:|---:|---:|---:|---:|\n"
            for e in entries {
                let cpu = Self.spread(e.perRound.compactMap(\.cpuSecondsPerMillion)) { String(format: "%.2f", $0) }
                let p50 = Self.spread(e.perRound.map { Double($0.p50) / 1000 }) { String(format: "%.3f", $0) }
                let p99 = Self.spread(e.perRound.map { Double($0.p99) / 1000 }) { String(format: "%.3f", $0) }
                let p999 = Self.spread(e.perRound.compactMap { $0.p999.map { Double($0) / 1000 } }) { String(format: "%.3f", $0) }
                let rps = Self.spread(e.perRound.map(\.achievedRPS)) { ReportChart.grouped($0) }
                out += "| \(e.name) | \(cpu) | \(p50) | \(p99) | \(p999) | \(rps) |\n"
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
        let diffs = differences
        return .object([
            ("comparison_id", .string(comparisonID)),
            ("label", .string(label)),
            ("reference", entries.first.map { .string($0.name) } ?? .null),
            ("round_s", .double(roundSeconds)),
            ("min_rounds_for_verdict", .int(Int64(Self.minimumRounds))),
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
                    ("differences_vs_reference", .array(diffs[i].map { d in
                        .object([
                            ("metric", .string(d.metric)),
                            ("reference", d.reference.map { .double(ResultsWriter.round3($0)) } ?? .null),
                            ("value", d.value.map { .double(ResultsWriter.round3($0)) } ?? .null),
                            ("change_pct", d.changePercent.map { .double(ResultsWriter.round3($0)) } ?? .null),
                            ("round_change_pct", d.roundChangePercent.map { .double(ResultsWriter.round3($0)) } ?? .null),
                            ("spread_pct", d.spreadPercent.map { .double(ResultsWriter.round3($0)) } ?? .null),
                            ("threshold_pct", d.threshold.map { .double($0) } ?? .null),
                            ("rounds", .int(Int64(d.rounds))),
                            ("verdict", .string(d.verdict.rawValue)),
                        ])
                    })),
                    ("per_round", .array(e.perRound.map { p in
                        .object([
                            ("round", .int(Int64(p.index))), ("achieved_rps", .double(ResultsWriter.round3(p.achievedRPS))),
                            ("p50_us", .int(p.p50)), ("p99_us", .int(p.p99)), ("p999_us", p.p999.map { .int($0) } ?? .null),
                            ("cpu_s_per_million", p.cpuSecondsPerMillion.map { .double(ResultsWriter.round3($0)) } ?? .null),
                        ])
                    })),
                ])
            })),
        ])
    }

    /// The Markdown table of every difference against the reference, with its spread and verdict.
    func differencesTable() -> String {
        let diffs = differences
        guard diffs.contains(where: { !$0.isEmpty }) else { return "" }
        func value(_ metric: String, _ v: Double?) -> String {
            guard let v else { return "-" }
            switch metric {
            case "achieved_rps": return ReportChart.grouped(v)
            case "cpu_s_per_million": return String(format: "%.2f s", v)
            case "transport_errors": return ReportChart.grouped(v)
            default: return String(format: "%.3f ms", v / 1000)
            }
        }
        var out = "| encoder | metric | reference | value | change | median round change | round spread | rounds | threshold | verdict |\n"
        out += "|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n"
        for (e, ds) in zip(entries, diffs) {
            for d in ds {
                let change = d.changePercent.map { String(format: "%+.2f%%", $0) } ?? "-"
                let spread = d.spreadPercent.map { String(format: "%.1f%%", $0) } ?? "-"
                let rounds = d.roundChangePercent.map { String(format: "%+.1f%%", $0) } ?? "-"
                let threshold = d.threshold.map { $0 == 0 ? "any" : String(format: "%g%%", $0) } ?? "-"
                let verdict = d.verdict == .regression ? "**REGRESSION**" : d.verdict.rawValue
                out += "| \(e.name) | \(d.metric) | \(value(d.metric, d.reference)) | \(value(d.metric, d.value)) | \(change) | \(rounds) | \(spread) | \(d.rounds) | \(threshold) | \(verdict) |\n"
            }
        }
        return out + "\n"
    }

    // MARK: Chart

    static let palette = ["#1f5fbf", "#e07b00", "#2e7d32", "#6a1b9a", "#c62828", "#00838f", "#6d4c41", "#ad1457"]

    /// comparison.svg: every variant's corrected-latency percentile curve on one plot (log latency
    /// axis), each round's p99 (the spread the verdicts weigh), then CPU per million pushes and
    /// achieved throughput per variant.
    public func svg(comparisonID: String) -> String {
        let width = ReportChart.width
        var svg = SVG(width: width)
        svg.text(24, 34, "pushbench encoder comparison \(comparisonID)", size: 20, weight: "bold")
        if let c = entries.first?.record.config {
            let rate = c.rps.map { "target \(ReportChart.grouped(Double($0))) rps" } ?? "closed loop (rps max)"
            svg.text(24, 58, "\(c.protocolName) · \(c.target) · \(rate) · \(c.connections) conn × \(c.streams) streams · "
                     + "rounds of \(String(format: "%g", roundSeconds)) s, round robin", size: 13, color: "#444")
        }
        let x = 90.0, w = width - 130
        func color(_ i: Int) -> String { Self.palette[i % Self.palette.count] }
        var y = ChartParts.percentilePanel(&svg, x: x, top: 70, w: w, h: 380, title: "Corrected latency by percentile",
                                           curves: entries.enumerated().map { ($0.element.record.latency, color($0.offset), $0.element.name) },
                                           forceLog: true)

        // Each round's p99: how far apart rounds of one variant are is the noise a verdict must beat.
        let rounds = entries.enumerated().flatMap { i, e in e.perRound.map { (i, $0) } }
        if !rounds.isEmpty {
            let top = ChartParts.panelHeader(&svg, x: x, top: y, w: w, title: "Corrected latency p99 of each round",
                                             legend: entries.enumerated().map { LegendItem(color: color($0.offset), text: $0.element.name) })
            let h = 160.0
            let positions = rounds.map { Double($0.1.index) + 1 }
            let xAxis = ChartAxis.linear(lo: 0, hi: (positions.max() ?? 1) + 1, count: 10, integer: true)
            let p99s = rounds.map { Double($0.1.p99) / 1000 }.filter { $0 > 0 }
            let yAxis = ChartAxis.log(lo: p99s.min() ?? 0.1, hi: p99s.max() ?? 1)
            ChartParts.frame(&svg, x: x, y: top, w: w, h: h)
            yAxis.drawY(&svg, x: x, y: top, w: w, h: h)
            xAxis.drawX(&svg, x: x, y: top, w: w, h: h)
            for (i, e) in entries.enumerated() {
                let pts = e.perRound.map { (x + w * xAxis.fraction(Double($0.index) + 1), top + h - h * yAxis.fraction(Double($0.p99) / 1000)) }
                svg.polyline(pts, stroke: color(i), width: 1.2, opacity: 0.6)
                for p in pts { svg.circle(p.0, p.1, 3.5, fill: color(i)) }
            }
            ChartParts.yTitle(&svg, x: x - 62, y: top, h: h, "p99 (ms, log scale)")
            svg.text(x + w / 2, top + h + 40, "round (in the order they ran)", size: 13, anchor: "middle")
            y = top + h + 48
        }

        // CPU per million pushes, one bar per variant, with achieved throughput beside it.
        let barH = 26.0
        let barW = w - 260
        let top = ChartParts.panelHeader(&svg, x: x, top: y, w: w, title: "Client CPU seconds per million pushes (driver threads) · achieved rps", legend: [])
        let panelH = Double(Swift.max(entries.count, 1)) * (barH + 10) + 10
        let cpus = entries.map { $0.cpuSecondsPerMillion ?? 0 }
        let cAxis = ChartAxis.linear(hi: cpus.max() ?? 0, count: 5)
        ChartParts.frame(&svg, x: x, y: top, w: barW, h: panelH)
        cAxis.drawX(&svg, x: x, y: top, w: barW, h: panelH)
        for (i, e) in entries.enumerated() {
            let yy = top + 10 + Double(i) * (barH + 10)
            svg.rect(x, yy, barW * cAxis.fraction(cpus[i]), barH, fill: color(i), stroke: nil, opacity: 0.85)
            svg.text(x - 8, yy + barH / 2 + 4, e.name, size: 12, anchor: "end")
            let cpuText = e.cpuSecondsPerMillion.map { String(format: "%.2f s", $0) } ?? "n/a"
            svg.text(x + barW + 12, yy + barH / 2 + 4, "\(cpuText) · \(ReportChart.grouped(e.record.achievedRPS)) rps", size: 12)
        }
        svg.height = top + panelH + 36
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
}
