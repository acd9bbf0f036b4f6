/// One service-level objective of a capacity search: a latency percentile (or max) under a limit, or the
/// error rate under a fraction (`--slo p99<5ms`, `--slo error_rate<0.1%`).
public struct CapacityObjective: Sendable, Equatable, CustomStringConvertible {
    /// What is measured.
    public enum Metric: Sendable, Equatable {
        /// Corrected latency at this percentile (100 is the max), µs.
        case latency(percentile: Double)
        /// (non-2xx + transport errors + unfinished) / sent, a fraction.
        case errorRate
    }

    /// What is measured.
    public var metric: Metric
    /// The limit it must stay under: µs for latency, a fraction for the error rate.
    public var limit: Double
    /// The objective as written (`p99<5ms`).
    public var description: String

    /// An objective; see the properties.
    public init(metric: Metric, limit: Double, description: String) {
        self.metric = metric
        self.limit = limit
        self.description = description
    }

    /// The objective every search has unless the user sets the error rate: a step where more than 1% of
    /// requests failed has not held, however fast the failures came back.
    static let defaultErrorRate = CapacityObjective(metric: .errorRate, limit: 0.01, description: "error_rate<1%")
}

/// What one step of a capacity search measured: a full measured run at a constant rate.
public struct CapacityStep: Sendable, Equatable {
    /// The rate asked for (requests per second, the whole run's).
    public var rate: Int
    /// Completed requests per measured second.
    public var achievedRPS: Double
    /// Corrected latency percentiles, µs.
    public var p50: Int64, p99: Int64, p999: Int64
    /// Percentiles the objectives name, µs, by percentile (100 is the max).
    public var latencyAt: [Double: Int64]
    /// (non-2xx + transport errors + unfinished) / sent.
    public var errorRate: Double
    /// Why the sender itself may have shaped this step (its driver threads busy 90% of the time or more,
    /// or due requests waiting with streams free), or nil. It decides the verdict of a step that missed an
    /// objective, which then says nothing about the target. A step that met every objective did so with
    /// the sender's own delay included, so it held: a driver thread waking once per request at a few
    /// thousand requests a second is busy most of the time without falling behind.
    public var senderLimit: String?
    /// Why the rate was not kept (every stream busy, the answers slower than the rate, or the sender
    /// sending too few), or nil when it was kept.
    var rateNotKept: String?
    /// Whether ``rateNotKept`` is the sender's doing (streams were free but too few requests went out).
    var rateNotKeptBySender: Bool
    /// Why the machine itself may have shaped this step (the host took CPU time from it: steal), or nil.
    /// Like ``senderLimit`` it decides only a step that missed a latency objective: that step is run
    /// again, because its latency was partly the host's (see ``CapacityStep/machineLimit(stealSeconds:elapsedSeconds:)``).
    public var machineLimit: String?

    /// A step; see the properties.
    public init(rate: Int, achievedRPS: Double, p50: Int64, p99: Int64, p999: Int64, latencyAt: [Double: Int64] = [:],
                errorRate: Double, senderLimit: String? = nil, rateNotKept: String? = nil, rateNotKeptBySender: Bool = false,
                machineLimit: String? = nil) {
        self.machineLimit = machineLimit
        self.rateNotKept = rateNotKept
        self.rateNotKeptBySender = rateNotKeptBySender
        self.rate = rate
        self.achievedRPS = achievedRPS
        self.p50 = p50
        self.p99 = p99
        self.p999 = p999
        self.latencyAt = latencyAt
        self.errorRate = errorRate
        self.senderLimit = senderLimit
    }
}

/// Whether a step held, and if not which limit it hit.
public enum CapacityVerdict: Sendable, Equatable {
    /// Every objective held and the sender kept up.
    case held
    /// A latency objective did not hold (its text and the value measured).
    case objective(String)
    /// The error-rate objective did not hold.
    case errors(String)
    /// The sender itself fell behind: the step measured the sender, not the target.
    case sender(String)
    /// The rate was not kept although the sender kept up: the target answered too slowly for the step's
    /// streams, or not at that rate. A rate the target did not take is not held, whatever the latency
    /// objective (a loose one would otherwise pass a step that fell short).
    case rate(String)
    /// A latency objective did not hold while the host took CPU time from the machine (steal): the step
    /// may have measured the machine, not the target. The search runs such a step again (twice at most);
    /// a miss on the last try counts as the objective's, the steal named in its reason.
    case machine(String)

    /// `held`, `objective`, `errors`, `sender`, `rate` or `machine` (capacity.json).
    public var name: String {
        switch self {
        case .held: "held"
        case .objective: "objective"
        case .errors: "errors"
        case .sender: "sender"
        case .rate: "rate"
        case .machine: "machine"
        }
    }

    /// Why, in words (empty when it held).
    public var why: String {
        switch self {
        case .held: ""
        case .objective(let s), .errors(let s), .sender(let s), .rate(let s), .machine(let s): s
        }
    }
}

/// The highest constant rate at which every objective holds, found by running steps: an exponential
/// probe up from `min` (doubling until a step fails or `max` holds), then a bisection between the highest
/// rate that held and the lowest that failed until they are within `resolution` of each other, then one
/// confirming rerun of the answer (a noisy pass near the knee is not taken on one sample: if the rerun
/// fails, the search goes on below it). A latency objective missed above a rate that held is likewise run
/// once more before it counts, so a single stall near the knee neither lowers the answer nor, having held
/// on its rerun, raises it unconfirmed. A step where the sender itself fell behind fails like any other,
/// but the answer says so instead of blaming the target. A step that missed a latency objective while the
/// host stole CPU time from the machine is run again, up to ``machineReruns`` times; a miss that persists
/// counts as the objective's (with the steal in its reason), since the target may be slow as well.
///
/// Plain Swift without a clock or a socket: the caller runs each step (``nextRate``) and reports it
/// (``record(_:)``); tests drive it with made-up curves.
///
/// ```swift
/// var search = CapacitySearch(min: 1_000, max: 1_000_000, resolution: 0.02, objectives: [p99Under5ms])
/// while let rate = search.nextRate { search.record(try runStep(rate)) }
/// search.answer   // .init(rate: 137_500, limit: .objective("p99 5.4 ms ≥ 5 ms at 140,300 rps"), ...)
/// ```
public struct CapacitySearch: Sendable {
    /// The result of a search.
    public struct Answer: Sendable, Equatable {
        /// The highest rate that held (confirmed), or nil when even `min` did not.
        public var rate: Int?
        /// What stopped it: the verdict of the lowest rate that failed above the answer, or `.held` when
        /// `max` itself held (the capacity is above the range searched).
        public var limit: CapacityVerdict
        /// The failing rate that verdict was measured at (nil when `max` held).
        public var limitRate: Int?
    }

    /// The lowest and highest rates tried.
    public let min: Int, max: Int
    /// Relative gap between the last rate that held and the first that failed at which the bisection stops.
    public let resolution: Double
    /// Every step must meet all of these.
    public let objectives: [CapacityObjective]
    /// The most steps a search runs (a guard against a curve noisy enough to keep it bisecting).
    let maxSteps: Int
    /// Each step and its verdict, in the order run.
    public private(set) var steps: [(step: CapacityStep, verdict: CapacityVerdict)] = []

    private enum Phase { case probe, bisect, confirm, done }
    private var phase = Phase.probe
    private var next: Int?
    private var held: [Int] = []               // rates that held (confirmed or not), ascending
    private var failed: (rate: Int, verdict: CapacityVerdict)?   // the lowest rate that failed
    private var confirmed: Set<Int> = []
    private var result: Answer?
    private var machineRerunsUsed: [Int: Int] = [:]
    private var missesRerun: Set<Int> = []

    /// How many times one rate is run again after the machine (steal) spoiled its latency.
    static let machineReruns = 2

    /// A search from `min` to `max` requests per second; `resolution` as a fraction (0.02 is 2%).
    public init(min: Int, max: Int, resolution: Double = 0.02, objectives: [CapacityObjective], maxSteps: Int = 50) {
        precondition(min >= 1 && max >= min && resolution > 0 && maxSteps >= 1)
        self.min = min
        self.max = max
        self.resolution = resolution
        self.objectives = objectives.contains { $0.metric == .errorRate } ? objectives : objectives + [.defaultErrorRate]
        self.maxSteps = maxSteps
        next = min
    }

    /// The rate of the next step to run, or nil when the search is over (see ``answer``).
    public var nextRate: Int? { result == nil ? next : nil }

    /// The answer, once ``nextRate`` is nil.
    public var answer: Answer? { result }

    /// Whether `step` met the objectives at its rate. A rate not kept fails (the sender's verdict when the
    /// sender sent too few); a missed objective is the sender's when the sender was busy or behind, the
    /// target's otherwise; a step that met every objective at its rate held (see
    /// ``CapacityStep/senderLimit``).
    public func verdict(_ step: CapacityStep) -> CapacityVerdict {
        let rate = Self.grouped(step.rate)
        if let s = step.rateNotKept {
            return step.rateNotKeptBySender ? .sender("the sender fell behind at \(rate) rps: \(s)") : .rate("\(rate) rps was not kept: \(s)")
        }
        var missed: CapacityVerdict?
        for o in objectives where missed == nil {
            switch o.metric {
            case .latency(let p):
                let v = step.latencyAt[p] ?? (p == 50 ? step.p50 : p == 99 ? step.p99 : p == 99.9 ? step.p999 : nil) ?? 0
                if Double(v) >= o.limit {
                    missed = .objective("\(o.description) did not hold at \(rate) rps: \(Self.percentileName(p)) was \(Self.ms(v))")
                }
            case .errorRate:
                if step.errorRate >= o.limit {
                    missed = .errors("\(o.description) did not hold at \(rate) rps: \(Self.percent(step.errorRate)) of requests failed")
                }
            }
        }
        guard let missed else { return .held }
        if let s = step.senderLimit { return .sender("the sender fell behind at \(rate) rps: \(s)") }
        if case .objective(let why) = missed, let m = step.machineLimit { return .machine("\(why), while \(m)") }
        return missed
    }

    /// Records the step just run (at ``nextRate``) and decides the next.
    public mutating func record(_ step: CapacityStep) {
        precondition(result == nil)
        var v = verdict(step)
        let rate = step.rate
        if case .machine(let why) = v {
            if machineRerunsUsed[rate, default: 0] < Self.machineReruns && steps.count + 1 < maxSteps {
                // Perhaps the host's doing, not the target's: the same rate again, nothing learned from it.
                steps.append((step, v))
                machineRerunsUsed[rate, default: 0] += 1
                next = rate
                return
            }
            v = .objective(why)
        } else if case .objective = v, !missesRerun.contains(rate), machineRerunsUsed[rate] == nil,
                  held.contains(where: { $0 < rate }), steps.count + 1 < maxSteps {
            // A latency miss above a rate that held bounds the search, and near the knee one stall can
            // decide a step: like a pass before it is the answer, the miss is run again before it counts.
            steps.append((step, v))
            missesRerun.insert(rate)
            next = rate
            return
        }
        steps.append((step, v))
        if v == .held {
            if !held.contains(rate) { held.append(rate); held.sort() }
            if phase == .confirm { confirmed.insert(rate) }
        } else {
            if failed == nil || rate <= failed!.rate { failed = (rate, v) }
            held.removeAll { $0 >= rate }          // a rate that failed now outranks an earlier pass at or above it
            confirmed = confirmed.filter { $0 < rate }
        }
        decide(after: v)
    }

    private mutating func decide(after v: CapacityVerdict) {
        if steps.count >= maxSteps { finish(); return }
        let lo = held.last
        switch phase {
        case .probe:
            if v == .held {
                guard let lo, lo < max else { finish(); return }
                next = Swift.min(max, lo * 2)
                return
            }
            phase = .bisect
            fallthrough
        case .bisect, .confirm:
            guard let lo else { finish(); return }       // nothing held at all (min failed, or every pass was undone)
            guard let hi = failed?.rate else { finish(); return }
            if Double(hi - lo) > resolution * Double(lo) && hi - lo > 1 {
                phase = .bisect
                next = lo + (hi - lo) / 2
            } else if !confirmed.contains(lo) {
                phase = .confirm
                next = lo
            } else {
                finish()
            }
        case .done:
            break
        }
    }

    private mutating func finish() {
        phase = .done
        let rate = held.last
        if let rate, rate >= max, failed == nil || failed!.rate > max {
            result = Answer(rate: rate, limit: .held, limitRate: nil)
        } else {
            result = Answer(rate: rate, limit: failed?.verdict ?? .held, limitRate: failed?.rate)
        }
    }

    /// The one-line answer a person reads (the command prints it last).
    public static func sentence(_ a: Answer, objectives: [CapacityObjective], min: Int, max: Int) -> String {
        let slo = objectives.map(\.description).joined(separator: ", ")
        guard let rate = a.rate else {
            switch a.limit {
            case .sender(let why):
                return "capacity: not found; \(why), below --min \(grouped(min)) rps (run more sender threads or agents)"
            default:
                return "capacity: below --min \(grouped(min)) rps: \(a.limit.why)"
            }
        }
        let held = "capacity: \(grouped(rate)) rps with \(slo)"
        switch a.limit {
        case .held: return "\(held); --max \(grouped(max)) rps held, so the target can take more (raise --max)"
        // A machine verdict never ends a search: its last rerun is recorded as the objective's.
        case .objective(let why), .machine(let why): return "\(held); stopped by the objective: \(why)"
        case .errors(let why): return "\(held); stopped by errors: \(why)"
        case .rate(let why): return "\(held); stopped by the target's throughput: \(why)"
        case .sender(let why):
            return "\(held) at least; stopped by the sender, not the target: \(why) (the target's capacity was not reached; add --threads or agents with --segment)"
        }
    }

    static func percentileName(_ p: Double) -> String {
        p == 100 ? "max" : "p" + (p == p.rounded() ? String(Int(p)) : String(p))
    }

    /// `1,234,567`.
    public static func grouped(_ v: Int) -> String {
        let s = String(v)
        var out = ""
        for (i, c) in s.reversed().enumerated() {
            if i > 0 && i % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return String(out.reversed())
    }

    /// µs as `1.23 ms`.
    public static func ms(_ us: Int64) -> String {
        let v = Double(us) / 1000
        return (v >= 100 ? String(Int(v.rounded())) : v >= 10 ? trim(v, 1) : trim(v, 2)) + " ms"
    }

    /// A fraction as `0.05%`, `5%`.
    public static func percent(_ f: Double) -> String { trim(f * 100, f < 0.01 ? 3 : 2) + "%" }

    private static func trim(_ v: Double, _ digits: Int) -> String {
        var p = 1.0
        for _ in 0..<digits { p *= 10 }
        let r = (v * p).rounded() / p
        var s = String(r)
        if s.hasSuffix(".0") { s.removeLast(2) }
        return s
    }
}

extension CapacityStep {
    /// Why the sender itself could not keep a step's rate, from its own figures, or nil when it kept up:
    /// its driver threads busy 90% of the time or more (`cpuSeconds` over `threads` × `elapsedSeconds`),
    /// or requests left waiting (`maxBacklog`, at least 10 ms of the rate per thread) while no request
    /// ever found every stream busy (`blocked` 0), which a slow target would have caused.
    public static func senderLimit(rate: Int, threads: Int, cpuSeconds: Double, elapsedSeconds: Double,
                                   maxBacklog: Int, blocked: Int) -> String? {
        if elapsedSeconds > 0 && threads > 0 {
            let busy = cpuSeconds / (Double(threads) * elapsedSeconds)
            if busy >= 0.9 {
                return "its driver thread\(threads == 1 ? " was" : "s were") busy \(Int((busy * 100).rounded()))% of the time"
            }
        }
        let threshold = Swift.max(100, rate / Swift.max(1, threads) / 100)
        if maxBacklog >= threshold && blocked == 0 {
            return "up to \(grouped(maxBacklog)) due requests waited with streams free"
        }
        return nil
    }

    /// Why the machine may have shaped a step, or nil: the host stole CPU time from it (`stealSeconds`,
    /// summed over its CPUs, /proc/stat) of 1% or more of the step's wall time (`elapsedSeconds`, warm-up
    /// included), and at least 50 ms (/proc/stat counts steal in 10 ms ticks, so a short step would
    /// otherwise be marked for one tick). A p99 objective is spoiled by 1% of the requests: on a 2-vCPU
    /// VM, steps with 100-420 ms of steal in 7 s missed p99 < 1 ms at 20k rps, steps with 50 ms or less
    /// at the same rate held.
    public static func machineLimit(stealSeconds: Double, elapsedSeconds: Double) -> String? {
        guard elapsedSeconds > 0, stealSeconds >= Swift.max(0.05, 0.01 * elapsedSeconds) else { return nil }
        return "the host stole \(Int((stealSeconds * 1000).rounded())) ms of CPU time in \(String(format: "%.1f", elapsedSeconds)) s"
    }

    private static func grouped(_ v: Int) -> String { CapacitySearch.grouped(v) }
}
