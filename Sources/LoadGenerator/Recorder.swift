import PushMetrics
import Synchronization

/// Live figures of one driver thread, written by the driver (relaxed atomic stores) and read once a
/// second by the progress display on another thread.
public final class LiveCounters: Sendable {
    /// Requests sent so far (all phases).
    public let sent = Atomic<Int>(0)
    /// Responses so far.
    public let completed = Atomic<Int>(0)
    /// Non-2xx responses plus transport errors so far.
    public let errors = Atomic<Int>(0)
    /// Requests in flight at the last tick.
    public let inFlight = Atomic<Int>(0)
    /// Backlog depth at the last tick.
    public let backlog = Atomic<Int>(0)
    /// Corrected latency of the last whole second, µs: p50 and p99 (0 when nothing completed).
    public let lastP50 = Atomic<Int>(0)
    /// See ``lastP50``.
    public let lastP99 = Atomic<Int>(0)
    /// Whole seconds finished (bumped after lastP50/lastP99 are stored).
    public let seconds = Atomic<Int>(0)
    /// Creates zeroed counters.
    public init() {}
}

/// One second of one thread's run, kept for timeline.csv and latency.hlog.
public struct SecondRecord: Sendable {
    /// Second index from t0 (warm-up included).
    public var second: Int
    /// Requests sent in this second.
    public var sent: Int = 0
    /// Responses received in this second.
    public var completed: Int = 0
    /// 2xx responses in this second.
    public var ok: Int = 0
    /// Non-2xx responses and transport errors in this second.
    public var errors: Int = 0
    /// Deepest backlog seen in this second.
    public var maxBacklog: Int = 0
    /// Corrected latencies (µs) of the responses received in this second.
    public var latency: EncodedHistogram?
}

/// Everything one driver thread measured: counts per phase, the measured histograms and its seconds.
/// Made on the driver thread; handed to the main thread when the driver is done.
public final class Recorder {
    /// Counts by phase (index ``Phase/rawValue``), changed in place: never copied on the hot path.
    public var tallies: [Tally] = [Tally(), Tally()]
    /// Warm-up counts.
    public var warmup: Tally { tallies[Phase.warmup.rawValue] }
    /// Measured counts.
    public var measured: Tally { tallies[Phase.measured.rawValue] }
    /// Corrected latency (from intended send time), µs, measured phase only.
    public let latency = HdrHistogram.latencyMicroseconds()
    /// Service time (from actual send), µs, measured phase only.
    public let serviceTime = HdrHistogram.latencyMicroseconds()
    /// Per-second records (warm-up seconds included), in order.
    public private(set) var seconds: [SecondRecord] = []
    /// Live figures for the progress display.
    public let live: LiveCounters
    /// Times the driver found no free stream for a due request.
    public private(set) var blocked = 0

    private let interval = HdrHistogram.latencyMicroseconds()
    private var current = SecondRecord(second: 0)
    private var startNs: UInt64 = 0
    private var nextSecondNs: UInt64 = .max
    private var liveSent = 0, liveCompleted = 0, liveErrors = 0

    /// A recorder publishing live figures to `live`.
    public init(live: LiveCounters = LiveCounters()) {
        self.live = live
        seconds.reserveCapacity(64)
    }

    func begin(at start: UInt64, measurementStart: UInt64) {
        startNs = start
        nextSecondNs = start + 1_000_000_000
        current = SecondRecord(second: 0)
    }

    @inline(__always) private func roll(_ now: UInt64) {
        while now >= nextSecondNs { closeSecond() }
    }

    private func closeSecond() {
        current.latency = EncodedHistogram(interval)
        if interval.totalCount > 0 {
            live.lastP50.store(Int(interval.valueAtPercentile(50)), ordering: .relaxed)
            live.lastP99.store(Int(interval.valueAtPercentile(99)), ordering: .relaxed)
        } else {
            live.lastP50.store(0, ordering: .relaxed)
            live.lastP99.store(0, ordering: .relaxed)
        }
        seconds.append(current)
        live.seconds.store(seconds.count, ordering: .releasing)
        interval.reset()
        current = SecondRecord(second: current.second + 1)
        nextSecondNs += 1_000_000_000
    }

    @inline(__always) func recordSent(_ phase: Phase, at now: UInt64) {
        roll(now)
        tallies[phase.rawValue].sent += 1
        current.sent += 1
        liveSent += 1
        live.sent.store(liveSent, ordering: .relaxed)
    }

    @inline(__always) func recordOversize(_ phase: Phase) {
        tallies[phase.rawValue].oversizeNotSent += 1
        tallies[phase.rawValue].byReason[Reasons.payloadTooLarge] += 1
    }

    @inline(__always) func recordResponse(_ phase: Phase, status: Int, reason: Int, latencyNs: UInt64, serviceNs: UInt64,
                                          at now: UInt64) {
        roll(now)
        let p = phase.rawValue
        tallies[p].completed += 1
        let ok = status >= 200 && status < 300
        if ok { tallies[p].succeeded += 1 } else { tallies[p].failed += 1 }
        tallies[p].byStatus[status >= 0 && status < 600 ? status : 0] += 1
        if reason > 0 { tallies[p].byReason[reason] += 1 }
        if phase == .measured {
            latency.recordNanoseconds(latencyNs)
            serviceTime.recordNanoseconds(serviceNs)
        }
        interval.recordNanoseconds(latencyNs)
        current.completed += 1
        if ok { current.ok += 1 } else { current.errors += 1; liveErrors += 1; live.errors.store(liveErrors, ordering: .relaxed) }
        liveCompleted += 1
        live.completed.store(liveCompleted, ordering: .relaxed)
    }

    @inline(__always) func recordTransportError(_ phase: Phase, at now: UInt64) {
        roll(now)
        tallies[phase.rawValue].transportErrors += 1
        current.errors += 1
        liveErrors += 1
        live.errors.store(liveErrors, ordering: .relaxed)
    }

    @inline(__always) func noteBlocked() { blocked += 1 }

    func tick(at now: UInt64, inFlight: Int, backlog: Int) {
        roll(now)
        if backlog > current.maxBacklog { current.maxBacklog = backlog }
        live.inFlight.store(inFlight, ordering: .relaxed)
        live.backlog.store(backlog, ordering: .relaxed)
    }

    func end(at now: UInt64) {
        roll(now)
        // The last, partial second is kept when anything happened in it.
        if current.sent > 0 || current.completed > 0 || current.errors > 0 { closeSecond() }
        live.inFlight.store(0, ordering: .relaxed)
        live.backlog.store(0, ordering: .relaxed)
    }
}

/// The live figures of every driver thread added up, for the progress line.
public struct LiveSnapshot: Sendable, Equatable {
    /// Requests sent.
    public var sent = 0
    /// Responses received.
    public var completed = 0
    /// Error responses and transport errors.
    public var errors = 0
    /// Requests in flight.
    public var inFlight = 0
    /// Requests waiting for a stream.
    public var backlog = 0
    /// Corrected latency of the last whole second, µs (the highest over threads).
    public var p50Micros = 0
    /// See ``p50Micros``.
    public var p99Micros = 0

    /// Zeroes.
    public init() {}

    /// Sums `counters`.
    public init(_ counters: [LiveCounters]) {
        for c in counters {
            sent += c.sent.load(ordering: .relaxed)
            completed += c.completed.load(ordering: .relaxed)
            errors += c.errors.load(ordering: .relaxed)
            inFlight += c.inFlight.load(ordering: .relaxed)
            backlog += c.backlog.load(ordering: .relaxed)
            _ = c.seconds.load(ordering: .acquiring)
            p50Micros = max(p50Micros, c.lastP50.load(ordering: .relaxed))
            p99Micros = max(p99Micros, c.lastP99.load(ordering: .relaxed))
        }
    }
}
