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
    /// Responses in the last whole second (0: its percentiles mean nothing).
    public let lastCount = Atomic<Int>(0)
    /// Whole seconds finished (bumped after lastP50/lastP99 are stored).
    public let seconds = Atomic<Int>(0)
    /// Connections connected now (stored by the driver thread's housekeeping, a few times a second).
    public let connections = Atomic<Int>(0)
    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS as last received, 0 when none was.
    public let peerStreamLimit = Atomic<Int>(0)
    /// With ``LoadConfiguration/measuresBusy``: when (monotonic ns) the loop's idle time was last read, and
    /// that idle time (ns since the loop started); taken together, so a reader gets a matching pair.
    public let idle = Mutex<(sampledAt: Int, idle: Int)>((0, 0))
    /// Creates zeroed counters.
    public init() {}
}

/// The seconds one driver thread closed, handed to the main thread as they close (once a second, off
/// the per-request path): the main thread takes them every few milliseconds and merges the threads'
/// seconds, so no thread keeps its seconds until the run ends.
///
/// A second travels with its histograms as they are, copied into a spare pair; the main thread encodes
/// them (``take()``), zeroes them and gives them back as the next spare. Encoding is a scan of every
/// bucket and a zlib stream: on the driver thread, every request falling due meanwhile would wait it
/// out and carry it in its latency.
public final class IntervalOutbox: Sendable {
    private struct State: @unchecked Sendable {
        // Whoever holds a histogram here or in a ``ClosedSecond`` is its only user.
        var closed: [ClosedSecond] = []
        var spares: [(HdrHistogram, HdrHistogram)] = []
        var ended = false
    }
    private let state: Mutex<State>
    /// The error answers of the thread's last seconds, by reason.
    public let failures = SecondFailures()

    /// An empty outbox with one spare pair of latency histograms.
    public init() {
        var s = State()
        s.closed.reserveCapacity(4)
        s.spares.reserveCapacity(2)
        s.spares.append((HdrHistogram.latencyMicroseconds(), HdrHistogram.latencyMicroseconds()))
        state = Mutex(s)
    }

    /// Hands over a copy of `latency` and `serviceTime` with the second's counts; the caller may zero
    /// its own at once. A pair is made only when the main thread has not given the last one back.
    func put(second: Int, sent: Int64, completed: Int64, succeeded: Int64, failed: Int64, transportErrors: Int64,
             latency: HdrHistogram, serviceTime: HdrHistogram) {
        let spare = state.withLock { $0.spares.popLast() }
        let (l, t) = spare ?? (latency.emptyCopy(), serviceTime.emptyCopy())
        l.add(latency)
        t.add(serviceTime)
        let closed = ClosedSecond(second: second, sent: sent, completed: completed, succeeded: succeeded, failed: failed,
                                  transportErrors: transportErrors, latency: l, serviceTime: t)
        state.withLock { $0.closed.append(closed) }
    }

    func end() {
        state.withLock { $0.ended = true }
    }

    /// The seconds closed since the last call, in order, and whether the thread will close no more
    /// (true only once every second it closed has been taken). Encodes their histograms on the
    /// calling thread.
    public func take() -> (intervals: [TimelineInterval], ended: Bool) {
        let (closed, ended) = state.withLock { s in
            let out = s.closed
            s.closed.removeAll(keepingCapacity: true)
            return (out, s.ended)
        }
        if closed.isEmpty { return ([], ended) }
        let intervals = closed.map { c in
            TimelineInterval(second: c.second, sent: c.sent, completed: c.completed, succeeded: c.succeeded, failed: c.failed,
                             transportErrors: c.transportErrors, latency: c.latency, serviceTime: c.serviceTime)
        }
        for c in closed {
            c.latency.reset()
            c.serviceTime.reset()
        }
        state.withLock { s in
            for c in closed where s.spares.count < 2 { s.spares.append((c.latency, c.serviceTime)) }
        }
        return (intervals, ended)
    }
}

/// One closed second on its way from a driver thread to the main thread, histograms not yet encoded.
private struct ClosedSecond {
    var second: Int
    var sent: Int64, completed: Int64, succeeded: Int64, failed: Int64, transportErrors: Int64
    var latency: HdrHistogram
    var serviceTime: HdrHistogram
}

/// Everything one driver thread measured: counts per phase, the measured histograms and its seconds.
/// Made on the driver thread; handed to the main thread when the driver is done.
///
/// Two clocks of seconds run side by side: the timeline (timeline.csv, latency.hlog) counts measured
/// requests only, in seconds from the start of the measured phase, so it agrees with summary.json; the
/// live figures of the progress line count every response, in seconds from t0 (warm-up included).
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
    /// Per-second records of the measured phase, in order, waiting for the main thread.
    public let outbox: IntervalOutbox
    /// Live figures for the progress display.
    public let live: LiveCounters

    // Timeline second being filled (measured requests only).
    private let intervalLatency = HdrHistogram.latencyMicroseconds()
    private let intervalService = HdrHistogram.latencyMicroseconds()
    private var second = 0
    private var secSent: Int64 = 0, secCompleted: Int64 = 0, secOK: Int64 = 0, secFailed: Int64 = 0, secErrors: Int64 = 0
    // The second's error answers by reason index, and by status where there was no reason.
    private var secByReason = [Int](repeating: 0, count: Reasons.count)
    private var secByStatus = [Int](repeating: 0, count: 600)
    private var measureStartNs: UInt64 = .max
    private var nextSecondNs: UInt64 = .max
    // Live second (all responses).
    private let liveInterval = HdrHistogram.latencyMicroseconds()
    private var nextLiveSecondNs: UInt64 = .max
    private var liveSeconds = 0
    private var liveSent = 0, liveCompleted = 0, liveErrors = 0

    /// A recorder publishing live figures to `live` and its closed seconds to `outbox`.
    public init(live: LiveCounters = LiveCounters(), outbox: IntervalOutbox = IntervalOutbox()) {
        self.live = live
        self.outbox = outbox
    }

    func begin(at start: UInt64, measurementStart: UInt64) {
        measureStartNs = measurementStart
        nextSecondNs = measurementStart + 1_000_000_000
        nextLiveSecondNs = start + 1_000_000_000
    }

    @inline(__always) private func roll(_ now: UInt64) {
        if now >= nextLiveSecondNs { closeLiveSeconds(now) }
        if now >= nextSecondNs { closeSeconds(now) }
    }

    private func closeLiveSeconds(_ now: UInt64) {
        live.lastCount.store(Int(liveInterval.totalCount), ordering: .relaxed)
        if liveInterval.totalCount > 0 {
            live.lastP50.store(Int(liveInterval.valueAtPercentile(50)), ordering: .relaxed)
            live.lastP99.store(Int(liveInterval.valueAtPercentile(99)), ordering: .relaxed)
        } else {
            live.lastP50.store(0, ordering: .relaxed)
            live.lastP99.store(0, ordering: .relaxed)
        }
        liveInterval.reset()
        while now >= nextLiveSecondNs {
            nextLiveSecondNs += 1_000_000_000
            liveSeconds += 1
        }
        live.seconds.store(liveSeconds, ordering: .releasing)
    }

    private func closeSeconds(_ now: UInt64) {
        while now >= nextSecondNs {
            closeSecond()
            nextSecondNs += 1_000_000_000
        }
    }

    private func closeSecond() {
        // Before the second itself: by the time the main thread has it, its failures are there.
        outbox.failures.put(second: second, byReason: secByReason, byStatus: secByStatus, any: secFailed > 0)
        if secFailed > 0 {
            for i in secByReason.indices { secByReason[i] = 0 }
            for i in secByStatus.indices { secByStatus[i] = 0 }
        }
        outbox.put(second: second, sent: secSent, completed: secCompleted, succeeded: secOK, failed: secFailed,
                   transportErrors: secErrors, latency: intervalLatency, serviceTime: intervalService)
        intervalLatency.reset()
        intervalService.reset()
        secSent = 0; secCompleted = 0; secOK = 0; secFailed = 0; secErrors = 0
        second += 1
    }

    @inline(__always) func recordSent(_ phase: Phase, at now: UInt64) {
        roll(now)
        tallies[phase.rawValue].sent += 1
        if phase == .measured { secSent += 1 }
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
            intervalLatency.recordNanoseconds(latencyNs)
            intervalService.recordNanoseconds(serviceNs)
            secCompleted += 1
            if ok {
                secOK += 1
            } else {
                secFailed += 1
                if reason > 0 { secByReason[reason] += 1 } else { secByStatus[status >= 0 && status < 600 ? status : 0] += 1 }
            }
        }
        liveInterval.recordNanoseconds(latencyNs)
        if !ok { liveErrors += 1; live.errors.store(liveErrors, ordering: .relaxed) }
        liveCompleted += 1
        live.completed.store(liveCompleted, ordering: .relaxed)
    }

    @inline(__always) func recordTransportError(_ phase: Phase, cause: TransportErrorCause, at now: UInt64) {
        roll(now)
        tallies[phase.rawValue].transportErrors += 1
        tallies[phase.rawValue].transportErrorsByCause[cause.rawValue] += 1
        if phase == .measured { secErrors += 1 }
        liveErrors += 1
        live.errors.store(liveErrors, ordering: .relaxed)
    }

    func tick(at now: UInt64, inFlight: Int, backlog: Int) {
        roll(now)
        live.inFlight.store(inFlight, ordering: .relaxed)
        live.backlog.store(backlog, ordering: .relaxed)
    }

    func end(at now: UInt64) {
        roll(now)
        // The last, partial second is kept when anything happened in it.
        if now >= measureStartNs && (secSent > 0 || secCompleted > 0 || secErrors > 0) { closeSecond() }
        outbox.end()
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
    /// What TLS settled, e.g. `TLSv1.3 h2` (nil over h2c).
    public var tls: String?
    /// Responses in the last whole second of every thread: 0 means the percentiles above say nothing.
    public var lastSecondCompleted = 0
    /// Connections connected, over every thread.
    public var connections = 0
    /// The lowest stream limit a peer announced, over every thread; nil when none did.
    public var peerStreamLimit: Int?
    /// With ``LoadConfiguration/measuresBusy``: the threads' last idle readings added up (the times they
    /// were read, and the idle time then, ns); the busy share between two snapshots is
    /// 1 − Δidle / ΔsampledAt.
    public var idleSampledAt = 0
    /// See ``idleSampledAt``.
    public var idleNanoseconds = 0

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
            lastSecondCompleted += c.lastCount.load(ordering: .relaxed)
            connections += c.connections.load(ordering: .relaxed)
            let limit = c.peerStreamLimit.load(ordering: .relaxed)
            if limit > 0 { peerStreamLimit = min(peerStreamLimit ?? limit, limit) }
            let idle = c.idle.withLock { $0 }
            idleSampledAt += idle.sampledAt
            idleNanoseconds += idle.idle
        }
    }
}
