import Foundation
import PushMetrics
import PushVocabulary

/// A bad `--slo` objective: the reason, without the option's name.
public struct ObjectiveError: Error, Equatable, CustomStringConvertible {
    /// The reason.
    public var description: String

    /// An error with this reason.
    init(_ description: String) { self.description = description }
}

/// One objective a run is judged by (`--slo`): a figure under a limit, over the whole run or over every
/// window of a few seconds (`p99<1ms`, `error_rate<0.1%`, `p99<5ms per 10s`, `rate_kept`, `lost_rate<=0`).
/// `pushbench capacity` takes the whole-run latency and error-rate ones (``CapacityObjective``).
public struct RunObjective: Sendable, Equatable, CustomStringConvertible {
    /// What is measured.
    public enum Metric: Sendable, Equatable {
        /// Corrected latency (from the intended send time) at this percentile, 100 being the max; µs.
        case latency(percentile: Double)
        /// Service time (from the actual send) at this percentile; µs.
        case serviceTime(percentile: Double)
        /// (non-2xx + transport errors + unfinished) / sent; a window counts the non-2xx and transport
        /// errors of its seconds over the requests sent in them.
        case errorRate
        /// The open-loop rate was kept (summary.json `throughput.rate_kept`); a window keeps it when it
        /// sent at least ``RateOutcome/keptFraction`` of its seconds' target.
        case rateKept
        /// Pipeline: expected pushes lost / expected.
        case lostRate
        /// Pipeline: duplicated pushes / expected.
        case duplicateRate
        /// Pipeline: end-to-end latency (request intended time to push arrival) at this percentile; µs.
        case endToEnd(percentile: Double)

        /// Whether only `pushbench pipeline` measures it.
        public var isPipeline: Bool {
            switch self {
            case .lostRate, .duplicateRate, .endToEnd: true
            default: false
            }
        }

        /// Whether its limit is a time (µs) rather than a fraction.
        public var isTime: Bool {
            switch self {
            case .latency, .serviceTime, .endToEnd: true
            default: false
            }
        }
    }

    /// What is measured.
    public var metric: Metric
    /// The limit: µs for times, a fraction for rates (unused by `rate_kept`).
    public var limit: Double
    /// `<=` rather than `<`: the limit itself passes.
    public var inclusive: Bool
    /// `per T`: every window of this many seconds (from the start of the measured phase) must hold; nil
    /// for the whole run.
    public var windowSeconds: Int?
    /// The objective as written.
    public var description: String

    /// An objective; see the properties.
    public init(metric: Metric, limit: Double, inclusive: Bool = false, windowSeconds: Int? = nil, description: String) {
        self.metric = metric
        self.limit = limit
        self.inclusive = inclusive
        self.windowSeconds = windowSeconds
        self.description = description
    }

    /// The metric names `--slo` takes, for messages.
    static let metricNames = "p50, p90, p99, p99.9, p99.99, max, service_p99, error_rate, rate_kept, lost_rate, duplicate_rate, e2e_p99"

    private static let percentiles: [String: Double] = [
        "p50": 50, "p90": 90, "p99": 99, "p99.9": 99.9, "p999": 99.9, "p99.99": 99.99, "p9999": 99.99, "max": 100,
    ]

    /// Reads `METRIC<LIMIT` or `METRIC<=LIMIT`, optionally followed by ` per T` (a whole number of seconds,
    /// as in `p99<1ms per 10s`), or `rate_kept` alone.
    public static func parse(_ text: String) throws(ObjectiveError) -> RunObjective {
        var body = Substring(text)
        var window: Int?
        if let range = text.range(of: " per ") {
            body = text[..<range.lowerBound]
            let w = text[range.upperBound...].trimmingCharacters(in: .whitespaces)
            let d: ParsedDuration
            do throws(QuantityError) { d = try Quantity.duration(w, bareNumber: .refused) } catch {
                throw ObjectiveError("\(text): \(error.message)")
            }
            guard d.seconds >= 1, d.seconds == d.seconds.rounded() else {
                throw ObjectiveError("\(text): the window '\(w)' is not a whole number of seconds (the per-second results are its parts)")
            }
            window = Int(d.seconds)
        }
        let trimmed = body.trimmingCharacters(in: .whitespaces)
        if trimmed == "rate_kept" {
            return RunObjective(metric: .rateKept, limit: RateOutcome.keptFraction, windowSeconds: window, description: text)
        }
        let inclusive = trimmed.contains("<=")
        let parts = trimmed.components(separatedBy: inclusive ? "<=" : "<")
        guard parts.count == 2, !parts[0].isEmpty else {
            throw ObjectiveError("'\(text)' is not METRIC<LIMIT (as in p99<5ms, error_rate<0.1% or p99<1ms per 10s)")
        }
        let (name, limitText) = (parts[0].trimmingCharacters(in: .whitespaces), parts[1].trimmingCharacters(in: .whitespaces))
        let metric: Metric
        if let p = percentiles[name] {
            metric = .latency(percentile: p)
        } else if name.hasPrefix("service_"), let p = percentiles[String(name.dropFirst(8))] {
            metric = .serviceTime(percentile: p)
        } else if name.hasPrefix("e2e_"), let p = percentiles[String(name.dropFirst(4))] {
            metric = .endToEnd(percentile: p)
        } else {
            switch name {
            case "error_rate": metric = .errorRate
            case "lost_rate": metric = .lostRate
            case "duplicate_rate": metric = .duplicateRate
            case "rate_kept": throw ObjectiveError("\(text): rate_kept takes no limit (write it alone: --slo rate_kept)")
            default: throw ObjectiveError("'\(name)' is not a metric (\(metricNames))")
            }
        }
        if metric.isPipeline && window != nil {
            throw ObjectiveError("\(text): \(name) is judged over the whole run only (no 'per T')")
        }
        let limit: Double
        do throws(QuantityError) {
            if metric.isTime {
                let d = try Quantity.duration(limitText, bareNumber: .refused)
                guard d.nanoseconds >= 1_000 else { throw QuantityError("'\(limitText)' is under 1 µs, the histograms' resolution") }
                limit = d.nanoseconds / 1_000
            } else {
                limit = try Quantity.fraction(limitText)
            }
        } catch {
            throw ObjectiveError("\(text): \(error.message)")
        }
        return RunObjective(metric: metric, limit: limit, inclusive: inclusive, windowSeconds: window, description: text)
    }

    /// Whether `value` (µs or a fraction, as ``limit``) meets the limit.
    func holds(_ value: Double) -> Bool {
        if metric == .rateKept { return value >= limit }
        return inclusive ? value <= limit : value < limit
    }

    /// The metric's name as summary.json writes it (`p99`, `service_p99`, `error_rate`, `e2e_p99`…).
    public var metricName: String {
        func p(_ v: Double) -> String {
            v == 100 ? "max" : "p" + (v == v.rounded() ? String(Int(v)) : String(v))
        }
        switch metric {
        case .latency(let v): return p(v)
        case .serviceTime(let v): return "service_" + p(v)
        case .endToEnd(let v): return "e2e_" + p(v)
        case .errorRate: return "error_rate"
        case .rateKept: return "rate_kept"
        case .lostRate: return "lost_rate"
        case .duplicateRate: return "duplicate_rate"
        }
    }

    /// A value of this metric in words: `1.234 ms` for times, `0.12%` for rates, the share of the target
    /// sent for `rate_kept`.
    public func format(_ value: Double) -> String {
        if metric.isTime { return String(format: "%.3f ms", value / 1000) }
        if metric == .rateKept { return String(format: "%.1f%% of target", value * 100) }
        return String(format: "%.4g%%", value * 100)
    }

    /// The limit in words (`< 1.000 ms`, `<= 0%`, `>= 95.0% of target`).
    public var limitText: String {
        metric == .rateKept ? ">= " + format(limit) : (inclusive ? "<= " : "< ") + format(limit)
    }
}

/// What a run measured as a whole, for judging the whole-run objectives.
public struct ObjectiveFigures {
    /// Corrected latency, µs.
    public var latency: HdrHistogram
    /// Service time, µs.
    public var serviceTime: HdrHistogram
    /// Request counts.
    public var counts: RequestCounts
    /// Whether the open-loop rate was kept, and the share of the target sent (nil: closed loop).
    public var rate: (kept: Bool, sentShare: Double)?
    /// The pipeline's figures (nil for `pushbench run`).
    public var pipeline: Pipeline?

    /// A pipeline's figures.
    public struct Pipeline {
        /// Pushes expected, lost and duplicated.
        public var expected: Int64, lost: Int64, duplicated: Int64
        /// End-to-end latency, µs.
        public var endToEnd: HdrHistogram

        /// Figures; see the properties.
        public init(expected: Int64, lost: Int64, duplicated: Int64, endToEnd: HdrHistogram) {
            self.expected = expected
            self.lost = lost
            self.duplicated = duplicated
            self.endToEnd = endToEnd
        }
    }

    /// Figures; see the properties.
    public init(latency: HdrHistogram, serviceTime: HdrHistogram, counts: RequestCounts, rate: (kept: Bool, sentShare: Double)?,
                pipeline: Pipeline? = nil) {
        self.latency = latency
        self.serviceTime = serviceTime
        self.counts = counts
        self.rate = rate
        self.pipeline = pipeline
    }

    /// The value of `metric` over the whole run, or nil when the run does not measure it.
    public func value(_ metric: RunObjective.Metric) -> Double? {
        switch metric {
        case .latency(let p): return Double(p == 100 ? latency.max : latency.valueAtPercentile(p))
        case .serviceTime(let p): return Double(p == 100 ? serviceTime.max : serviceTime.valueAtPercentile(p))
        case .errorRate:
            let c = counts
            return c.sent > 0 ? Double(c.failed + c.transportErrors + c.unfinished) / Double(c.sent) : 0
        case .rateKept: return rate?.sentShare
        case .lostRate:
            guard let p = pipeline else { return nil }
            return p.expected > 0 ? Double(p.lost) / Double(p.expected) : 0
        case .duplicateRate:
            guard let p = pipeline else { return nil }
            return p.expected > 0 ? Double(p.duplicated) / Double(p.expected) : 0
        case .endToEnd(let q):
            guard let h = pipeline?.endToEnd else { return nil }
            return Double(q == 100 ? h.max : h.valueAtPercentile(q))
        }
    }
}

/// How one objective came out.
public struct ObjectiveVerdict: Sendable, Equatable {
    /// The objective.
    public var objective: RunObjective
    /// Whether it held (over the whole run, or in every window).
    public var passed: Bool
    /// The value measured: the whole run's, or the worst window's; nil when nothing measured it.
    public var measured: Double?
    /// Windows judged and windows that failed (0 for a whole-run objective).
    public var windows: Int, windowsFailed: Int
    /// The first second of the worst window (nil for a whole-run objective).
    public var worstWindowStart: Int?

    /// A verdict; see the properties.
    init(objective: RunObjective, passed: Bool, measured: Double?, windows: Int = 0, windowsFailed: Int = 0,
                worstWindowStart: Int? = nil) {
        self.objective = objective
        self.passed = passed
        self.measured = measured
        self.windows = windows
        self.windowsFailed = windowsFailed
        self.worstWindowStart = worstWindowStart
    }

    /// The measurement in words: `1.234 ms`, or for windows `worst 5.1 ms (10-20 s), 1 of 6 windows failed`.
    public var measuredText: String {
        guard let m = measured else { return "not measured" }
        guard let w = objective.windowSeconds, let start = worstWindowStart else {
            return objective.format(m) + (objective.windowSeconds != nil ? " (no window judged)" : "")
        }
        return "worst \(objective.format(m)) (\(start)-\(start + w) s), \(windowsFailed) of \(windows) windows failed"
    }
}

/// Judges a run's objectives: the windowed ones second by second as the seconds close (fed from the
/// run's timeline, on the thread that runs it), the whole-run ones at the end (``verdicts(_:)``); with
/// `abortAfterSeconds` it also says when the run should stop early (``abortReason``): an objective that
/// can no longer be met (a window failed, the max passed its limit), or a whole-run objective that has
/// not held, over the seconds so far, for that many seconds in a row.
///
/// Plain Swift with no clock: tests feed it made-up seconds.
public final class ObjectiveTracker {
    /// The objectives.
    public let objectives: [RunObjective]
    /// `--slo-grace` in seconds when `--abort-on-slo` is given, else nil.
    let abortAfterSeconds: Int?
    /// Why the run should stop now, once an objective has failed under `--abort-on-slo`.
    public private(set) var abortReason: String?

    private struct Window {
        var index = -1
        var latency = HdrHistogram.latencyMicroseconds()
        var service = HdrHistogram.latencyMicroseconds()
        var sent: Int64 = 0, errors: Int64 = 0, target: Int64 = 0, seconds = 0
        var judged = 0, failed = 0
        var worst: Double?, worstStart: Int?
    }
    private var windows: [Window]
    // The seconds so far, for the whole-run objectives under --abort-on-slo.
    private var soFar = Window()
    private var failingSince: [Int?]
    private var lastSecond = -1

    /// A tracker of `objectives`; `abortAfterSeconds` from `--slo-grace` when `--abort-on-slo` is given.
    public init(objectives: [RunObjective], abortAfterSeconds: Int? = nil) {
        self.objectives = objectives
        self.abortAfterSeconds = abortAfterSeconds
        // One Window each: its histograms are objects, which Array(repeating:) would share.
        windows = objectives.map { _ in Window() }
        failingSince = Array(repeating: nil, count: objectives.count)
    }

    private func value(_ o: RunObjective, _ w: Window) -> Double? {
        switch o.metric {
        case .latency(let p): return w.latency.totalCount == 0 ? nil : Double(p == 100 ? w.latency.max : w.latency.valueAtPercentile(p))
        case .serviceTime(let p): return w.service.totalCount == 0 ? nil : Double(p == 100 ? w.service.max : w.service.valueAtPercentile(p))
        case .errorRate: return w.sent > 0 ? Double(w.errors) / Double(w.sent) : nil
        case .rateKept: return w.target > 0 ? Double(w.sent) / Double(w.target) : nil
        case .lostRate, .duplicateRate, .endToEnd: return nil
        }
    }

    private func add(_ s: TimelineInterval, to w: inout Window) {
        w.latency.add(s.latency.decode())
        w.service.add(s.serviceTime.decode())
        w.sent += s.sent
        w.errors += s.failed + s.transportErrors
        w.target += s.target ?? 0
        w.seconds += 1
    }

    private func judge(_ k: Int) {
        let o = objectives[k]
        defer {
            windows[k].latency.reset()
            windows[k].service.reset()
            windows[k].sent = 0; windows[k].errors = 0; windows[k].target = 0; windows[k].seconds = 0
        }
        guard let size = o.windowSeconds, windows[k].index >= 0, let v = value(o, windows[k]) else { return }
        let start = windows[k].index * size
        windows[k].judged += 1
        let worse = windows[k].worst.map { o.metric == .rateKept ? v < $0 : v > $0 } ?? true
        if worse {
            windows[k].worst = v
            windows[k].worstStart = start
        }
        if !o.holds(v) {
            windows[k].failed += 1
            if abortAfterSeconds != nil && abortReason == nil {
                abortReason = "\(o.description): \(o.metricName) \(o.format(v)) in \(start)-\(start + size) s"
            }
        }
    }

    /// Takes the next measured second (in order of `second`).
    public func observe(_ s: TimelineInterval) {
        guard s.second >= 0 else { return }
        lastSecond = Swift.max(lastSecond, s.second)
        for (k, o) in objectives.enumerated() {
            guard let size = o.windowSeconds else { continue }
            let index = s.second / size
            if index != windows[k].index {
                judge(k)
                windows[k].index = index
            }
            add(s, to: &windows[k])
        }
        guard let grace = abortAfterSeconds, abortReason == nil else { return }
        add(s, to: &soFar)
        for (k, o) in objectives.enumerated() where o.windowSeconds == nil {
            guard let v = value(o, soFar) else { continue }
            if o.holds(v) {
                failingSince[k] = nil
                continue
            }
            // The max only grows: once past its limit the objective cannot be met.
            let hopeless = o.metric == .latency(percentile: 100) || o.metric == .serviceTime(percentile: 100)
            let since = failingSince[k] ?? s.second
            failingSince[k] = since
            if hopeless || s.second - since + 1 >= grace {
                abortReason = "\(o.description): \(o.metricName) \(o.format(v)) over the first \(s.second + 1) s"
                    + (hopeless ? "" : ", not met for \(s.second - since + 1) s")
                return
            }
        }
    }

    /// The verdicts at the end of the run: the whole-run objectives from `figures`, the windowed ones
    /// from the seconds observed (a last window shorter than half its length is not judged).
    public func verdicts(_ figures: ObjectiveFigures) -> [ObjectiveVerdict] {
        objectives.indices.map { k in
            let o = objectives[k]
            guard let size = o.windowSeconds else {
                let v = figures.value(o.metric)
                // The rate is kept by what was sent and what was answered (RateOutcome): a share sent
                // that looks enough fails when the answers fell short.
                let passed = o.metric == .rateKept ? figures.rate?.kept == true : v.map(o.holds) ?? false
                return ObjectiveVerdict(objective: o, passed: passed, measured: v)
            }
            if windows[k].seconds * 2 >= size || windows[k].judged == 0 { judge(k) }
            windows[k].index = -1
            let w = windows[k]
            return ObjectiveVerdict(objective: o, passed: w.judged > 0 && w.failed == 0, measured: w.worst, windows: w.judged,
                                    windowsFailed: w.failed, worstWindowStart: w.worstStart)
        }
    }
}
