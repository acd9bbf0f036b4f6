import Foundation
import PushMetrics
import PushPayload
import PushTransport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// State shared by the main thread and the driver threads: start barrier, stop flag, live counters.
final class SharedRunState: Sendable {
    let live: [LiveCounters]
    /// Threads whose connections are up (or could not be reached).
    let ready = Atomic<Int>(0)
    let unreachable = Atomic<Int>(0)
    /// t0 for every thread (0 until the main thread sets it).
    let startNs = Atomic<UInt64>(0)
    /// Set by the main thread on Ctrl-C (or when a thread could not connect).
    let stop = Atomic<Bool>(false)
    let finished = Atomic<Int>(0)
    /// Set by a driver thread that pruned every token (it also sets `stop`, so the others stop too).
    let tokensExhausted = Atomic<Bool>(false)
    let firstError = Mutex<String?>(nil)
    let results: [ResultSlot]

    init(threads: Int) {
        live = (0..<threads).map { _ in LiveCounters() }
        results = (0..<threads).map { _ in ResultSlot() }
    }
}

/// What one driver thread hands back. Written once by its thread before it bumps `finished` (release),
/// read by the main thread after seeing `finished` reach the thread count (acquire): the atomic orders
/// the accesses, which the compiler cannot see, hence @unchecked.
final class ResultSlot: @unchecked Sendable {
    var recorder: Recorder?
    var cpuUser = 0.0, cpuSystem = 0.0
    /// Times the scheduler preempted this thread (rusage ru_nivcsw).
    var involuntarySwitches = 0
    var maxBacklog = 0, blocked = 0, maxInFlight = 0
    var lastMeasuredSendNs: UInt64 = 0
    var measureStartNs: UInt64 = 0
    var opened = 0, goaways = 0, lost = 0, connectFailures = 0
    var peerMaxStreamsLowest = Int.max, peerMaxStreamsLatest = 0
    /// This thread's pruned-token bitset (empty when pruning is off).
    var pruned: [UInt64] = []
}

/// One driver thread: an event loop, a connection pool, a pacing timer and the ``DriverCore``.
final class DriverThread {
    private enum State { case connecting, waiting, running, done }

    private let config: LoadConfiguration
    private let index: Int
    private let shared: SharedRunState
    private let loop: EventLoop
    private let core: DriverCore
    private var pool: ConnectionPool!
    private var pacing: PreciseTimer!
    private var housekeeping: LoopTimer!
    private var state = State.connecting
    private var armedDeadline: UInt64 = 0
    private var periodic = false
    private var periodNs: UInt64 = 0
    private var drainDeadline: UInt64 = 0
    private let connectDeadline: UInt64

    init(config: LoadConfiguration, index: Int, shared: SharedRunState) throws {
        self.config = config
        self.index = index
        self.shared = shared
        loop = try EventLoop()
        let plan = DriverPlan(rate: config.rate, threads: config.threads, thread: index, warmupNs: config.warmupNs,
                              durationNs: config.durationNs, requests: config.requests, retries: config.retries,
                              capacity: config.connections * config.streams)
        core = DriverCore(plan: plan, clock: MonotonicClock.shared, recorder: Recorder(live: shared.live[index]))
        connectDeadline = MonotonicClock.nanoseconds() + config.connectTimeoutMilliseconds * 1_000_000 + 500_000_000
        pool = try ConnectionPool(loop: loop, config: config, core: core, thread: index) { [unowned self] in self.pump() }
        core.attach(pool)
        pool.onResponse = { [unowned self] in self.responded() }
        pacing = try PreciseTimer(loop: loop) { [unowned self] _ in
            if !self.periodic { self.armedDeadline = 0 }
            self.pump()
        }
        housekeeping = LoopTimer(loop: loop) { [unowned self] in self.tick() }
    }

    /// Runs the thread's loop until its part of the run is over, then fills its result slot.
    func run() {
        pool.connectAll()
        housekeeping.start(afterMilliseconds: 1, repeatMilliseconds: 1)
        loop.run()
        // Every object holding a libuv handle is released before the loop closes (their deinit closes the
        // handle, which must not happen after EventLoop.close()); then the close callbacks run.
        pacing = nil
        housekeeping = nil
        pool.release()
        pool = nil
        loop.run(until: { false }, timeoutNanoseconds: 20_000_000)
        loop.close()
    }

    // A response frees a stream. While the pacing timer is armed nothing waits for a stream (the last pump
    // sent everything due), so the timer's next wakeup sends what falls due meanwhile, all in one batch
    // per wakeup. Pumping here as well would send each request as it falls due, between wakeups: one
    // writev here and one read + writev at the target per request, at 50k rps twice the syscalls and
    // the CPU of batching per wakeup, for at most one quantum less lateness. With no timer armed (a
    // request waits for a stream, retries are queued, the closed loop) the freed stream is refilled now.
    @inline(__always) private func responded() {
        if armedDeadline == 0 { pump() }
    }

    @inline(__always) private func pump() {
        guard state == .running else { return }
        let next = core.pump()
        pool.endBatch()
        if periodic {
            // Blocked (every stream busy) or done: no point waking every interval; a response that frees a
            // stream pumps again, and the timer restarts at the next intended time, in phase with the schedule.
            if let next {
                if armedDeadline == 0 {
                    armedDeadline = next
                    pacing.start(firstDeadline: next, intervalNanoseconds: periodNs)
                }
            } else if armedDeadline != 0 {
                armedDeadline = 0
                pacing.stop()
            }
        } else if let next, next != armedDeadline {
            armedDeadline = next
            pacing.start(firstDeadline: next, intervalNanoseconds: 0)
        }
    }

    private func tick() {
        let now = MonotonicClock.nanoseconds()
        switch state {
        case .connecting:
            if pool.initialConnected > 0 {
                state = .waiting
                shared.ready.add(1, ordering: .acquiringAndReleasing)
            } else if pool.initialFailed >= config.connections || now > connectDeadline {
                shared.firstError.withLock { e in
                    if e == nil { e = pool.firstError ?? "\(config.host):\(config.port): no HTTP/2 connection" }
                }
                shared.unreachable.add(1, ordering: .acquiringAndReleasing)
                finish(started: false)
            }
        case .waiting:
            if shared.stop.load(ordering: .acquiring) { finish(started: false); return }
            let t0 = shared.startNs.load(ordering: .acquiring)
            guard t0 != 0 else { return }
            core.begin(at: t0)
            state = .running
            if let rate = config.rate {
                // A periodic timerfd needs no re-arming per request when the thread's interval is a whole
                // number of ns (50k rps: 20 µs); otherwise each deadline is armed exactly, one shot.
                let perThread = UInt64(config.threads) * 1_000_000_000
                let interval = perThread / UInt64(rate)
                let quantum = config.effectiveQuantumNs(perThreadRate: Double(rate) / Double(config.threads))
                if quantum > interval {
                    periodic = true
                    periodNs = quantum
                } else if perThread % UInt64(rate) == 0 {
                    periodic = true
                    periodNs = interval
                }
            }
            pump()
        case .running:
            if shared.stop.load(ordering: .relaxed) && !core.stopped {
                core.stop()
                drainDeadline = now + min(config.drainTimeoutNs, 1_000_000_000)
            }
            if pool.tokensExhausted && !shared.tokensExhausted.load(ordering: .relaxed) {
                // Nothing left to send to: this thread's core is stopped; stop the others as well.
                shared.tokensExhausted.store(true, ordering: .relaxed)
                shared.stop.store(true, ordering: .releasing)
            }
            if core.stopped && drainDeadline == 0 { drainDeadline = now + min(config.drainTimeoutNs, 1_000_000_000) }
            let busy = core.tick()
            // An overloaded target leaves a backlog behind the schedule; it is sent for at most the drain
            // timeout after the schedule's end, then counted `not_sent`, so a 10 s run stays near 10 s.
            if drainDeadline == 0, let pacer = core.pacer {
                let last = pacer.intendedTime(global: max(0, core.plan.totalRequests - 1))
                if now > last && now - last > config.drainTimeoutNs { drainDeadline = now }
            }
            if !core.generating && drainDeadline == 0 {
                drainDeadline = now + config.drainTimeoutNs
                if periodic { pacing.stop(); armedDeadline = 0 }
            }
            if !busy || (drainDeadline != 0 && now >= drainDeadline) {
                finish(started: true)
                return
            }
            pump()
        case .done:
            break
        }
    }

    private func finish(started: Bool) {
        guard state != .done else { return }
        if started { core.finish() } else { core.recorder.end(at: MonotonicClock.nanoseconds()) }
        state = .done
        pacing.stop()
        housekeeping.stop()
        pool.closeAll()
        var usage = rusage()
        getrusage(__rusage_who_t(1), &usage)  // RUSAGE_THREAD (Linux; not exported to Swift)
        let slot = shared.results[index]
        slot.recorder = core.recorder
        slot.cpuUser = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        slot.cpuSystem = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        slot.involuntarySwitches = Int(usage.ru_nivcsw)
        slot.maxBacklog = core.maxBacklog
        slot.maxInFlight = core.maxInFlight
        slot.blocked = core.recorder.blocked
        slot.lastMeasuredSendNs = core.lastMeasuredSendNs
        slot.measureStartNs = core.measurementStartNs
        slot.opened = pool.opened; slot.goaways = pool.goaways; slot.lost = pool.lost
        slot.connectFailures = pool.connectFailures
        slot.peerMaxStreamsLowest = pool.peerMaxStreamsLowest; slot.peerMaxStreamsLatest = pool.peerMaxStreamsLatest
        if config.pruneGoneTokens {
            slot.pruned = Array(UnsafeBufferPointer(start: pool.prunedBits, count: pool.prunedWords))
        }
        shared.finished.add(1, ordering: .acquiringAndReleasing)
        loop.stop()
    }
}

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
    /// Per-second intervals of every thread (merged by second by the writer).
    public var intervals: [TimelineInterval]
    /// Length of the measured phase in seconds (denominator of the achieved rate).
    public var measuredSeconds: Double
    /// Wall-clock time at the start of the measured phase.
    public var measuredStart: Date
    /// CPU seconds of the driver threads (the client), user and system.
    public var cpuUser: Double, cpuSystem: Double
    /// CPU time stolen by the hypervisor from all CPUs between t0 and the end (nil: not measurable here).
    public var stealSeconds: Double? = nil
    /// Times the scheduler preempted a driver thread, all threads.
    public var involuntarySwitches = 0
    /// 1-minute load average when the run started (nil: not measurable here).
    public var loadAverageAtStart: Double? = nil
    /// Deepest backlog (due requests waiting for a stream) of any thread.
    public var maxBacklog: Int
    /// Times a due request found no free stream.
    public var blocked: Int
    /// Most requests in flight at once, all threads (sum of each thread's peak).
    public var maxInFlight: Int
    /// Connections opened (reconnects included), GOAWAYs received, connections lost, failed connects.
    public var connectionsOpened: Int, goaways: Int, connectionsLost: Int, connectFailures: Int
    /// Lowest SETTINGS_MAX_CONCURRENT_STREAMS the peer announced (nil if never connected).
    public var peerMaxStreams: Int?
    /// Distinct tokens pruned by any thread (answered as gone; `LoadConfiguration.pruneGoneTokens`).
    public var prunedTokens: Int = 0
    /// Whether the run stopped early because every token was pruned.
    public var tokensExhausted: Bool = false
}

/// Why a run could not start.
public struct LoadRunError: Error, CustomStringConvertible {
    /// The reason, naming the target.
    public var description: String
    /// Whether the target could not be reached (exit status 3).
    public var unreachable: Bool
}

/// Runs a load test: starts `threads` driver threads, waits until each has a connection, starts every
/// pacer on one shared t0, shows progress once a second, and merges what the threads measured.
public enum LoadRun {
    /// Runs `config`. `progress(snapshot, elapsedSeconds)` is called about once a second on the calling
    /// thread; `shouldStop()` is polled every 50 ms (Ctrl-C). Throws when the target cannot be reached.
    public static func run(_ config: LoadConfiguration,
                           progress: (LiveSnapshot, Double) -> Void = { _, _ in },
                           shouldStop: () -> Bool = { false }) throws(LoadRunError) -> LoadResult {
        let shared = SharedRunState(threads: config.threads)
        let setupError = Mutex<String?>(nil)
        for i in 0..<config.threads {
            let thread = Thread {
                nameCurrentThread("pb-driver-\(i)")
                do {
                    let driver = try DriverThread(config: config, index: i, shared: shared)
                    driver.run()
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
        let loadAtStart = MachineNoise.loadAverage()
        let stealAtStart = MachineNoise.stealNanoseconds()
        let now = MonotonicClock.nanoseconds()
        let t0 = now + 2_000_000
        let wallT0 = Date().addingTimeInterval(Double(t0 - now) / 1e9)
        shared.startNs.store(t0, ordering: .releasing)
        var interrupted = false
        var nextReport = t0 + 1_000_000_000
        // Steal per measured second for timeline.csv, read here (never on a driver thread) at the
        // second boundaries, give or take one 20 ms poll.
        let measureStart = t0 + config.warmupNs
        var stealPerSecond: [Int64] = []
        var stealMark: UInt64?
        var nextStealBoundary = measureStart
        func sampleSteal() {
            guard let now = MachineNoise.stealNanoseconds() else { return }
            if let mark = stealMark { stealPerSecond.append(Int64(now >= mark ? (now - mark) / 1_000_000 : 0)) }
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
            if t >= nextReport {
                progress(LiveSnapshot(shared.live), Double(t - t0) / 1e9)
                nextReport += 1_000_000_000
                while nextReport <= t { nextReport += 1_000_000_000 }
            }
        }

        var result = LoadResult(
            interrupted: interrupted, measured: Tally(), warmup: Tally(), latency: .latencyMicroseconds(),
            serviceTime: .latencyMicroseconds(), intervals: [], measuredSeconds: 0,
            measuredStart: wallT0.addingTimeInterval(Double(config.warmupNs) / 1e9), cpuUser: 0, cpuSystem: 0,
            maxBacklog: 0, blocked: 0, maxInFlight: 0, connectionsOpened: 0, goaways: 0, connectionsLost: 0, connectFailures: 0,
            peerMaxStreams: nil)
        result.tokensExhausted = shared.tokensExhausted.load(ordering: .acquiring)
        result.loadAverageAtStart = loadAtStart
        if let a = stealAtStart, let b = MachineNoise.stealNanoseconds(), b >= a { result.stealSeconds = Double(b - a) / 1e9 }
        if stealMark != nil { sampleSteal() }  // the last, partial second
        var prunedUnion: [UInt64] = []
        var lastSend: UInt64 = 0
        for slot in shared.results {
            guard let r = slot.recorder else { continue }
            result.measured.merge(r.measured)
            result.warmup.merge(r.warmup)
            result.latency.add(r.latency)
            result.serviceTime.add(r.serviceTime)
            result.intervals += r.intervals
            result.cpuUser += slot.cpuUser
            result.cpuSystem += slot.cpuSystem
            result.involuntarySwitches += slot.involuntarySwitches
            result.maxBacklog = max(result.maxBacklog, slot.maxBacklog)
            result.blocked += slot.blocked
            result.maxInFlight += slot.maxInFlight
            result.connectionsOpened += slot.opened
            result.goaways += slot.goaways
            result.connectionsLost += slot.lost
            result.connectFailures += slot.connectFailures
            if slot.peerMaxStreamsLowest != Int.max {
                result.peerMaxStreams = min(result.peerMaxStreams ?? Int.max, slot.peerMaxStreamsLowest)
            }
            lastSend = max(lastSend, slot.lastMeasuredSendNs)
            if prunedUnion.isEmpty { prunedUnion = slot.pruned } else {
                for i in 0..<min(prunedUnion.count, slot.pruned.count) { prunedUnion[i] |= slot.pruned[i] }
            }
        }
        result.prunedTokens = prunedUnion.reduce(0) { $0 + $1.nonzeroBitCount }
        for k in result.intervals.indices where result.intervals[k].second < stealPerSecond.count {
            result.intervals[k].stealMs = stealPerSecond[result.intervals[k].second]
        }
        // Open loop over a duration: the measured phase is the schedule's length, or longer when the last
        // measured request went out late. Closed loop and --requests: from the start to the last send.
        let sendSpan = lastSend > measureStart ? Double(lastSend - measureStart) / 1e9 : 0
        if config.requests == nil {
            let nominal = Double(config.durationNs) / 1e9
            result.measuredSeconds = interrupted || result.tokensExhausted ? sendSpan : max(nominal, sendSpan)
        } else if let rate = config.rate, let n = config.requests {
            result.measuredSeconds = max(Double(n) / Double(rate), sendSpan)
        } else {
            result.measuredSeconds = sendSpan
        }
        return result
    }
}
