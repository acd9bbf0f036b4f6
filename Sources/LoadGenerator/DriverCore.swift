/// What happened when the driver asked for a request to be started.
public enum StartResult: Sendable, Equatable {
    /// The request is on a stream; its response or failure will come back with the same slot.
    case started
    /// No stream is free on any connection: the request stays in the backlog.
    case noStream
    /// The payload is over the size limit: counted as PayloadTooLarge and not sent.
    case oversize
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
public enum Phase: Int, Sendable {
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
    /// Most requests in flight at once on this thread (connections × streams): sizes the slot table.
    public var capacity: Int

    /// A plan; see the properties.
    public init(rate: Int?, threads: Int = 1, thread: Int = 0, warmupNs: UInt64 = 0, durationNs: UInt64 = 10_000_000_000,
                requests: Int? = nil, retries: Int = 0, capacity: Int) {
        self.rate = rate; self.threads = threads; self.thread = thread; self.warmupNs = warmupNs
        self.durationNs = durationNs; self.requests = requests; self.retries = retries; self.capacity = capacity
    }

    /// Global requests in the warm-up (open loop): those due before t0 + warmup.
    var warmupRequests: Int64 {
        guard let rate else { return 0 }
        return Int64((Double(warmupNs) * Double(rate) / 1e9).rounded(.up))
    }

    /// Global requests in the whole schedule (open loop): warm-up plus measured.
    var totalRequests: Int64 {
        guard let rate else { return Int64.max }
        let measured = requests.map(Int64.init) ?? Int64((Double(durationNs) * Double(rate) / 1e9).rounded())
        return warmupRequests + measured
    }

    /// This thread's share of `count` global requests: the g < count with g ≡ thread (mod threads).
    func localShare(of count: Int64) -> Int64 {
        let i = Int64(thread), n = Int64(threads)
        return count > i ? (count - i - 1) / n + 1 : 0
    }
}

/// One driver thread's scheduling and accounting, as a state machine without I/O: the pacer, the
/// backlog of due-but-unsent requests (each keeps its intended time), the retry queue, the slot table
/// of requests in flight, and the recording of every outcome. The event-loop runtime feeds it time and
/// transport events; tests feed it a ``ManualClock`` and a fake ``RequestPort``.
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
    public let recorder: Recorder
    private let clock: any NanoClock
    private unowned(unsafe) var port: (any RequestPort)?

    /// The pacer (open loop), set by ``begin(at:)``.
    public private(set) var pacer: Pacer?
    /// t0.
    public private(set) var startNs: UInt64 = 0
    /// Whether new requests are still being generated (false after the schedule ends or ``stop()``).
    public private(set) var generating = false
    /// Whether ``stop()`` was called (interrupted or target lost).
    public private(set) var stopped = false

    // Open loop: this thread's next request number (local k) and the number of its requests in the run.
    private var next: Int64 = 0
    private var localLimit: Int64 = 0
    private var localWarmup: Int64 = 0
    // Closed loop.
    private var closedCount: Int64 = 0
    private var closedMeasured: Int64 = 0
    private var closedLimit: Int64 = Int64.max
    private var measureStartNs: UInt64 = 0
    private var endNs: UInt64 = UInt64.max

    // Slot table: requests in flight.
    private let slotSequence: UnsafeMutablePointer<Int64>
    private let slotIntended: UnsafeMutablePointer<UInt64>
    private let slotSent: UnsafeMutablePointer<UInt64>
    private let slotAttempt: UnsafeMutablePointer<UInt8>
    private let slotPhase: UnsafeMutablePointer<UInt8>
    private let slotBusy: UnsafeMutablePointer<Bool>
    private let freeSlots: UnsafeMutablePointer<Int32>
    private var freeCount: Int
    // Retry ring: requests cut off, waiting to be resent with their original intended time.
    private let retrySequence: UnsafeMutablePointer<Int64>
    private let retryIntended: UnsafeMutablePointer<UInt64>
    private let retryAttempt: UnsafeMutablePointer<UInt8>
    private let retryPhase: UnsafeMutablePointer<UInt8>
    private var retryHead = 0
    private var retryCount = 0

    /// Requests in flight now.
    public var inFlight: Int { plan.capacity - freeCount }
    /// Requests waiting now (due but not yet sent, plus cut-off requests waiting for a resend).
    public var backlog: Int {
        var b = retryCount
        if generating, let pacer {
            b += Int(max(0, min(pacer.dueCount(at: clock.now()), localLimit) - next))
        }
        return b
    }
    /// Deepest backlog seen.
    public private(set) var maxBacklog = 0
    /// Most requests in flight at once.
    public private(set) var maxInFlight = 0
    /// Time of the last measured send.
    public private(set) var lastMeasuredSendNs: UInt64 = 0
    /// When measurement starts (t0 + warmup).
    public var measurementStartNs: UInt64 { measureStartNs }

    /// A core for `plan`, reading time from `clock`, recording into `recorder`.
    public init(plan: DriverPlan, clock: any NanoClock, recorder: Recorder) {
        precondition(plan.capacity > 0 && plan.capacity < Int(Int32.max))
        self.plan = plan
        self.clock = clock
        self.recorder = recorder
        let c = plan.capacity
        slotSequence = .allocate(capacity: c); slotIntended = .allocate(capacity: c); slotSent = .allocate(capacity: c)
        slotAttempt = .allocate(capacity: c); slotPhase = .allocate(capacity: c)
        slotBusy = .allocate(capacity: c); slotBusy.initialize(repeating: false, count: c)
        freeSlots = .allocate(capacity: c)
        for i in 0..<c { freeSlots[i] = Int32(c - 1 - i) }
        freeCount = c
        retrySequence = .allocate(capacity: c); retryIntended = .allocate(capacity: c)
        retryAttempt = .allocate(capacity: c); retryPhase = .allocate(capacity: c)
    }

    deinit {
        slotSequence.deallocate(); slotIntended.deallocate(); slotSent.deallocate(); slotAttempt.deallocate()
        slotPhase.deallocate(); slotBusy.deallocate(); freeSlots.deallocate()
        retrySequence.deallocate(); retryIntended.deallocate(); retryAttempt.deallocate(); retryPhase.deallocate()
    }

    /// Connects the core to the pool it sends through (not retained: the runtime owns both).
    public func attach(_ port: any RequestPort) { self.port = port }

    /// Starts the schedule at t0 = `start`.
    public func begin(at start: UInt64) {
        startNs = start
        measureStartNs = start + plan.warmupNs
        generating = true
        recorder.begin(at: start, measurementStart: measureStartNs)
        if let rate = plan.rate {
            pacer = Pacer(start: start, rate: rate, threads: plan.threads, thread: plan.thread)
            localLimit = plan.localShare(of: plan.totalRequests)
            localWarmup = plan.localShare(of: plan.warmupRequests)
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
        guard let port, !stopped else { return nil }
        // One clock reading per batch: the requests of one pump leave in one writev (ConnectionPool
        // batches them), microseconds apart; their send time is when the batch began.
        var now = clock.now()
        while retryCount > 0 {
            guard freeCount > 0 else { return nil }
            let slot = freeSlots[freeCount - 1]
            let seq = retrySequence[retryHead]
            switch port.startRequest(slot: slot, sequence: seq, at: now) {
            case .noStream:
                return nil
            case .started, .oversize:
                freeCount -= 1
                occupy(slot, seq: seq, intended: retryIntended[retryHead], sent: now,
                       attempt: retryAttempt[retryHead] &+ 1, phase: Int(retryPhase[retryHead]))
                recorder.tallies[Int(retryPhase[retryHead])].retries += 1
                retryHead = (retryHead + 1) % plan.capacity
                retryCount -= 1
            }
        }
        guard generating else { return nil }
        if let pacer {
            let due = min(pacer.dueCount(at: now), localLimit)
            if due - next > maxBacklog { maxBacklog = Int(due - next) }
            while next < due {
                guard freeCount > 0 else { recorder.noteBlocked(); return nil }
                let slot = freeSlots[freeCount - 1]
                let seq = pacer.global(local: next)
                let phase: Phase = next < localWarmup ? .warmup : .measured
                switch port.startRequest(slot: slot, sequence: seq, at: now) {
                case .noStream:
                    recorder.noteBlocked()
                    return nil
                case .oversize:
                    recorder.recordOversize(phase)
                case .started:
                    freeCount -= 1
                    occupy(slot, seq: seq, intended: pacer.intendedTime(local: next), sent: now, attempt: 0,
                           phase: phase.rawValue)
                    recorder.recordSent(phase, at: now)
                    if phase == .measured { lastMeasuredSendNs = now }
                }
                next += 1
            }
            if next >= localLimit { generating = false; return nil }
            return pacer.intendedTime(local: next)
        }
        // Closed loop: every free stream gets a request now; its intended time is its send time.
        while freeCount > 0 {
            if now >= endNs || closedMeasured >= closedLimit { generating = false; return nil }
            let slot = freeSlots[freeCount - 1]
            let seq = closedCount &* Int64(plan.threads) &+ Int64(plan.thread)
            let phase: Phase = now < measureStartNs ? .warmup : .measured
            switch port.startRequest(slot: slot, sequence: seq, at: now) {
            case .noStream:
                return nil
            case .oversize:
                recorder.recordOversize(phase)
                // No stream taken: the loop goes on until the time limit, which needs a fresh clock.
                now = clock.now()
            case .started:
                freeCount -= 1
                occupy(slot, seq: seq, intended: now, sent: now, attempt: 0, phase: phase.rawValue)
                recorder.recordSent(phase, at: now)
                if phase == .measured { lastMeasuredSendNs = now }
            }
            closedCount += 1
            if phase == .measured { closedMeasured += 1 }
        }
        return nil
    }

    @inline(__always)
    private func occupy(_ slot: Int32, seq: Int64, intended: UInt64, sent: UInt64, attempt: UInt8, phase: Int) {
        let i = Int(slot)
        precondition(!slotBusy[i], "slot \(slot) started twice")
        slotBusy[i] = true
        slotSequence[i] = seq; slotIntended[i] = intended; slotSent[i] = sent; slotAttempt[i] = attempt
        slotPhase[i] = UInt8(phase)
        if plan.capacity - freeCount > maxInFlight { maxInFlight = plan.capacity - freeCount }
    }

    @inline(__always)
    private func release(_ slot: Int32) {
        let i = Int(slot)
        precondition(slotBusy[i], "slot \(slot) completed but not in flight")
        slotBusy[i] = false
        freeSlots[freeCount] = slot
        freeCount += 1
    }

    /// Global sequence number of the request in `slot` (valid while it is in flight).
    public func sequence(inSlot slot: Int32) -> Int64 { slotSequence[Int(slot)] }

    /// Records the response of the request in `slot`: latency from its intended time, service time from
    /// its send; frees the slot. Call ``pump()`` afterwards.
    public func responded(slot: Int32, status: Int, reason: Int) {
        responded(slot: slot, status: status, reason: reason, at: clock.now())
    }

    /// ``responded(slot:status:reason:)`` with the time the response arrived (monotonic ns, the same clock),
    /// as the transport stamped it when it read the bytes.
    public func responded(slot: Int32, status: Int, reason: Int, at now: UInt64) {
        let i = Int(slot)
        let phase = Phase(rawValue: Int(slotPhase[i]))!
        recorder.recordResponse(phase, status: status, reason: reason,
                                latencyNs: now > slotIntended[i] ? now - slotIntended[i] : 0,
                                serviceNs: now > slotSent[i] ? now - slotSent[i] : 0, at: now)
        release(slot)
    }

    /// The request in `slot` was cut off (stream reset, GOAWAY, connection lost): resent later with its
    /// original intended time when retries remain, else counted as a transport error. Call ``pump()``.
    public func failed(slot: Int32) {
        let i = Int(slot)
        let phase = Phase(rawValue: Int(slotPhase[i]))!
        if Int(slotAttempt[i]) < plan.retries && !stopped {
            let tail = (retryHead + retryCount) % plan.capacity
            retrySequence[tail] = slotSequence[i]; retryIntended[tail] = slotIntended[i]
            retryAttempt[tail] = slotAttempt[i]; retryPhase[tail] = slotPhase[i]
            retryCount += 1
        } else {
            recorder.recordTransportError(phase, at: clock.now())
        }
        release(slot)
    }

    /// Ends the schedule on a time limit (closed loop) or leaves it running; call on the housekeeping tick.
    /// Returns true while requests remain to be sent or answered.
    public func tick() -> Bool {
        let now = clock.now()
        recorder.tick(at: now, inFlight: inFlight, backlog: backlog)
        if generating && pacer == nil && (now >= endNs || closedMeasured >= closedLimit) { generating = false }
        // After stop() nothing more is sent (resends included): only the streams in flight are waited for.
        return inFlight > 0 || (!stopped && (generating || retryCount > 0))
    }

    /// Stops generating: the backlog will be counted as not sent. For Ctrl-C and a lost target.
    public func stop() {
        stopped = true
    }

    /// Closes the books: requests still in flight become `unfinished`, the backlog `notSent`, queued
    /// resends transport errors. Call once, after the last event.
    public func finish() {
        let now = clock.now()
        for i in 0..<plan.capacity where slotBusy[i] {
            recorder.tallies[Int(slotPhase[i])].unfinished += 1
            slotBusy[i] = false
            freeSlots[freeCount] = Int32(i)
            freeCount += 1
        }
        while retryCount > 0 {
            recorder.recordTransportError(Phase(rawValue: Int(retryPhase[retryHead]))!, at: now)
            retryHead = (retryHead + 1) % plan.capacity
            retryCount -= 1
        }
        if generating, let pacer {
            let due = min(pacer.dueCount(at: now), localLimit)
            while next < due {
                recorder.tallies[(next < localWarmup ? Phase.warmup : .measured).rawValue].notSent += 1
                next += 1
            }
        }
        generating = false
        recorder.end(at: now)
    }
}
