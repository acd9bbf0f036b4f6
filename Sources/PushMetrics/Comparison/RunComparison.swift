import Foundation
import PushVocabulary

/// Compares two runs' summaries metric by metric and decides whether NEW regressed (`pushbench compare`).
///
/// ```swift
/// let base = try LoadedRun.load("results/baseline"), new = try LoadedRun.load("results/latest")
/// let c = try RunComparison(base: base.summary, new: new.summary, thresholds: ["p99": 5])
/// print(c.render(markdown: false)); exit(c.regressed ? 1 : 0)
/// ```
public struct RunComparison: Sendable {
    /// A comparable metric of summary.json.
    public struct Metric: Sendable {
        /// Name used on the command line (`--threshold p99=5`).
        public let name: String
        /// Label and unit for the table.
        public let label: String
        /// True when a larger value is better (throughput).
        let higherIsBetter: Bool
        /// Default regression threshold in percent; nil means reported but not gated.
        let defaultThreshold: Double?
        let extract: @Sendable (JSONValue) -> Double?
    }

    /// Metrics in table order.
    public static let metrics: [Metric] = [
        Metric(name: "achieved_rps", label: "achieved rps", higherIsBetter: true, defaultThreshold: 2) { $0.value(atPath: "throughput.achieved_rps")?.number },
        Metric(name: "p50", label: "latency p50 (µs)", higherIsBetter: false, defaultThreshold: 10) { $0.value(atPath: "latency_us.p50")?.number },
        Metric(name: "p90", label: "latency p90 (µs)", higherIsBetter: false, defaultThreshold: nil) { $0.value(atPath: "latency_us.p90")?.number },
        Metric(name: "p99", label: "latency p99 (µs)", higherIsBetter: false, defaultThreshold: 10) { $0.value(atPath: "latency_us.p99")?.number },
        Metric(name: "p999", label: "latency p99.9 (µs)", higherIsBetter: false, defaultThreshold: 10) { $0.value(atPath: "latency_us.p999")?.number },
        Metric(name: "max", label: "latency max (µs)", higherIsBetter: false, defaultThreshold: nil) { $0.value(atPath: "latency_us.max")?.number },
        Metric(name: "mean", label: "latency mean (µs)", higherIsBetter: false, defaultThreshold: nil) { $0.value(atPath: "latency_us.mean")?.number },
        Metric(name: "service_p50", label: "service time p50 (µs)", higherIsBetter: false, defaultThreshold: nil) { $0.value(atPath: "service_time_us.p50")?.number },
        Metric(name: "service_p99", label: "service time p99 (µs)", higherIsBetter: false, defaultThreshold: nil) { $0.value(atPath: "service_time_us.p99")?.number },
        // Any rise in transport errors is a regression by default (threshold 0%).
        Metric(name: "transport_errors", label: "transport errors", higherIsBetter: false, defaultThreshold: 0) { $0.value(atPath: "requests.transport_errors")?.number },
        Metric(name: "failed", label: "non-2xx responses", higherIsBetter: false, defaultThreshold: nil) { $0.value(atPath: "requests.failed")?.number },
        Metric(name: "unfinished", label: "unfinished", higherIsBetter: false, defaultThreshold: nil) { $0.value(atPath: "requests.unfinished")?.number },
        Metric(name: "cpu_s", label: "cpu seconds", higherIsBetter: false, defaultThreshold: nil) { s in
            guard let u = s.value(atPath: "cpu.user_s")?.number, let y = s.value(atPath: "cpu.sys_s")?.number else { return nil }
            return u + y
        },
        Metric(name: "max_rss_bytes", label: "max RSS (bytes)", higherIsBetter: false, defaultThreshold: nil) { $0["max_rss_bytes"]?.number },
    ]

    /// Accepted spellings for metric names on the command line.
    static let aliases: [String: String] = ["p99.9": "p999", "rps": "achieved_rps", "throughput": "achieved_rps", "errors": "transport_errors"]

    /// How one metric moved.
    public enum Verdict: String, Sendable {
        /// Moved in the good direction.
        case better
        /// Unchanged.
        case same
        /// Moved in the bad direction but within the threshold (or not gated).
        case worse
        /// Moved in the bad direction past the threshold.
        case regression = "REGRESSION"
        /// Missing from one of the summaries.
        case missing = "n/a"
    }

    /// One row of the comparison.
    public struct Row: Sendable {
        /// The metric.
        public let metric: Metric
        /// BASE value.
        public let base: Double?
        /// NEW value.
        public let new: Double?
        /// Threshold in force, percent (nil: not gated).
        public let threshold: Double?
        /// The verdict.
        public let verdict: Verdict

        /// Relative change in percent (nil when unknown or from 0).
        var changePercent: Double? {
            guard let b = base, let n = new, b != 0 else { return nil }
            return (n - b) / abs(b) * 100
        }
    }

    /// Rows in table order.
    public let rows: [Row]
    /// Notes on differences that make the comparison less fair (config, interrupted).
    let notes: [String]
    /// Name of the BASE run (its run id).
    public let baseName: String
    /// Name of the NEW run (its run id).
    public let newName: String

    /// True when any gated metric regressed past its threshold.
    var regressed: Bool { rows.contains { $0.verdict == .regression } }

    /// A bad `--threshold` specification.
    struct ThresholdError: Error, CustomStringConvertible {
        /// What was wrong, naming the text given.
        let description: String
    }

    /// A note when one run lost much more CPU time to the host than the other (summary.json
    /// `machine.steal_ms`: at least 50 ms more and at least twice as much): its latency was partly the
    /// machine's, which no threshold can tell from the code's.
    static func stealNote(base: JSONValue, new: JSONValue, baseName: String, newName: String) -> String? {
        guard let b = base.value(atPath: "machine.steal_ms")?.number,
              let n = new.value(atPath: "machine.steal_ms")?.number else { return nil }
        func much(_ x: Double, _ y: Double) -> Bool { x >= y + 50 && x >= 2 * y }
        guard much(n, b) || much(b, n) else { return nil }
        let noisy = much(n, b) ? newName : baseName
        return "the host stole \(Int(b.rounded())) ms of CPU during \(baseName) and \(Int(n.rounded())) ms during"
            + " \(newName): latency differences may be \(noisy)'s machine, not the code (timeline.csv steal_ms shows which seconds)"
    }

    /// Parses `METRIC=PCT` (e.g. `p99=5`, `achieved_rps=1.5`, `p99.9=20%`).
    public static func parseThreshold(_ text: String) throws -> (String, Double) {
        guard let eq = text.firstIndex(of: "=") else {
            throw ThresholdError(description: "'\(text)' is not METRIC=PCT (e.g. p99=5)")
        }
        let rawName = String(text[..<eq]).lowercased()
        let name = aliases[rawName] ?? rawName
        guard metrics.contains(where: { $0.name == name }) else {
            throw ThresholdError(description: "'\(rawName)' is not a metric; use one of \(metrics.map(\.name).joined(separator: ", "))")
        }
        var pct = String(text[text.index(after: eq)...])
        if pct.hasSuffix("%") { pct.removeLast() }
        guard let v = Double(pct), v.isFinite, v >= 0 else {
            throw ThresholdError(description: "'\(text)': the percentage must be a number >= 0")
        }
        return (name, v)
    }

    /// Compares two summary.json documents. `thresholds` override the defaults (metric name → percent).
    init(base: JSONValue, new: JSONValue, thresholds: [String: Double] = [:],
                baseName: String = "BASE", newName: String = "NEW") {
        self.baseName = baseName
        self.newName = newName
        rows = Self.metrics.map { m in
            let b = m.extract(base), n = m.extract(new)
            let t = thresholds[m.name] ?? m.defaultThreshold
            return Row(metric: m, base: b, new: n, threshold: t, verdict: Self.verdict(m, b, n, t))
        }
        var notes: [String] = []
        let bc = base["config"]?.members ?? [], nc = new["config"]?.members ?? []
        for (k, v) in bc {
            if let other = nc.first(where: { $0.0 == k })?.1, other != v {
                notes.append("config \(k) differs: \(Self.describe(v)) vs \(Self.describe(other))")
            }
        }
        if base["interrupted"] == .bool(true) { notes.append("\(baseName) was interrupted") }
        if new["interrupted"] == .bool(true) { notes.append("\(newName) was interrupted") }
        if let note = Self.stealNote(base: base, new: new, baseName: baseName, newName: newName) { notes.append(note) }
        self.notes = notes
    }

    static func describe(_ v: JSONValue) -> String {
        switch v {
        case .string(let s): return s
        default: return v.render().trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    static func verdict(_ m: Metric, _ b: Double?, _ n: Double?, _ t: Double?) -> Verdict {
        guard let b, let n else { return .missing }
        if b == n { return .same }
        let improved = m.higherIsBetter ? n > b : n < b
        if improved { return .better }
        guard let t else { return .worse }
        // Bad-direction change as a fraction of BASE; from a zero BASE any rise is unbounded.
        let change = b == 0 ? Double.infinity : abs(n - b) / abs(b) * 100
        return change > t ? .regression : .worse
    }

    // MARK: Output

    /// The table as plain text (`markdown: false`) or a GitHub-flavoured Markdown comment.
    public func render(markdown: Bool) -> String {
        let header = ["metric", "BASE", "NEW", "change", "threshold", "verdict"]
        let cells = rows.map { r -> [String] in
            [r.metric.label, Self.number(r.base), Self.number(r.new), Self.change(r), Self.threshold(r), r.verdict.rawValue]
        }
        let regressions = rows.filter { $0.verdict == .regression }.map(\.metric.name)
        let headline = regressions.isEmpty
            ? "no regression past the thresholds"
            : "\(regressions.count) regression\(regressions.count == 1 ? "" : "s"): \(regressions.joined(separator: ", "))"
        if markdown {
            var out = "### pushbench compare: \(regressions.isEmpty ? "✅" : "❌") \(headline)\n\n"
            out += "BASE `\(baseName)` → NEW `\(newName)`\n\n"
            out += "| " + header.joined(separator: " | ") + " |\n"
            out += "|---|---:|---:|---:|---:|---|\n"
            for (r, c) in zip(rows, cells) {
                var row = c
                if r.verdict == .regression { row[5] = "**REGRESSION**" }
                out += "| " + row.joined(separator: " | ") + " |\n"
            }
            if !notes.isEmpty { out += "\n" + notes.map { "> note: \($0)" }.joined(separator: "\n") + "\n" }
            return out
        }
        let widths = (0..<header.count).map { i in ([header] + cells).map { $0[i].count }.max() ?? 0 }
        func line(_ c: [String]) -> String {
            c.enumerated().map { i, s in
                let pad = String(repeating: " ", count: widths[i] - s.count)
                return i == 0 || i == 5 ? s + pad : pad + s
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        var out = "compare: \(headline)\nBASE: \(baseName)\nNEW:  \(newName)\n"
        out += line(header) + "\n"
        for c in cells { out += line(c) + "\n" }
        for n in notes { out += "note: \(n)\n" }
        return out
    }

    /// A figure as the table shows it.
    public static func number(_ v: Double?) -> String {
        guard let v else { return "-" }
        if v == v.rounded() && abs(v) < 1e15 { return ReportChart.grouped(v) }
        return String(format: "%.2f", v)
    }

    /// A row's change as the table shows it.
    public static func change(_ r: Row) -> String {
        guard let b = r.base, let n = r.new else { return "-" }
        if let p = r.changePercent { return String(format: "%+.2f%%", p) }
        return b == n ? "0" : String(format: "%+g", n - b)
    }

    /// A row's threshold as the table shows it.
    public static func threshold(_ r: Row) -> String {
        guard let t = r.threshold else { return "-" }
        if t == 0 { return r.metric.higherIsBetter ? "any drop" : "any rise" }
        return (r.metric.higherIsBetter ? "-" : "+") + String(format: "%g%%", t)
    }
}

/// `pushbench compare` without the command line: loads both runs, compares, and returns the exit
/// status (0 no regression, 1 regression, 2 bad input) with the text to print.
public enum CompareTool {
    /// What the command prints and returns.
    public struct Outcome: Sendable {
        /// 0: no regression; 1: NEW regressed past a threshold; 2: bad input.
        public var status: Int32
        /// The table (stdout); empty on bad input.
        public var output: String
        /// The error (stderr), naming the file or option and the reason.
        public var error: String?
        /// The comparison made (nil on bad input).
        public var comparison: RunComparison? = nil
    }

    /// Compares BASE and NEW (run folders or summary.json files) with `thresholdSpecs` (`METRIC=PCT`).
    static func run(base: String, new: String, thresholdSpecs: [String] = [], markdown: Bool = false) -> Outcome {
        var thresholds: [String: Double] = [:]
        for spec in thresholdSpecs {
            do {
                let (name, pct) = try RunComparison.parseThreshold(spec)
                thresholds[name] = pct
            } catch {
                return Outcome(status: 2, output: "", error: "--threshold: \(error)")
            }
        }
        return run(base: base, new: new, thresholds: thresholds, markdown: markdown)
    }

    /// Compares BASE and NEW with `thresholds` (metric name to percent) already parsed.
    public static func run(base: String, new: String, thresholds: [String: Double], markdown: Bool = false) -> Outcome {
        let b: LoadedRun, n: LoadedRun
        do {
            b = try LoadedRun.load(base)
            n = try LoadedRun.load(new)
        } catch {
            return Outcome(status: 2, output: "", error: "\(error)")
        }
        let c = RunComparison(base: b.summary, new: n.summary, thresholds: thresholds,
                              baseName: b.runID.isEmpty ? "BASE" : b.runID, newName: n.runID.isEmpty ? "NEW" : n.runID)
        return Outcome(status: c.regressed ? 1 : 0, output: c.render(markdown: markdown), error: nil, comparison: c)
    }
}
