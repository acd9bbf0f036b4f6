import PushTransport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// State shared by the main thread and the driver threads: start barrier, stop flag, live counters.
final class SharedRunState: Sendable {
    let live: [LiveCounters]
    /// Each thread's closed seconds, taken by the main thread as the run goes.
    let outboxes: [IntervalOutbox]
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
    /// What the first TLS handshake settled, for the progress line (nil over h2c).
    let tls = Mutex<String?>(nil)
    let results: [ResultSlot]

    init(threads: Int) {
        live = (0..<threads).map { _ in LiveCounters() }
        outboxes = (0..<threads).map { _ in IntervalOutbox() }
        results = (0..<threads).map { _ in ResultSlot() }
    }
}

/// What one driver thread hands back. Written once by its thread before it bumps `finished` (release),
/// read by the main thread after seeing `finished` reach the thread count (acquire): the atomic orders
/// the accesses, which the compiler cannot see, hence @unchecked.
final class ResultSlot: @unchecked Sendable {
    var recorder: Recorder?
    var stats = DriverStats()
    var lastMeasuredSendNs: UInt64 = 0
    var firstSend: (intended: UInt64, sent: UInt64) = (0, 0)
    /// When the thread closed its books (monotonic ns).
    var endNs: UInt64 = 0
}

/// One driver thread: an event loop, a connection pool (`Pool`: HTTP/2 making one protocol's requests,
/// or HTTP/1.1), a pacing timer and the ``DriverCore``.
final class DriverThread<Pool: DriverPool> {
    private enum State { case connecting, waiting, running, done }

    private let config: LoadConfiguration
    private let index: Int
    private let shared: SharedRunState
    private let loop: EventLoop
    private let core: DriverCore
    private var pool: Pool!
    /// `pool`, for the per-request call: reading the var would retain and release it each time.
    private var poolRef: Unmanaged<Pool>?
    private var pacing: PreciseTimer!
    private var housekeeping: LoopTimer!
    private var state = State.connecting
    private var armedDeadline: UInt64 = 0
    // Housekeeping ticks while running (one a millisecond), to space out what is done a few times a second.
    private var housekeepingTicks = 0
    private var periodic = false
    private var periodNs: UInt64 = 0
    private var t0: UInt64 = 0
    private let connectDeadline: UInt64

    init(config: LoadConfiguration, index: Int, shared: SharedRunState) throws {
        self.config = config
        self.index = index
        self.shared = shared
        loop = try EventLoop()
        if config.measuresBusy { loop.measureIdleTime() }
        let plan = DriverPlan(rate: config.rate, threads: config.threads, thread: index, warmupNs: config.warmupNs,
                              durationNs: config.durationNs, requests: config.requests, retries: config.retries,
                              drainTimeoutNs: config.drainTimeoutNs, capacity: config.connections * config.streams,
                              schedule: config.schedule, segment: config.segment, segments: config.segments)
        core = DriverCore(plan: plan, clock: MonotonicClock.shared, recorder: Recorder(live: shared.live[index], outbox: shared.outboxes[index]))
        core.answers = config.pipeline?.answers[index]
        if let log = config.requestLog {
            core.requestLog = log.rings[index]
            core.logFilter = log.filter
            core.logThread = UInt8(truncatingIfNeeded: index)
        }
        connectDeadline = MonotonicClock.nanoseconds() + config.connectTimeoutMilliseconds * 1_000_000 + 500_000_000
        // The pool and the pacing timer are this thread's own and never outlive it, so their per-request
        // callbacks take self unmanaged: no reference count touched per call (an unowned(unsafe) capture
        // is still retained for the call).
        let me = Unmanaged.passUnretained(self)
        pool = try Pool(loop: loop, config: config, core: core, thread: index,
                        onResponse: { me._withUnsafeGuaranteedRef { $0.responded() } },
                        onChange: { me._withUnsafeGuaranteedRef { $0.pump() } })
        core.attach(pool)
        poolRef = .passUnretained(pool)
        pacing = try PreciseTimer(loop: loop) { _ in
            me._withUnsafeGuaranteedRef { t in
                if !t.periodic { t.armedDeadline = 0 }
                t.pump()
            }
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
        poolRef = nil
        pool = nil
        loop.run(until: { false }, timeoutNanoseconds: 20_000_000)
        loop.close()
    }

    // A response frees a stream. While the pacing timer is armed nothing waits for a stream (the last pump
    // sent everything due), so the timer's next wakeup sends what falls due meanwhile, in one batch;
    // pumping here as well would send each request alone as it falls due, a writev here and a read and a
    // writev at the target each (docs/loadgen.md "Pacing"). With no timer armed (a request waits for a
    // stream, retries are queued, the closed loop) the freed stream is refilled now.
    @inline(__always) private func responded() {
        if armedDeadline == 0 { pump() }
    }

    @inline(__always) private func pump() {
        guard state == .running else { return }
        // Through the pool held here (the core's port): the call is specialized for it, with no retain.
        guard let poolRef else { return }
        let next = poolRef._withUnsafeGuaranteedRef { pool in
            let next = core.pump(via: pool)
            pool.endBatch()
            return next
        }
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
                if let t = pool.stats.tls { shared.tls.withLock { $0 = $0 ?? t.brief } }
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
            self.t0 = t0
            state = .running
            if config.schedule != nil {
                followSchedule(at: now)
            } else if let rate = config.rate {
                // A periodic timerfd needs no re-arming per request when the thread's interval is a whole
                // number of ns (50k rps: 20 µs); otherwise each deadline is armed exactly, one shot.
                let perThread = UInt64(stripes) * 1_000_000_000
                let interval = perThread / UInt64(rate)
                let quantum = config.effectiveQuantumNs(perThreadRate: Double(rate) / Double(stripes))
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
            if config.schedule != nil && core.generating { followSchedule(at: now) }
            // The live view's connection figures, a few times a second: a scan of the connections, kept
            // off the per-request path.
            housekeepingTicks &+= 1
            if housekeepingTicks % 200 == 0 {
                shared.live[index].connections.store(pool.connectedCount, ordering: .relaxed)
                shared.live[index].peerStreamLimit.store(pool.stats.peerMaxStreams ?? 0, ordering: .relaxed)
                if config.measuresBusy {
                    let idle = Int(loop.idleNanoseconds)
                    shared.live[index].idle.withLock { $0 = (sampledAt: Int(now), idle: idle) }
                }
            }
            if shared.stop.load(ordering: .relaxed) && !core.stopped { core.stop() }
            if pool.tokensExhausted && !shared.tokensExhausted.load(ordering: .relaxed) {
                // Nothing left to send to: this thread's core is stopped; stop the others as well.
                shared.tokensExhausted.store(true, ordering: .relaxed)
                shared.stop.store(true, ordering: .releasing)
            }
            switch core.tick() {
            case .finish:
                finish(started: true)
                return
            case .stopPacing:
                if periodic { pacing.stop(); armedDeadline = 0 }
            case .run:
                break
            }
            pump()
        case .done:
            break
        }
    }

    /// Stripes sharing the schedule: driver threads of every agent.
    private var stripes: Int { config.threads * config.segments }

    // A schedule's rate moves, and with it the pacing step (once a millisecond, from the housekeeping
    // tick): a periodic timer at the quantum for the rate in force, rounded to 10 µs so a ramp changes it
    // now and then rather than every tick; below the quantum's threshold, one shot at each intended time.
    private func followSchedule(at now: UInt64) {
        guard let schedule = config.schedule else { return }
        let offset = now > t0 + config.warmupNs ? now - t0 - config.warmupNs : 0
        let rate = now < t0 + config.warmupNs ? Double(schedule.initialRate) : schedule.rate(atOffset: offset)
        let perThread = rate / Double(stripes)
        var quantum = perThread > 0 ? config.effectiveQuantumNs(perThreadRate: perThread) : 0
        quantum = (quantum + 5_000) / 10_000 * 10_000
        if perThread > 0 && Double(quantum) <= 1e9 / perThread { quantum = 0 }
        guard quantum != (periodic ? periodNs : 0) else { return }
        if armedDeadline != 0 { pacing.stop(); armedDeadline = 0 }
        periodic = quantum > 0
        periodNs = quantum
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
        var stats = core.stats
        stats.cpuUser = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        stats.cpuSystem = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        stats.involuntarySwitches = Int(usage.ru_nivcsw)
        stats.cpuWaitNanoseconds = currentThreadCPUWaitNanoseconds()
        stats.connections = pool.finalStats
        stats.pruned = pool.pruned
        stats.providerTokenRefreshes = pool.providerTokenRefreshes
        let slot = shared.results[index]
        slot.recorder = core.recorder
        slot.stats = stats
        slot.lastMeasuredSendNs = core.lastMeasuredSendNs
        slot.firstSend = core.firstSend
        slot.endNs = MonotonicClock.nanoseconds()
        shared.finished.add(1, ordering: .acquiringAndReleasing)
        loop.stop()
    }
}
