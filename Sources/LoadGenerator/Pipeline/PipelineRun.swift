#if canImport(Glibc)
import Glibc
#endif
import PushPayload
import PushMetrics
import PushTransport

/// The matching half of `pushbench pipeline`: the taps on both ends (the driver threads' front-door
/// answers, the gateway's pushes) and the ledger that joins them. The run's main thread calls
/// ``poll(t0:)`` while the load runs and ``drain(deadline:shouldStop:)`` after it, then ``finish()``.
public final class PipelineRun {
    /// The driver threads' side.
    let tap: PipelineTap
    /// The gateway's side: hands every push queued so far to its argument.
    private let arrivalsSource: ((PushArrival) -> Void) -> Void
    /// Pushes the gateway's side could not queue.
    private let refusedArrivals: () -> Int
    /// The books, made at the first poll (they need the run's t0).
    public private(set) var ledger: PipelineLedger?
    /// The seconds closed so far, in order.
    public private(set) var seconds: [PipelineLedger.Second] = []
    private let config: LoadConfiguration
    private let drainNs: UInt64
    private var answers: [FrontDoorAnswer] = []
    private var arrivals: [PushArrival] = []
    /// Where each push goes for `--log` (nil without a log), with what its line needs of the request.
    private let arrivalLog: SPSCRing<ArrivalLogRecord>?
    private var intended: (Int64) -> UInt64 = { _ in 0 }
    /// The run's tokens by fingerprint (with a log only): a push's line names its token by its index.
    private let tokenIndex: [UInt64: Int32]
    private var firstMeasured: Int64 = 0

    /// A pipeline run of `config` (its ``LoadConfiguration/pipeline`` is `tap`) whose gateway's pushes
    /// `arrivals` hands over (the gateway's correlator drains into its argument) and `refused` counts
    /// those it could not queue; `drainNs` is how long pushes are waited for after the last request.
    public init(config: LoadConfiguration, tap: PipelineTap, drainNs: UInt64,
                arrivals: @escaping ((PushArrival) -> Void) -> Void, refused: @escaping () -> Int) {
        self.config = config
        self.tap = tap
        arrivalsSource = arrivals
        refusedArrivals = refused
        self.drainNs = drainNs
        arrivalLog = config.requestLog?.arrivals
        var byHash: [UInt64: Int32] = [:]
        if arrivalLog != nil {
            byHash.reserveCapacity(config.tokens.count)
            for i in 0..<config.tokens.count {
                // A token listed twice is named by its first line, as `--tokens` numbers it.
                let h = config.tokens.withToken(i) { PushTokenHash.of($0) }
                if byHash[h] == nil { byHash[h] = Int32(i) }
            }
        }
        tokenIndex = byHash
        self.answers.reserveCapacity(1 << 12)
        self.arrivals.reserveCapacity(1 << 12)
    }

    /// The request ids' prefix for a run tagged `tag`: `pb-XXXX-`.
    public static func prefix(tag: UInt16) -> [UInt8] { PipelineID.prefix(tag: tag) }

    /// Requests tracked at once for `config` waiting `drainNs`: the peak rate's requests over the drain
    /// and ten seconds more, so a record closes only after its pushes had that long to arrive.
    public static func capacity(_ config: LoadConfiguration, drainNs: UInt64) -> Int {
        let peak = Double(config.schedule?.peakRate ?? config.rate ?? 10_000)
        return Int(min(Double(1 << 22), max(1024, peak * (Double(drainNs) / 1e9 + 10))))
    }

    /// Takes what both sides queued since the last call (the run's main thread, about every 20 ms).
    public func poll(t0: UInt64) {
        let ledger = self.ledger ?? makeLedger(t0: t0)
        tap.drain { answers.append($0) }
        arrivalsSource { arrivals.append($0) }
        // Both in time order, so the seconds close as they should.
        var i = 0, j = 0
        while i < answers.count || j < arrivals.count {
            if j == arrivals.count || (i < answers.count && answers[i].answeredAt <= arrivals[j].arrivedAt) {
                ledger.take(answers[i]); i += 1
            } else {
                let verdict = ledger.take(arrivals[j])
                if let arrivalLog { log(arrivals[j], verdict, arrivalLog) }
                j += 1
            }
        }
        answers.removeAll(keepingCapacity: true)
        arrivals.removeAll(keepingCapacity: true)
        seconds += ledger.takeSeconds()
    }

    /// Queues `push`'s line for the log writer; a full ring drops it (counted as the log's `dropped`).
    private func log(_ push: PushArrival, _ verdict: PipelineLedger.Verdict, _ ring: SPSCRing<ArrivalLogRecord>) {
        let matched = push.index >= 0
        ring.push(ArrivalLogRecord(index: push.index, intended: matched ? intended(push.index) : 0, arrived: push.arrivedAt,
                                   tokenIndex: push.token == 0 ? -1 : tokenIndex[push.token] ?? -1, status: push.status, route: push.route, verdict: verdict.rawValue,
                                   phase: UInt8(push.index >= firstMeasured ? Phase.measured.rawValue : Phase.warmup.rawValue)))
    }

    private func makeLedger(t0: UInt64) -> PipelineLedger {
        let plan = DriverPlan(rate: config.rate, threads: 1, warmupNs: config.warmupNs, durationNs: config.durationNs,
                              requests: config.requests, capacity: 1, schedule: config.schedule)
        let pacer = plan.pacer(start: t0)
        intended = { g in pacer?.intendedTime(global: g) ?? t0 }
        firstMeasured = plan.warmupRequests
        let made = PipelineLedger(fanOut: config.template.fanOut, capacity: Self.capacity(config, drainNs: drainNs),
                                  measuredFrom: t0 + config.warmupNs, firstMeasured: plan.warmupRequests,
                                  indexLimit: plan.totalRequests) { g in
            pacer?.intendedTime(global: g) ?? t0
        }
        ledger = made
        return made
    }

    /// After the load: keeps taking pushes until every expected one arrived, `deadline` (monotonic ns)
    /// passed or `shouldStop()`; returns whether every expected push arrived.
    @discardableResult
    public func drain(t0: UInt64, deadline: UInt64, shouldStop: () -> Bool) -> Bool {
        while true {
            poll(t0: t0)
            if let ledger, ledger.inFlight == 0 { return true }
            if MonotonicClock.nanoseconds() >= deadline || shouldStop() { return false }
            usleep(20_000)
        }
    }

    /// Closes the books: what did not arrive is lost. Returns the final counts.
    @discardableResult
    public func finish(t0: UInt64) -> PipelineLedger.Counts {
        poll(t0: t0)
        ledger!.finish(at: MonotonicClock.nanoseconds())
        seconds += ledger!.takeSeconds()
        return ledger!.counts
    }

    /// Pushes or answers that full queues could not pass on (the books are short by as many).
    public var overflow: Int { tap.refused + refusedArrivals() }
}
