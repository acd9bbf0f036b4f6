import Foundation
import PushMetrics
import PushTransport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The outcome of a load run, all driver threads merged.
public struct LoadResult {
    /// Whether the run was stopped early (Ctrl-C).
    public var interrupted: Bool
    /// Measured counts.
    public var measured: Tally
    /// Warm-up counts.
    public var warmup: Tally
    /// Corrected latency, µs, measured phase.
    public var latency: HdrHistogram
    /// Service time, µs, measured phase.
    public var serviceTime: HdrHistogram
    /// Per-second intervals, merged by second, when the run kept them in memory (no timeline sink);
    /// empty when they were streamed to a ``TimelineSink``.
    public var intervals: [TimelineInterval]
    /// Length of the measured phase in seconds (denominator of the achieved rate).
    public var measuredSeconds: Double
    /// Wall-clock time at the start of the measured phase.
    public var measuredStart: Date
    /// What the driver threads measured of their own sending: CPU, backlog, in-flight peak,
    /// connections, pruned tokens.
    public var stats = DriverStats()
    /// CPU time stolen by the hypervisor from all CPUs between t0 and the end (nil: not measurable here).
    public var stealSeconds: Double? = nil
    /// 1-minute load average when the run started (nil: not measurable here).
    public var loadAverageAtStart: Double? = nil
    /// Whether the run stopped early because every token was pruned.
    public var tokensExhausted: Bool = false
    /// t0, the start of the schedule (warm-up included), in ns since the Unix epoch: `--start-at` exactly
    /// when it was given.
    public var t0UnixNs: Int64 = 0
    /// t0 on the monotonic clock (``MonotonicClock``), for what is timed after the run.
    public var t0Ns: UInt64 = 0
    /// How long after t0 this process's first request went out, and how late it was against its intended
    /// time, in ns (nil when nothing was sent, or in a closed loop): with a start time shared by several
    /// agents, how far this one's clock and start-up were behind the global schedule.
    public var firstSend: (afterT0Ns: Int64, lateNs: Int64)?

    /// Nothing measured yet; the measured phase starts at `measuredStart`.
    init(measuredStart: Date) {
        interrupted = false
        measured = Tally()
        warmup = Tally()
        latency = .latencyMicroseconds()
        serviceTime = .latencyMicroseconds()
        intervals = []
        measuredSeconds = 0
        self.measuredStart = measuredStart
    }

    /// Adds what more driver threads measured: their counts, histograms, per-second intervals and
    /// figures. `concurrent`: they ran beside those already here (the threads of one run), not after
    /// them (the rounds of an A/B variant).
    mutating func merge(measured m: Tally, warmup w: Tally, latency l: HdrHistogram, serviceTime s: HdrHistogram,
                        intervals i: [TimelineInterval], stats d: DriverStats, concurrent: Bool) {
        measured.merge(m)
        warmup.merge(w)
        latency.add(l)
        serviceTime.add(s)
        intervals += i
        stats.merge(d, concurrent: concurrent)
    }
}

/// Why a run could not start.
public struct LoadRunError: Error, CustomStringConvertible {
    /// The reason, naming the target.
    public var description: String
    /// Whether the target could not be reached (exit status 3).
    public var unreachable: Bool
    /// Whether the input was at fault (exit status 2): a start time that passed while connecting.
    public var badInput = false

    /// An error; see the properties.
    public init(description: String, unreachable: Bool, badInput: Bool = false) {
        self.description = description
        self.unreachable = unreachable
        self.badInput = badInput
    }
}

/// Runs a load test: starts `threads` driver threads, waits until each has a connection, starts every
/// pacer on one shared t0, shows progress once a second, and merges what the threads measured.
public enum LoadRun {
    /// Runs `config`. `progress(snapshot, elapsedSeconds)` is called about once a second on the calling
    /// thread; `shouldStop()` is polled every 50 ms (Ctrl-C). Throws when the target cannot be reached.
    ///
    /// `timeline(measuredStart)` is called once, when the start time is set: the sink it returns takes
    /// each merged second as it closes (streamed to the run folder, so a long run's memory stays flat);
    /// without one, the seconds are kept in ``LoadResult/intervals``.
    public static func run(_ config: LoadConfiguration,
                           timeline: (Date) -> TimelineSink? = { _ in nil },
                           progress: (LiveSnapshot, Double) -> Void = { _, _ in },
                           shouldStop: () -> Bool = { false },
                           poll: ((_ t0: UInt64) -> Void)? = nil) throws(LoadRunError) -> LoadResult {
        let shared = SharedRunState(threads: config.threads)
        let setupError = Mutex<String?>(nil)
        for i in 0..<config.threads {
            let thread = Thread {
                nameCurrentThread("pb-driver-\(i)")
                do {
                    if config.realtime, let refusal = moveCurrentThreadToRealtimePriority() {
                        throw LoadRunError(description: "cannot run real-time (SCHED_FIFO): \(refusal)", unreachable: false)
                    }
                    switch config.pushProtocol {
                    case _ where config.frontDoor != nil && config.http1:
                        try DriverThread<HTTP1ConnectionPool>(config: config, index: i, shared: shared).run()
                    case _ where config.frontDoor != nil:
                        try DriverThread<ConnectionPool<FrontDoorRequestBuilder>>(config: config, index: i, shared: shared).run()
                    case .apns: try DriverThread<ConnectionPool<APNsRequestBuilder>>(config: config, index: i, shared: shared).run()
                    case .fcm where config.http1: try DriverThread<HTTP1ConnectionPool>(config: config, index: i, shared: shared).run()
                    case .fcm: try DriverThread<ConnectionPool<FCMRequestBuilder>>(config: config, index: i, shared: shared).run()
                    }
                } catch {
                    setupError.withLock { $0 = $0 ?? "driver thread \(i): \(error)" }
                    shared.unreachable.add(1, ordering: .acquiringAndReleasing)
                    shared.finished.add(1, ordering: .acquiringAndReleasing)
                }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        func waitAll() {
            while shared.finished.load(ordering: .acquiring) < config.threads { usleep(2_000) }
        }
        // Start barrier: every thread connected (or gave up).
        while shared.ready.load(ordering: .acquiring) + shared.unreachable.load(ordering: .acquiring) < config.threads {
            if shouldStop() { shared.stop.store(true, ordering: .releasing) }
            usleep(1_000)
        }
        if shared.unreachable.load(ordering: .acquiring) > 0 || shared.stop.load(ordering: .acquiring) {
            shared.stop.store(true, ordering: .releasing)
            waitAll()
            if let e = setupError.withLock({ $0 }) { throw LoadRunError(description: e, unreachable: false) }
            let message = shared.firstError.withLock { $0 } ?? "interrupted before the run started"
            throw LoadRunError(description: message, unreachable: !shouldStop())
        }
        let loadAtStart = HostProbe.loadAverage()
        let stealAtStart = HostProbe.stealNanoseconds()
        var t0 = MonotonicClock.nanoseconds() + 2_000_000
        var t0Unix = WallClock.unixNanoseconds() + 2_000_000
        if let at = config.startAtUnixNs {
            // Every agent given the same instant starts its part of the one schedule from it; a start that
            // passed while connecting is refused unless asked for, and then the schedule is kept (the
            // requests due since go out at once, their latency counted from their intended times).
            let late = WallClock.unixNanoseconds() - at
            if late > 0 && !config.startLateOK {
                shared.stop.store(true, ordering: .releasing)
                waitAll()
                throw LoadRunError(description: "--start-at: the start time passed \(late / 1_000_000) ms ago, before every "
                                   + "connection was up (give a later time, or --start-late-ok to keep the schedule and count the lateness)",
                                   unreachable: false, badInput: true)
            }
            t0 = WallClock.monotonic(atUnixNanoseconds: at)
            t0Unix = at
        }
        let wallT0 = Date(timeIntervalSince1970: Double(t0Unix) / 1e9)
        let measuredStart = wallT0.addingTimeInterval(Double(config.warmupNs) / 1e9)
        let collector = TimelineCollector(outboxes: shared.outboxes, target: ScheduleTarget(config), sink: timeline(measuredStart))
        config.requestLog?.start(t0: t0)
        shared.startNs.store(t0, ordering: .releasing)
        var interrupted = false
        var nextReport = t0 + 1_000_000_000
        // Steal per measured second for timeline.csv, read here (never on a driver thread) at the
        // second boundaries, give or take one 20 ms poll.
        let measureStart = t0 + config.warmupNs
        var stealMark: UInt64?
        var nextStealBoundary = measureStart
        func sampleSteal() {
            guard let now = HostProbe.stealNanoseconds() else { return }
            if let mark = stealMark {
                collector.addSteal(Int64(now >= mark ? (now - mark) / 1_000_000 : 0))
            } else {
                collector.startSteal()
            }
            stealMark = now
        }
        while shared.finished.load(ordering: .acquiring) < config.threads {
            usleep(20_000)
            if !interrupted && shouldStop() {
                interrupted = true
                shared.stop.store(true, ordering: .releasing)
            }
            let t = MonotonicClock.nanoseconds()
            while t >= nextStealBoundary {
                sampleSteal()
                nextStealBoundary += 1_000_000_000
            }
            collector.collect()
            poll?(t0)
            if t >= nextReport && t >= t0 {
                var snapshot = LiveSnapshot(shared.live)
                snapshot.tls = shared.tls.withLock { $0 }
                progress(snapshot, Double(t - t0) / 1e9)
                nextReport += 1_000_000_000
                while nextReport <= t { nextReport += 1_000_000_000 }
            }
        }

        var result = LoadResult(measuredStart: measuredStart)
        result.interrupted = interrupted
        result.tokensExhausted = shared.tokensExhausted.load(ordering: .acquiring)
        result.loadAverageAtStart = loadAtStart
        result.t0UnixNs = t0Unix
        result.t0Ns = t0
        if let a = stealAtStart, let b = HostProbe.stealNanoseconds(), b >= a { result.stealSeconds = Double(b - a) / 1e9 }
        if stealMark != nil { sampleSteal() }  // the last, partial second
        collector.collect(final: true)
        result.intervals = collector.kept
        var lastSend: UInt64 = 0
        var first: (intended: UInt64, sent: UInt64)?
        var end: UInt64 = 0
        for slot in shared.results {
            guard let r = slot.recorder else { continue }
            result.merge(measured: r.measured, warmup: r.warmup, latency: r.latency, serviceTime: r.serviceTime,
                         intervals: [], stats: slot.stats, concurrent: true)
            lastSend = max(lastSend, slot.lastMeasuredSendNs)
            if slot.firstSend.sent != 0 && slot.firstSend.sent < first?.sent ?? .max { first = slot.firstSend }
            end = max(end, slot.endNs)
        }
        if let first {
            result.firstSend = (Int64(first.sent) - Int64(t0), Int64(first.sent) - Int64(first.intended))
        }
        // Open loop over a duration: the measured phase is the schedule's length, or longer when the last
        // measured request went out late. Closed loop and --requests: from the start to the last send.
        // A run stopped early (a signal, every token gone) measured until it ended, its drain included:
        // the answers it counts arrived until then, even when a stalled target took the sends' time away.
        let sendSpan = lastSend > measureStart ? Double(lastSend - measureStart) / 1e9 : 0
        let endSpan = end > measureStart ? Double(end - measureStart) / 1e9 : 0
        if interrupted || result.tokensExhausted {
            result.measuredSeconds = max(sendSpan, endSpan)
        } else if config.requests == nil {
            let nominal = Double(config.durationNs) / 1e9
            result.measuredSeconds = max(nominal, sendSpan)
        } else if let rate = config.rate, let n = config.requests {
            result.measuredSeconds = max(Double(n) / Double(rate), sendSpan)
        } else {
            result.measuredSeconds = sendSpan
        }
        return result
    }
}

extension LoadResult {
    /// Whether this open-loop run kept `targetRPS`, this process's share of the rate (nil for a closed
    /// loop, and for a run that stopped early, whose schedule was cut short on purpose). Not kept when fewer than
    /// ``RateOutcome/keptFraction`` of the scheduled requests went out per second, or a due request was
    /// never sent, or the answers came back slower than that; the shortfall names what held it back.
    public func rateOutcome(targetRPS: Double?) -> RateOutcome? {
        guard let rate = targetRPS, rate > 0, measuredSeconds > 0, !interrupted, !tokensExhausted else { return nil }
        let sentRPS = Double(measured.sent) / measuredSeconds
        let answeredRPS = Double(measured.completed) / measuredSeconds
        let goal = rate * RateOutcome.keptFraction
        let c = stats.connections
        let shortfall: RateOutcome.Shortfall?
        if sentRPS < goal || measured.notSent > 0 {
            // A target that went away leaves no stream to send on: that is the target, not the streams.
            if c.lost > 0 || c.connectFailures > 0 {
                shortfall = .target
            } else {
                shortfall = stats.blocked > 0 ? .streams : .sender
            }
        } else if answeredRPS < goal {
            shortfall = .target
        } else {
            shortfall = nil
        }
        return RateOutcome(sentRPS: sentRPS, shortfall: shortfall)
    }
}
