import PushMetrics

/// `pushbench compare`'s options.
struct CompareOptions: Equatable, Sendable {
    /// `--threshold METRIC=PCT`: percent by metric name (aliases resolved; the last one given wins).
    var thresholds: [String: Double] = [:]
    /// `--markdown`.
    var markdown = false
    /// `--junit FILE`: a JUnit test case per compared metric.
    var junitFile: String?
}

/// `pushbench compare`: compare two runs; exit 1 when NEW regresses past a threshold.
struct CompareCommand: PushbenchCommand {
    static let name = "compare"
    static let abstract = "compare two runs; exit 1 when NEW regresses past a threshold"
    static let usage = """
    USAGE: pushbench compare BASE NEW [--threshold METRIC=PCT ...] [--markdown]

    BASE and NEW are run folders or their summary.json files. Prints every metric with both values,
    the change and a verdict. Exit status: 0 no regression, 1 NEW regressed past a threshold,
    2 bad input.
    """

    static var options: OptionTable<CompareOptions> {
        OptionTable([
            Option("--threshold", "METRIC=PCT", repeats: true, help: """
            regression threshold in percent (repeatable); defaults:
            achieved_rps=2 (lower is worse), p50=10, p99=10, p999=10 (higher is
            worse), transport_errors=0 (any rise). Other metrics are reported and
            can be gated the same way: p90, max, mean, service_p50, service_p99,
            failed, unfinished, cpu_s, max_rss_bytes
            """) { (options, text) throws(UsageError) in
                do {
                    let (metric, percent) = try RunComparison.parseThreshold(text)
                    options.thresholds[metric] = percent
                } catch {
                    throw UsageError("--threshold: \(error)")
                }
            },
            .flag("--markdown", \.markdown, help: "print a Markdown table fit for a CI comment"),
            .value("--junit", "FILE", \.junitFile,
                   help: "write JUnit XML for CI: a test case per metric, failed when it regressed past its threshold (both values and the change in the message); with GITHUB_STEP_SUMMARY set, the Markdown table is appended to it") {
                text, name throws(UsageError) in try RunCommand.fileName(text, name)
            },
        ])
    }

    let base: String
    let new: String
    let options: CompareOptions

    init(arguments a: ParsedArguments) throws(UsageError) {
        try a.expectPositionals(2...2, "BASE and NEW (run folders or summary.json files)")
        base = a.positionals[0]
        new = a.positionals[1]
        var o = CompareOptions()
        try Self.options.apply(a, to: &o)
        options = o
    }

    func run() -> Int32 {
        let outcome = CompareTool.run(base: base, new: new, thresholds: options.thresholds, markdown: options.markdown)
        if let error = outcome.error { printError("pushbench compare: \(error)") }
        if !outcome.output.isEmpty { printOut(String(outcome.output.dropLast(outcome.output.hasSuffix("\n") ? 1 : 0))) }
        guard let c = outcome.comparison else { return outcome.status }
        if let path = options.junitFile, let problem = Self.junit(c).write(to: path) {
            printError("pushbench compare: \(problem)")
            return 2
        }
        if let problem = StepSummary.append(c.render(markdown: true) + "\n") { printError("pushbench compare: WARNING: \(problem)") }
        return outcome.status
    }

    /// A test case per metric: failed when it regressed past its threshold.
    static func junit(_ c: RunComparison) -> JUnitReport {
        JUnitReport(suite: "pushbench compare \(c.baseName) \(c.newName)", seconds: 0, cases: c.rows.map { r in
            let text = "BASE \(RunComparison.number(r.base)) NEW \(RunComparison.number(r.new)) change \(RunComparison.change(r))"
                + " threshold \(RunComparison.threshold(r)): \(r.verdict.rawValue)"
            return JUnitReport.Case(name: r.metric.name, className: "pushbench.compare",
                                    failure: r.verdict == .regression ? "\(r.metric.label) regressed: \(text)" : nil, output: text)
        })
    }
}
