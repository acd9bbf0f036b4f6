import PushTransport

/// What happened when the driver asked for a request to be started.
public enum StartResult: Sendable, Equatable {
    /// The request is on a stream; its response or failure will come back with the same slot.
    case started
    /// No stream is free on any connection: the request stays in the backlog.
    case noStream
    /// The payload is over the size limit: counted as PayloadTooLarge and not sent.
    case oversize
    /// The transport refused the request as it was handed over (`cause`): counted as sent and a
    /// transport error, never resent; the driver goes on with the next request.
    case failed(TransportErrorCause)
}

/// The driver's view of the connection pool (one per driver thread). The real one is ``ConnectionPool``;
/// tests use a fake.
public protocol RequestPort: AnyObject {
    /// Starts global request `sequence` on a free stream, tagged `slot` for the completion callbacks;
    /// `now` is the driver's clock reading for the batch it belongs to (its send time).
    func startRequest(slot: Int32, sequence: Int64, at now: UInt64) -> StartResult
}

/// Which part of the run a request belongs to: warm-up requests are counted apart and stay out of the
/// measured histograms.
enum Phase: Int, Sendable {
    /// Sent during `--warmup`.
    case warmup = 0
    /// Sent during the measured part.
    case measured = 1
}

/// How one driver thread generates requests: its share of the schedule and where it ends.
public struct DriverPlan: Sendable, Equatable {
    /// Requests per second for all threads together; nil is `--rps max` (closed loop).
    public var rate: Int?
    /// Number of driver threads.
    public var threads: Int = 1
    /// This thread's index.
    public var thread: Int = 0
    /// Warm-up length in ns.
    public var warmupNs: UInt64 = 0
    /// Measured length in ns (ignored when `requests` is set).
    public var durationNs: UInt64 = 10_000_000_000
    /// Measured request count for all threads (`--requests`), instead of a duration.
    public var requests: Int?
    /// Resends allowed for a request cut off by a lost connection (`--retry`).
    public var retries: Int = 0
    /// How long the run waits, after the schedule ends, for the backlog to be sent and the requests in
    /// flight to be answered (a stop waits at most ``stopDrainNs`` of it).
    var drainTimeoutNs: UInt64 = 5_000_000_000
    /// Most requests in flight at once on this thread (connections × streams): sizes the slot table.
    public var capacity: Int
    /// The measured phase's schedule when the rate changes over time (`--stages`, `--rps A..B`,
    /// `--rate-file`); nil is the constant ``rate``. The warm-up runs before it at its initial rate.
    public var schedule: RateSchedule?
    /// This agent's execution segment (`--segment I/N`): it sends the global requests g ≡ segment (mod
    /// segments), its threads striping them further, so N agents together send one schedule.
    public var segment = 0
    /// The number of agents sharing the schedule.
    public var segments = 1

    /// A plan; see the properties.
    public init(rate: Int?, threads: Int = 1, thread: Int = 0, warmupNs: UInt64 = 0, durationNs: UInt64 = 10_000_000_000,
                requests: Int? = nil, retries: Int = 0, drainTimeoutNs: UInt64 = 5_000_000_000, capacity: Int,
                schedule: RateSchedule? = nil, segment: Int = 0, segments: Int = 1) {
        precondition(segments > 0 && segment >= 0 && segment < segments)
        self.rate = rate; self.threads = threads; self.thread = thread; self.warmupNs = warmupNs
        self.durationNs = durationNs; self.requests = requests; self.retries = retries
        self.drainTimeoutNs = drainTimeoutNs; self.capacity = capacity
        self.schedule = schedule; self.segment = segment; self.segments = segments
    }

    /// Stripes of the global schedule: one per driver thread of every agent.
    var stride: Int { threads * segments }
    /// This thread's stripe: agent I of N, thread i owns g ≡ I + N·i (mod N·threads), so the agents
    /// interleave request by request and each agent's threads interleave within its share.
    var stripe: Int { segment + segments * thread }

    /// The whole open-loop schedule when it is not constant: the warm-up at the initial rate, then the
    /// measured stages.
    var pacingSchedule: RateSchedule? { schedule.map { $0.prepending(rate: $0.initialRate, durationNs: warmupNs) } }

    /// The pacer of this thread with t0 = `start`; nil for the closed loop.
    func pacer(start: UInt64) -> Pacer? {
        if let s = pacingSchedule { return Pacer(start: start, schedule: s, threads: stride, thread: stripe) }
        if let rate { return Pacer(start: start, rate: rate, threads: stride, thread: stripe) }
        return nil
    }

    /// The longest a stopped run (Ctrl-C, a lost target, every token gone) waits for its answers.
    static let stopDrainNs: UInt64 = 1_000_000_000

    /// Global requests in the warm-up (open loop): those due before t0 + warmup.
    var warmupRequests: Int64 {
        if let s = pacingSchedule { return s.count(before: warmupNs) }
        guard let rate else { return 0 }
        return Int64((Double(warmupNs) * Double(rate) / 1e9).rounded(.up))
    }

    /// Global requests in the whole schedule (open loop): warm-up plus measured.
    var totalRequests: Int64 {
        if let s = pacingSchedule { return s.totalRequests }
        guard let rate else { return Int64.max }
        let measured = requests.map(Int64.init) ?? Int64((Double(durationNs) * Double(rate) / 1e9).rounded())
        return warmupRequests + measured
    }

    /// This thread's share of `count` global requests: the g < count in its stripe.
    func localShare(of count: Int64) -> Int64 {
        let i = Int64(stripe), n = Int64(stride)
        return count > i ? (count - i - 1) / n + 1 : 0
    }
}

/// What the runtime does after a housekeeping ``DriverCore/tick()``.
enum TickAction: Sendable, Equatable {
    /// Go on pumping.
    case run
    /// The schedule has ended (returned once): stop the pacing timer; responses and resends still pump.
    case stopPacing
    /// Nothing is left to wait for, or the drain deadline passed: close the books with
    /// ``DriverCore/finish()``.
    case finish
}

/// One driver thread's scheduling and accounting, as a state machine without I/O: the pacer, the
/// backlog of due-but-unsent requests (each keeps its intended time), the retry queue, the slot table
/// of requests in flight, the recording of every outcome, and when the run drains and ends. The
/// event-loop runtime feeds it time and transport events; tests feed it a ``ManualClock`` and a fake
/// ``RequestPort``.
///
/// Coordinated omission: latency is measured from the intended time (t0 + k/rate), so a request that
/// waited in the backlog because every stream was busy is charged for the wait, as wrk2 does; the
/// service time (from the actual send) is recorded beside it.
///
/// Nothing here allocates after `init`: the slot table, the free list and the retry ring are sized to
/// `plan.capacity`.
public final class DriverCore {
    /// The plan.
    public let plan: DriverPlan
    /// The recorder (counts, histograms, timeline).
    let recorder: Recorder
    private let clock: any NanoClock
    private unowned(unsafe) var port: (any RequestPort)?

    /// The pacer (open loop), set by ``begin(at:)``.
    public var pacer: Pacer? { pacerStorage?.pointee }
    // The pacer at a fixed address: pump reads it in place, where an optional stored property would be
    // copied (through its value witnesses, with its schedule's arrays) once per pump.
    private var pacerStorage: UnsafeMutablePointer<Pacer>?
    /// Whether new requests are still being generated (false after the schedule ends or ``stop()``).
    public private(set) var generating = false
    /// Whether ``stop()`` was called (interrupted or target lost).
    private(set) var stopped = false
    /// When the run ends at the latest (0: not draining yet).
    private(set) var drainDeadlineNs: UInt64 = 0
    /// Peaks and counts of this thread's sending (its connection counters are the pool's).
    public private(set) var stats = DriverStats()

    // Open loop: this thread's next request number (local k) and the number of its requests in the run.
    private var next: Int64 = 0
    private var localLimit: Int64 = 0
    private var localWarmup: Int64 = 0
    // Closed loop.
    private var closedCount: Int64 = 0
    private var closedMeasured: Int64 = 0
    private var closedLimit: Int64 = Int64.max
    private var startNs: UInt64 = 0
    private var measureStartNs: UInt64 = 0
    private var endNs: UInt64 = UInt64.max
    // Intended time of the schedule's last request (all stripes): the drain is timed from it.
    private var lastIntendedNs: UInt64 = 0

    // Requests in flight, by slot (`busy` says which slots hold one), and the free slots as a stack.
    private let slots: UnsafeMutablePointer<InFlightRequest>
    private let busy: UnsafeMutablePointer<Bool>
    private let freeSlots: UnsafeMutablePointer<Int32>
    private var freeCount: Int
    // Requests cut off, waiting to be resent with their original intended time (a ring).
    private let retryRing: UnsafeMutablePointer<InFlightRequest>
    private var retryHead = 0
    private var retryCount = 0

    /// Requests in flight now.
    public var inFlight: Int { plan.capacity - freeCount }
    /// Requests waiting now (due but not yet sent, plus cut-off requests waiting for a resend).
    public var backlog: Int {
        var b = retryCount
        if generating, let pacer = pacerStorage {
            b += Int(max(0, min(pacer.pointee.dueCount(at: clock.now()), localLimit) - next))
        }
        return b
    }
    /// Time of the last measured send.
    private(set) var lastMeasuredSendNs: UInt64 = 0
    /// The first request this thread sent: its intended time and when it went out (0, 0 before one did).
    /// With a start time shared by several agents, how late the agent joined the global schedule.
    public private(set) var firstSend: (intended: UInt64, sent: UInt64) = (0, 0)

    /// A core for `plan`, reading time from `clock`, recording into `recorder`.
    public init(plan: DriverPlan, clock: any NanoClock, recorder: Recorder) {
        precondition(plan.capacity > 0 && plan.capacity < Int(Int32.max))
        self.plan = plan
        self.clock = clock
        self.recorder = recorder
        let c = plan.capacity
        slots = .allocate(capacity: c)
        busy = .allocate(capacity: c)
        busy.initialize(repeating: false, count: c)
        freeSlots = .allocate(capacity: c)
        for i in 0..<c { freeSlots[i] = Int32(c - 1 - i) }
        freeCount = c
        retryRing = .allocate(capacity: c)
    }

    deinit {
        slots.deallocate(); busy.deallocate(); freeSlots.deallocate(); retryRing.deallocate()
        pacerStorage?.deinitialize(count: 1)
        pacerStorage?.deallocate()
    }

    /// Where a pipeline run hears of each front-door answer (nil outside a pipeline run).
    var answers: SPSCRing<FrontDoorAnswer>?
    /// Where this thread's `--log` records go (nil without a log), which requests are logged, and the
    /// thread's number in them.
    var requestLog: SPSCRing<RequestLogRecord>?
    var logFilter = RequestLogFilter()
    var logThread: UInt8 = 0

    /// Connects the core to the pool it sends through (not retained: the runtime owns both).
    public func attach(_ port: any RequestPort) { self.port = port }

    /// Starts the schedule at t0 = `start`.
    public func begin(at start: UInt64) {
        startNs = start
        measureStartNs = start + plan.warmupNs
        generating = true
        recorder.begin(at: start, measurementStart: measureStartNs)
        if let p = plan.pacer(start: start) {
            pacerStorage?.deinitialize(count: 1)
            pacerStorage?.deallocate()
            pacerStorage = .allocate(capacity: 1)
            pacerStorage!.initialize(to: p)
            let total = plan.totalRequests
            localLimit = plan.localShare(of: total)
            localWarmup = plan.localShare(of: plan.warmupRequests)
            lastIntendedNs = p.intendedTime(global: max(0, total - 1))
        } else {
            if let requests = plan.requests {
                closedLimit = plan.localShare(of: Int64(requests))
            } else {
                endNs = measureStartNs + plan.durationNs
            }
        }
    }

    /// Sends what is due at the current time: resends first, then the backlog and newly due requests,
    /// while streams are free. Returns when the pacing timer should fire next (nil: no timer needed,
    /// because the schedule ended or the driver waits for a stream to free up).
    @discardableResult
    public func pump() -> UInt64? {
        guard let port else { return nil }
        return pump(via: port)
    }

    /// ``pump()`` through `port`, the attached one, held by the caller: a caller that knows its type
    /// (the driver thread) gets a body specialized for it, and nothing retains the port per call.
    @inline(__always)
    func pump<Port: RequestPort>(via port: Port) -> UInt64? {
        guard !stopped else { return nil }
        // One clock reading per batch: the requests of one pump leave in one writev (ConnectionPool
        // batches them), microseconds apart; their send time is when the batch began.
        var now = clock.now()
        while retryCount > 0 {
            guard freeCount > 0 else { return nil }
            let slot = freeSlots[freeCount - 1]
            let r = retryRing[retryHead]
            switch port.startRequest(slot: slot, sequence: r.sequence, at: now) {
            case .noStream:
                return nil
            case .started:
                occupy(slot, InFlightRequest(sequence: r.sequence, intended: r.intended, sent: now,
                                             attempt: r.attempt &+ 1, phase: r.phase, cause: r.cause))
                recorder.tallies[r.phase.rawValue].retries += 1
            case .oversize:
                // The resend's payload is over the limit (pruning moved it to a longer token): nothing
                // went out again, so the request ends as the failure that cut it off.
                recorder.recordTransportError(r.phase, cause: r.cause, at: now)
            case .failed(let cause):
                recorder.recordTransportError(r.phase, cause: cause, at: now)
            }
            retryHead = (retryHead + 1) % plan.capacity
            retryCount -= 1
        }
        guard generating else { return nil }
        if let pacer = pacerStorage {
            let due = min(pacer.pointee.dueCount(at: now), localLimit)
            if due - next > stats.maxBacklog { stats.maxBacklog = Int(due - next) }
            while next < due {
                guard freeCount > 0 else { stats.blocked += 1; return nil }
                let slot = freeSlots[freeCount - 1]
                let seq = pacer.pointee.global(local: next)
                let phase: Phase = next < localWarmup ? .warmup : .measured
                switch port.startRequest(slot: slot, sequence: seq, at: now) {
                case .noStream:
                    stats.blocked += 1
                    return nil
                case .oversize:
                    recorder.recordOversize(phase)
                case .started:
                    let intended = pacer.pointee.intendedTime(local: next)
                    if firstSend.sent == 0 { firstSend = (intended, now) }
                    occupy(slot, InFlightRequest(sequence: seq, intended: intended, sent: now,
                                                 attempt: 0, phase: phase, cause: .connectionLost))
                    recordSent(phase, at: now)
                case .failed(let cause):
                    recordSent(phase, at: now)
                    recorder.recordTransportError(phase, cause: cause, at: now)
                }
                next += 1
            }
            if next >= localLimit { generating = false; return nil }
            return pacer.pointee.intendedTime(local: next)
        }
        // Closed loop: every free stream gets a request now; its intended time is its send time. Nothing
        // goes out before t0 (the threads learn t0 a little ahead of it): a request sent early would be
        // counted in a warm-up nobody asked for.
        if now < startNs { return nil }
        while freeCount > 0 {
            if now >= endNs || closedMeasured >= closedLimit { generating = false; return nil }
            let slot = freeSlots[freeCount - 1]
            let seq = closedCount &* Int64(plan.stride) &+ Int64(plan.stripe)
            let phase: Phase = now < measureStartNs ? .warmup : .measured
            switch port.startRequest(slot: slot, sequence: seq, at: now) {
            case .noStream:
                return nil
            case .oversize:
                recorder.recordOversize(phase)
                // No stream taken: the loop goes on until the time limit, which needs a fresh clock.
                now = clock.now()
            case .started:
                occupy(slot, InFlightRequest(sequence: seq, intended: now, sent: now, attempt: 0, phase: phase,
                                             cause: .connectionLost))
                recordSent(phase, at: now)
            case .failed(let cause):
                recordSent(phase, at: now)
                recorder.recordTransportError(phase, cause: cause, at: now)
                now = clock.now()
            }
            closedCount += 1
            if phase == .measured { closedMeasured += 1 }
        }
        return nil
    }

    @inline(__always)
    private func recordSent(_ phase: Phase, at now: UInt64) {
        recorder.recordSent(phase, at: now)
        if phase == .measured { lastMeasuredSendNs = now }
    }

    @inline(__always)
    private func occupy(_ slot: Int32, _ request: InFlightRequest) {
        let i = Int(slot)
        precondition(!busy[i], "slot \(slot) started twice")
        busy[i] = true
        slots[i] = request
        freeCount -= 1
        if plan.capacity - freeCount > stats.maxInFlight { stats.maxInFlight = plan.capacity - freeCount }
    }

    @inline(__always)
    private func release(_ slot: Int32) {
        let i = Int(slot)
        precondition(busy[i], "slot \(slot) completed but not in flight")
        busy[i] = false
        freeSlots[freeCount] = slot
        freeCount += 1
    }

    /// Records the response of the request in `slot`: latency from its intended time, service time from
    /// its send; frees the slot. Call ``pump()`` afterwards.
    func responded(slot: Int32, status: Int, reason: Int) {
        responded(slot: slot, status: status, reason: reason, at: clock.now())
    }

    /// ``responded(slot:status:reason:)`` with the time the response arrived (monotonic ns, the same clock),
    /// as the transport stamped it when it read the bytes.
    func responded(slot: Int32, status: Int, reason: Int, at now: UInt64, detail: ResponseDetail = ResponseDetail()) {
        let r = slots[Int(slot)]
        if let answers { answers.push(FrontDoorAnswer(index: r.sequence, status: UInt16(clamping: status), answeredAt: now)) }
        if let requestLog, logFilter.keeps(sequence: r.sequence, latencyNs: now > r.intended ? now - r.intended : 0) {
            requestLog.push(RequestLogRecord(sequence: r.sequence, intended: r.intended, sent: r.sent, answered: now,
                                             tokenIndex: detail.tokenIndex, connection: detail.connection, stream: detail.stream,
                                             requestBytes: detail.requestBytes, responseBytes: detail.responseBytes,
                                             status: UInt16(clamping: status), reason: UInt16(clamping: reason), thread: logThread,
                                             attempt: r.attempt, phase: UInt8(r.phase.rawValue), pushID: detail.pushID))
        }
        recorder.recordResponse(r.phase, status: status, reason: reason,
                                latencyNs: now > r.intended ? now - r.intended : 0,
                                serviceNs: now > r.sent ? now - r.sent : 0, at: now)
        release(slot)
    }

    /// The request in `slot` was cut off (`cause`: stream reset, GOAWAY, connection lost): resent later
    /// with its original intended time when the cause is one a resend is safe for
    /// (``TransportErrorCause/isRetryable``) and retries remain, else counted as a transport error. Call
    /// ``pump()``.
    ///
    /// A request above a GOAWAY's last stream id is resent up to ``goAwayResends`` times beyond
    /// `--retry`: the server says it did not process it, and a client resends such a request on a new
    /// connection as a matter of course (a GOAWAY is how a server retires a connection), so a run
    /// against a gateway that sends GOAWAY every N streams counts no error for it.
    func failed(slot: Int32, cause: TransportErrorCause) {
        var r = slots[Int(slot)]
        let allowed = plan.retries + (cause == .goAway ? Self.goAwayResends : 0)
        if cause.isRetryable && Int(r.attempt) < allowed && !stopped {
            r.cause = cause
            retryRing[(retryHead + retryCount) % plan.capacity] = r
            retryCount += 1
        } else {
            let now = clock.now()
            recorder.recordTransportError(r.phase, cause: cause, at: now)
            if let requestLog, logFilter.keeps(sequence: r.sequence, latencyNs: now > r.intended ? now - r.intended : 0) {
                requestLog.push(RequestLogRecord(sequence: r.sequence, intended: r.intended, sent: r.sent, answered: now, status: 0,
                                                 reason: UInt16(clamping: cause.rawValue), thread: logThread, attempt: r.attempt,
                                                 phase: UInt8(r.phase.rawValue)))
            }
        }
        release(slot)
    }

    /// Resends of a request refused by a GOAWAY allowed beyond `--retry` (a server that refuses it on
    /// every new connection still ends it as a transport error).
    static let goAwayResends = 8

    /// The housekeeping rules, once a millisecond: publishes the live figures, ends a closed loop's time
    /// limit, and decides when the run drains and ends. After the schedule the backlog and the answers
    /// in flight get `plan.drainTimeoutNs`; after ``stop()`` at most ``DriverPlan/stopDrainNs`` of it;
    /// an open loop still sending its backlog that long after its last intended time ends there (a
    /// 10 s run against an overloaded target stays near 10 s plus the drain).
    func tick() -> TickAction {
        let now = clock.now()
        recorder.tick(at: now, inFlight: inFlight, backlog: backlog)
        if generating && pacerStorage == nil && (now >= endNs || closedMeasured >= closedLimit) { generating = false }
        // After stop() nothing more is sent (resends included): only the streams in flight are waited for.
        let waiting = inFlight > 0 || (!stopped && (generating || retryCount > 0))
        if drainDeadlineNs == 0, pacerStorage != nil {
            if now > lastIntendedNs && now - lastIntendedNs > plan.drainTimeoutNs { drainDeadlineNs = now }
        }
        var action = TickAction.run
        if !generating && drainDeadlineNs == 0 {
            drainDeadlineNs = now + plan.drainTimeoutNs
            action = .stopPacing
        }
        if !waiting || (drainDeadlineNs != 0 && now >= drainDeadlineNs) { return .finish }
        return action
    }

    /// Stops generating: the backlog will be counted as not sent, and the run waits at most
    /// ``DriverPlan/stopDrainNs`` more for the answers in flight. For Ctrl-C, a lost target, no tokens left.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        let deadline = clock.now() + min(plan.drainTimeoutNs, DriverPlan.stopDrainNs)
        if drainDeadlineNs == 0 || deadline < drainDeadlineNs { drainDeadlineNs = deadline }
    }

    /// Closes the books: requests still in flight become `unfinished`, the backlog `notSent`, queued
    /// resends transport errors. Call once, after the last event.
    public func finish() {
        let now = clock.now()
        for i in 0..<plan.capacity where busy[i] {
            recorder.tallies[slots[i].phase.rawValue].unfinished += 1
            release(Int32(i))
        }
        while retryCount > 0 {
            let r = retryRing[retryHead]
            recorder.recordTransportError(r.phase, cause: r.cause, at: now)
            retryHead = (retryHead + 1) % plan.capacity
            retryCount -= 1
        }
        if generating, let pacer = pacerStorage {
            let due = min(pacer.pointee.dueCount(at: now), localLimit)
            while next < due {
                recorder.tallies[(next < localWarmup ? Phase.warmup : .measured).rawValue].notSent += 1
                next += 1
            }
        }
        generating = false
        recorder.end(at: now)
    }
}
