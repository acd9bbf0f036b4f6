import Foundation
import LoadGenerator
import PushMetrics
import PushVocabulary

/// `pushbench capacity`'s own options; every option of `pushbench run` that a step uses is accepted too.
struct CapacityOptions: Equatable, Sendable {
    /// `--slo` (repeatable): the objectives every step must meet.
    var objectives: [CapacityObjective] = []
    /// `--min`: the first rate tried.
    var min = 1_000
    /// `--max`: the highest rate tried.
    var max = 1_000_000
    /// `--step-duration`: each step's measured time, in seconds (its warm-up comes before it).
    var stepSeconds = 10.0
    /// `--resolution`: the bisection stops when the rate that held and the one that failed are this close.
    var resolution = 0.02
    /// `--junit FILE`: a JUnit test case per objective, judged at the answer (the median answer with `--repeat`).
    var junitFile: String?
    /// `--repeat`: how many times the whole search runs, one after the other.
    var repeats = 1
}

/// `pushbench capacity`: the highest constant rate at which every objective holds, found by running steps.
struct CapacityCommand: PushbenchCommand {
    static let name = "capacity"
    static let abstract = "the highest rate at which every objective holds: an exponential probe, then a bisection"
    static let usage = """
    USAGE: pushbench capacity --slo p99<5ms [--slo error_rate<0.1%] [--min 1k] [--max 1M]
                              [--step-duration 10s] [--resolution 2%] [--repeat 3] [run options]

    Runs steps at constant rates, each a full measured run with its warm-up and its own folder: up from
    --min, doubling, until a step misses an objective (or --max holds), then halving the gap between the
    highest rate that held and the lowest that failed until they are --resolution apart; the answer is
    rerun once to confirm it. Writes <out>/<run-id>/ with capacity.json, capacity.md, capacity.svg (p99
    against rate, the objective and the knee) and step-NN-<rate>rps/ folders, and prints the answer and
    what stopped it: the objective, errors, or the sender itself falling behind (never reported as the
    target's capacity). Without an error_rate objective, more than 1% of requests failing fails a step.
    A step whose latency missed while the host stole 1% or more of its time (steal) is run again, twice
    at most; a miss on the last try counts. With --repeat N the whole search runs N times, each in its
    own search-K/ folder; the answer is their median, printed with each answer and the spread.
    """
    static let footer: String? = """
        EXIT STATUS: 0 the search ended (whatever the answer); 1 a step could not run; 2 bad input;
        3 target unreachable.
        """

    /// Options of `pushbench run` that the search sets itself, or has as its own (a step is judged by the
    /// search's objectives, not a run's).
    static let setByTheSearch: Set<String> = ["--rps", "--duration", "--requests", "--stages", "--rate-file", "--encoder",
                                              "--slo", "--abort-on-slo", "--slo-grace", "--junit",
                                              "--log", "--log-sample", "--log-slower-than"]

    static var options: OptionTable<CapacityOptions> {
        var own: [Option<CapacityOptions>] = [
            .values("--slo", "OBJECTIVE", \.objectives,
                    help: "an objective every step must meet (repeatable): p50, p90, p99, p99.9, p99.99 or max of the corrected latency under a time (p99<5ms), or error_rate under a fraction (error_rate<0.1%)") {
                text, name throws(UsageError) in try Self.objective(text, option: name)
            },
            .value("--min", "RATE", \.min, default: "1k", help: "the first rate tried (requests per second)") { text, name throws(UsageError) in
                try Self.rate(text, option: name)
            },
            .value("--max", "RATE", \.max, default: "1M", help: "the highest rate tried") { text, name throws(UsageError) in
                try Self.rate(text, option: name)
            },
            .value("--step-duration", "T", \.stepSeconds, default: "10s", help: "each step's measured time (its --warmup comes first)") {
                text, name throws(UsageError) in
                let d = try ValueParser.duration(text, option: name)
                guard d >= 0.1 else { throw UsageError("\(name): '\(text)' is under 100ms") }
                return d
            },
            .value("--resolution", "FRACTION", \.resolution, default: "2%",
                   help: "stop when the highest rate that held and the lowest that failed are this close") { text, name throws(UsageError) in
                do throws(QuantityError) {
                    let f = try Quantity.fraction(text)
                    guard f >= 0.001 && f <= 0.5 else { throw QuantityError("'\(text)' is outside 0.1%...50%") }
                    return f
                } catch {
                    throw UsageError("\(name): \(error.message)")
                }
            },
            .value("--junit", "FILE", \.junitFile,
                   help: "write JUnit XML for CI: a test case per objective, passed when some rate held them all (the answer's figures in the message; with --repeat, the median answer's); with GITHUB_STEP_SUMMARY set, the answer and the steps are appended to it (with --repeat, each search's answer and the spread)") {
                text, name throws(UsageError) in try RunCommand.fileName(text, name)
            },
            .value("--repeat", "N", \.repeats, default: "1",
                   help: "run the whole search N times, one after the other, and report each answer, the median and the spread (lowest-highest, and as a percentage of the median); the verdict is the median answer's") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 1...100)
            },
        ]
        // The run's options, for each step (parsed again by `pushbench run`'s own table, so they are
        // checked exactly as a run checks them).
        var first = true
        for o in RunCommand.options.options where !setByTheSearch.contains(o.name) {
            own.append(Option(o.name, o.valueName, repeats: o.repeats, default: o.defaultValue,
                              group: first ? "Options of each step, as for pushbench run:" : o.group, help: o.help) { _, _ in })
            first = false
        }
        return OptionTable(own)
    }

    static func rate(_ text: String, option: String) throws(UsageError) -> Int {
        do throws(ScheduleError) {
            let r = try RateSchedule.parseRate(text)
            guard r >= 1 else { throw ScheduleError("0 is not a rate to try") }
            return r
        } catch {
            throw UsageError("\(option): \(error.description)")
        }
    }

    /// `p99<5ms`, `p99.9<10ms`, `max<50ms`, `error_rate<0.1%`: `--slo` as `run` reads it
    /// (``RunObjective/parse(_:)``), limited to what a step is judged by.
    static func objective(_ text: String, option: String) throws(UsageError) -> CapacityObjective {
        let o: RunObjective
        do throws(ObjectiveError) { o = try RunObjective.parse(text) } catch {
            throw UsageError("\(option): \(error.description)")
        }
        guard o.windowSeconds == nil, !o.inclusive else {
            throw UsageError("\(option): '\(text)': a capacity step is judged over the whole step by METRIC<LIMIT (no 'per T', no '<=')")
        }
        switch o.metric {
        case .latency(let p): return CapacityObjective(metric: .latency(percentile: p), limit: o.limit, description: text)
        case .errorRate: return CapacityObjective(metric: .errorRate, limit: o.limit, description: text)
        default:
            throw UsageError("\(option): '\(o.metricName)' is not a metric of a capacity step (p50, p90, p99, p99.9, p99.99, max, error_rate)")
        }
    }

    /// The search's options.
    let options: CapacityOptions
    /// The run options every step starts from (rate and duration set per step).
    let stepOptions: RunOptions
    /// Whether --label was given (otherwise the folder is labelled `capacity`).
    let labelGiven: Bool

    init(arguments a: ParsedArguments) throws(UsageError) {
        try a.expectPositionals(0...0, "nothing")
        var o = CapacityOptions()
        try Self.options.apply(a, to: &o)
        guard !o.objectives.isEmpty else { throw UsageError("--slo: give at least one objective (as in --slo p99<5ms)") }
        guard o.max >= o.min else { throw UsageError("--max: \(o.max) is below --min \(o.min)") }
        // The steps' run options, checked by `pushbench run`'s own rules, each at a constant rate.
        var args: [String] = []
        let runNames = Set(RunCommand.options.options.map(\.name)).subtracting(Self.setByTheSearch)
        for (name, value) in a.given where runNames.contains(name) {
            args.append(name)
            if let value { args.append(value) }
        }
        args += ["--rps", String(o.min), "--duration", "\(o.stepSeconds)s"]
        let step = try RunCommand(arguments: ParsedArguments(args, options: RunCommand.options))
        if let s = step.options.segment, step.options.startAtUnixNs == nil {
            throw UsageError("--segment: the \(s.count) agents of one search start together: give them all one --start-at (and one --out, where they meet)")
        }
        options = o
        stepOptions = step.options
        labelGiven = a.contains("--label")
    }

    func run() -> Int32 {
        CapacityExecution(command: self).execute()
    }
}
