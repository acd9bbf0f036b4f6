import PushMetrics

/// `pushbench compare`: compare two runs; exit 1 when NEW regresses past a threshold.
public struct CompareCommand: PushbenchCommand {
    public static let name = "compare"
    public static let abstract = "compare two runs; exit 1 when NEW regresses past a threshold"
    public static let options: [OptionSpec] = [.value("--threshold", repeats: true), .flag("--markdown")]
    public static let help = """
    USAGE: pushbench compare BASE NEW [--threshold METRIC=PCT ...] [--markdown]

    BASE and NEW are run folders or their summary.json files. Prints every metric with both values,
    the change and a verdict. Exit status: 0 no regression, 1 NEW regressed past a threshold,
    2 bad input.

    OPTIONS:
      --threshold METRIC=PCT  regression threshold in percent (repeatable); defaults:
                              achieved_rps=2 (lower is worse), p50=10, p99=10, p999=10 (higher is
                              worse), transport_errors=0 (any rise). Other metrics are reported and
                              can be gated the same way: p90, max, mean, service_p50, service_p99,
                              failed, unfinished, cpu_s, max_rss_bytes
      --markdown              print a Markdown table fit for a CI comment
      -h, --help              show this help
    """

    let base: String
    let new: String
    let thresholds: [String]
    let markdown: Bool

    public init(arguments a: ParsedArguments) throws(UsageError) {
        try a.expectPositionals(2...2, "BASE and NEW (run folders or summary.json files)")
        base = a.positionals[0]
        new = a.positionals[1]
        thresholds = a.allValues("--threshold")
        for spec in thresholds {
            do { _ = try RunComparison.parseThreshold(spec) } catch {
                throw UsageError("--threshold: \(error)")
            }
        }
        markdown = a.flag("--markdown")
    }

    public func run() -> Int32 {
        let outcome = CompareTool.run(base: base, new: new, thresholdSpecs: thresholds, markdown: markdown)
        if let error = outcome.error { printError("pushbench compare: \(error)") }
        if !outcome.output.isEmpty { printOut(String(outcome.output.dropLast(outcome.output.hasSuffix("\n") ? 1 : 0))) }
        return outcome.status
    }
}
