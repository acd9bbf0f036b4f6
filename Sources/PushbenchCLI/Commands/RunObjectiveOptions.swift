import CommandLineOptions
import LoadGenerator
import PushVocabulary

extension RunCommand {
    /// `--slo`, `--abort-on-slo`, `--slo-grace` and `--junit`, shared with `pipeline`.
    static var objectiveOptions: [Option<RunOptions>] {
        [
            .values("--slo", "OBJECTIVE", \.objectives,
                    help: "an objective the run must meet, else exit 6 (repeatable): METRIC<LIMIT or METRIC<=LIMIT, optionally 'per T' for every T-second window: p50, p90, p99, p99.9, p99.99, max (corrected latency) or service_p99 under a time (p99<1ms, 'p99<5ms per 10s'); error_rate under a fraction (error_rate<0.1%); rate_kept alone; for pipeline also lost_rate, duplicate_rate, e2e_p99") {
                text, name throws(UsageError) in
                do throws(ObjectiveError) { return try RunObjective.parse(text) } catch {
                    throw UsageError("\(name): \(error.description)")
                }
            },
            .flag("--abort-on-slo", \.abortOnSLO,
                  help: "stop the run early once an objective can no longer be met (a window failed, the max passed its limit) or has missed for --slo-grace; what was measured is kept"),
            .value("--slo-grace", "T", \.sloGraceSeconds, default: "5s",
                   help: "with --abort-on-slo: how long a whole-run objective may miss, over the seconds so far, before the run stops") {
                text, name throws(UsageError) in
                let d = try ValueParser.duration(text, option: name)
                guard d >= 1, d == d.rounded() else { throw UsageError("\(name): '\(text)' is not a whole number of seconds (1s or more)") }
                return d
            },
            .value("--log", "FILE", \.logFile,
                   help: "write a CSV line per request to FILE (intended, sent and answer times, connection, stream, status, reason, apns-id or FCM message id, token, bytes; in a pipeline run a line per push too), off the driver threads; 'pushbench report RUN --slowest N' reads it") {
                text, name throws(UsageError) in try Self.fileName(text, name)
            },
            .value("--log-sample", "FRACTION", \.logSample, default: "1",
                   help: "with --log: log this fraction of the requests (0.01 or 1%), the same requests every run") {
                text, name throws(UsageError) in
                do throws(QuantityError) {
                    let f = try Quantity.fraction(text)
                    guard f > 0 else { throw QuantityError("'\(text)' logs nothing") }
                    return f
                } catch {
                    throw UsageError("\(name): \(error.message)")
                }
            },
            .value("--log-slower-than", "T", \.logSlowerThanSeconds, default: "0s",
                   help: "with --log: log only requests whose corrected latency reached T") {
                text, name throws(UsageError) in try ValueParser.duration(text, option: name)
            },
            .value("--junit", "FILE", \.junitFile,
                   help: "write the objectives' verdicts as JUnit XML (one test case each) for CI; with GITHUB_STEP_SUMMARY set, the summary and verdicts are appended to it as Markdown") {
                text, name throws(UsageError) in try Self.fileName(text, name)
            },
        ]
    }

    /// The objectives against what the run can measure, before any traffic: a pipeline metric outside
    /// `pipeline`, rate_kept without a rate, a window longer than the run, the abort options without one.
    static func checkObjectives(_ o: RunOptions, _ a: ParsedArguments, pipeline: Bool) throws(UsageError) {
        for obj in o.objectives {
            if obj.metric.isPipeline && !pipeline {
                throw UsageError("--slo: '\(obj.description)': \(obj.metricName) is measured by pushbench pipeline, not run")
            }
            if obj.metric == .rateKept && o.rate == .max {
                throw UsageError("--slo: '\(obj.description)': --rps max has no rate to keep")
            }
            if let w = obj.windowSeconds, o.requests == nil, Double(w) > o.durationSeconds {
                throw UsageError("--slo: '\(obj.description)': the \(w) s window is longer than the run (\(ProgressDisplay.fixed(o.durationSeconds, 0)) s)")
            }
        }
        if o.objectives.isEmpty {
            for option in ["--abort-on-slo", "--slo-grace"] where a.contains(option) {
                throw UsageError("\(option): give the objectives with --slo")
            }
        } else if o.encoderVariants.count > 1 {
            throw UsageError("--slo: judges one run, not several --encoder variants compared")
        }
        if a.contains("--slo-grace") && !o.abortOnSLO { throw UsageError("--slo-grace: only applies with --abort-on-slo") }
        if o.logFile == nil {
            for option in ["--log-sample", "--log-slower-than"] where a.contains(option) {
                throw UsageError("\(option): only applies with --log FILE")
            }
        } else if o.encoderVariants.count > 1 {
            throw UsageError("--log: logs one run, not several --encoder variants compared")
        }
    }
}
