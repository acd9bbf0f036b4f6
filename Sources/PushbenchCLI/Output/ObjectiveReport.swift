import Foundation
import LoadGenerator
import PushMetrics
import PushVocabulary

/// Passes each closed second to the run's ``ObjectiveTracker`` and on to the run folder's spool; with no
/// spool (the folder could not be reserved) it keeps the seconds for the record.
final class ObjectiveSink: TimelineSink {
    let inner: TimelineSink?
    let tracker: ObjectiveTracker
    private(set) var kept: [TimelineInterval] = []

    init(inner: TimelineSink?, tracker: ObjectiveTracker) {
        self.inner = inner
        self.tracker = tracker
    }

    func append(_ second: TimelineInterval) {
        tracker.observe(second)
        if let inner { inner.append(second) } else { kept.append(second) }
    }
}

/// How a run's objectives came out, and its renderings: the terminal table, summary.json's `objectives`
/// section, JUnit XML and the Markdown of a GitHub job summary.
struct ObjectiveReport {
    var verdicts: [ObjectiveVerdict]
    /// Why `--abort-on-slo` stopped the run, or nil.
    var abortReason: String?

    /// Whether every objective held.
    var passed: Bool { verdicts.allSatisfy(\.passed) }

    /// Exit status of a run that completed with an objective that did not hold.
    static let failedStatus: Int32 = 6

    /// The verdicts of `tracker` on `record` (and a pipeline's figures).
    init(tracker: ObjectiveTracker, record: RunRecord, pipeline: ObjectiveFigures.Pipeline? = nil) {
        var rate: (kept: Bool, sentShare: Double)?
        if let r = record.rate {
            let target = record.targetRPS ?? record.config.rps.map(Double.init) ?? 0
            rate = (r.kept, target > 0 ? r.sentRPS / target : 1)
        }
        let figures = ObjectiveFigures(latency: record.latency, serviceTime: record.serviceTime, counts: record.counts, rate: rate,
                                       pipeline: pipeline)
        verdicts = tracker.verdicts(figures)
        abortReason = tracker.abortReason
    }

    init(verdicts: [ObjectiveVerdict], abortReason: String? = nil) {
        self.verdicts = verdicts
        self.abortReason = abortReason
    }

    /// summary.json `objectives`.
    var json: JSONValue {
        .object([
            ("passed", .bool(passed)),
            ("aborted", abortReason.map { .string($0) } ?? .null),
            ("results", .array(verdicts.map { v in
                let o = v.objective
                var m: [(String, JSONValue)] = [
                    ("objective", .string(o.description)),
                    ("metric", .string(o.metricName)),
                    ("comparison", .string(o.metric == .rateKept ? ">=" : o.inclusive ? "<=" : "<")),
                    ("limit", .double(o.limit)),
                    ("unit", .string(o.metric.isTime ? "us" : "fraction")),
                    ("measured", v.measured.map { .double($0) } ?? .null),
                    ("passed", .bool(v.passed)),
                ]
                if let w = o.windowSeconds {
                    m += [("window_s", .int(Int64(w))), ("windows", .int(Int64(v.windows))),
                          ("windows_failed", .int(Int64(v.windowsFailed))),
                          ("worst_window_start_s", v.worstWindowStart.map { .int(Int64($0)) } ?? .null)]
                }
                return .object(m)
            })),
        ])
    }

    /// The terminal's verdict table.
    var lines: [String] {
        let width = max(9, verdicts.map(\.objective.description.count).max() ?? 0)
        func pad(_ s: String, _ n: Int) -> String { s + String(repeating: " ", count: max(1, n - s.count)) }
        var out = ["", "objectives  " + (passed ? "all held" : "\(verdicts.filter { !$0.passed }.count) of \(verdicts.count) did not hold")]
        for v in verdicts {
            out.append("  " + pad(v.passed ? "pass" : "FAIL", 6) + pad(v.objective.description, width + 2)
                       + pad(v.measuredText, 0) + "  limit " + v.objective.limitText)
        }
        if let why = abortReason { out.append("  stopped early (--abort-on-slo): \(why)") }
        return out
    }

    /// JUnit test cases: one per objective, a failure carrying the measured value and the limit; one
    /// more, failed, when `--abort-on-slo` stopped the run.
    var junitCases: [JUnitReport.Case] {
        verdicts.map { v in
            let text = "measured \(v.measuredText), limit \(v.objective.limitText)"
            return JUnitReport.Case(name: v.objective.description, className: "pushbench.objectives",
                                    failure: v.passed ? nil : "\(v.objective.description) did not hold: \(text)", output: text)
        } + (abortReason.map { [JUnitReport.Case(name: "run completed", className: "pushbench.run",
                                                 failure: "stopped early by --abort-on-slo: \($0)", output: "")] } ?? [])
    }

    /// Markdown rows for a job summary.
    var markdown: String {
        var s = "| objective | verdict | measured | limit |\n|---|---|---|---|\n"
        for v in verdicts {
            s += "| `\(v.objective.description)` | \(v.passed ? "pass" : "**FAIL**") | \(v.measuredText) | \(v.objective.limitText) |\n"
        }
        if let why = abortReason { s += "\nStopped early (--abort-on-slo): \(why)\n" }
        return s
    }
}

/// A JUnit XML report: one `<testsuite>` in a `<testsuites>`, as CI systems (GitHub, GitLab, Jenkins) read it.
struct JUnitReport {
    struct Case {
        var name: String
        var className: String
        /// The failure message, or nil when the case passed.
        var failure: String?
        /// What the case measured, as its system-out.
        var output: String
    }

    var suite: String
    var seconds: Double
    var cases: [Case]

    static func escape(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\n", "\t": out.unicodeScalars.append(c)
            case _ where c.value < 0x20: out += " "
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    var xml: String {
        let failures = cases.filter { $0.failure != nil }.count
        let time = String(format: "%.3f", seconds)
        var s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        s += "<testsuites name=\"pushbench\" tests=\"\(cases.count)\" failures=\"\(failures)\" errors=\"0\" time=\"\(time)\">\n"
        s += "  <testsuite name=\"\(Self.escape(suite))\" tests=\"\(cases.count)\" failures=\"\(failures)\" errors=\"0\" skipped=\"0\" time=\"\(time)\">\n"
        for c in cases {
            s += "    <testcase name=\"\(Self.escape(c.name))\" classname=\"\(Self.escape(c.className))\" time=\"0\">\n"
            if let f = c.failure {
                s += "      <failure message=\"\(Self.escape(f))\" type=\"objective\">\(Self.escape(f))</failure>\n"
            }
            if !c.output.isEmpty { s += "      <system-out>\(Self.escape(c.output))</system-out>\n" }
            s += "    </testcase>\n"
        }
        s += "  </testsuite>\n</testsuites>\n"
        return s
    }

    /// Writes the report to `path`, or says why it could not (exit 1 at the end, the run's results kept).
    func write(to path: String) -> String? {
        do { try ResultsWriter.save(xml, URL(fileURLWithPath: path)) } catch { return "--junit \(path): \(error)" }
        return nil
    }
}

/// Appends Markdown to the file `GITHUB_STEP_SUMMARY` names, when it is set (a GitHub Actions job).
enum StepSummary {
    static func append(_ markdown: String) -> String? {
        guard let path = ProcessInfo.processInfo.environment["GITHUB_STEP_SUMMARY"], !path.isEmpty else { return nil }
        guard let handle = FileHandle(forWritingAtPath: path) ?? {
            FileManager.default.createFile(atPath: path, contents: nil) ? FileHandle(forWritingAtPath: path) : nil
        }() else { return "GITHUB_STEP_SUMMARY \(path): cannot open the file" }
        defer { try? handle.close() }
        do {
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(markdown.utf8))
        } catch {
            return "GITHUB_STEP_SUMMARY \(path): \(error)"
        }
        return nil
    }
}
