import PushMetrics
import PushPayload

/// The books of a pipeline run: every request's front-door answer and every push the gateway saw,
/// matched by the request's global index, with no clock and no socket (the run's main thread feeds it
/// what the driver threads and the gateway queued; tests feed it by hand).
///
/// Per request it expects ``fanOut`` pushes once the front door accepted it (2xx). A push answered
/// with a final status is delivered, up to the pushes expected; past them it is a duplicate. A push
/// that follows one answered 429, 500 or 503 (or dropped) for the same request is a retry, which the
/// gateway provoked, not a duplicate. When a request's record is closed (its slot is needed again,
/// ``capacity`` requests later, or the run ends), what did not arrive is lost. Pushes with no id,
/// another run's id, an index no request had, or for a request whose record was already closed are
/// unexpected; so are the pushes of a request the front door refused.
///
/// Memory is fixed at init: ``capacity`` records, one end-to-end histogram and one for the open second.
public final class PipelineLedger {
    /// Counts of pushes, by what they turned out to be.
    public struct Counts: Equatable, Sendable {
        /// Pushes expected: the fan-out of each request the front door accepted (or that produced a push
        /// without a front-door answer).
        public var expected: Int64 = 0
        /// Expected pushes that arrived and were answered with a final status.
        public var delivered: Int64 = 0
        /// Of ``delivered``, those the gateway answered with a 4xx other than 429 (BadDeviceToken,
        /// Unregistered, a wrong provider token, ...): they reached APNs or FCM and were refused there.
        public var rejected: Int64 = 0
        /// Expected pushes that never arrived (counted when the request's record closes).
        public var lost: Int64 = 0
        /// Pushes for a request beyond its fan-out, after final answers.
        public var duplicated: Int64 = 0
        /// Pushes resent after the gateway answered 429, 500 or 503 (or dropped the connection).
        public var retried: Int64 = 0
        /// Pushes answered 429, 500 or 503, or dropped, by the gateway.
        public var refusedByGateway: Int64 = 0
        /// Pushes with no correlation id.
        public var noID: Int64 = 0
        /// Pushes with another run's id.
        public var otherRun: Int64 = 0
        /// Pushes whose id names no request of this run, or one whose record had closed.
        public var unknownRequest: Int64 = 0
        /// Pushes for requests the front door refused (not 2xx).
        public var refusedRequest: Int64 = 0
        /// Arrivals by route: APNs, FCM.
        public var apns: Int64 = 0
        /// See ``apns``.
        public var fcm: Int64 = 0
        /// Expected pushes still open (neither delivered nor lost yet).
        public var inFlight: Int64 { max(0, expected - delivered - lost) }
        /// Every push that matched no expected one.
        public var unexpected: Int64 { noID + otherRun + unknownRequest + refusedRequest }
    }

    /// One second of the pipeline's timeline.
    public struct Second: Equatable, Sendable {
        /// Seconds since the measured start.
        public var second: Int
        /// Front-door answers in the second.
        public var frontDoor: Int64 = 0
        /// Pushes that arrived, by route.
        public var apns: Int64 = 0
        /// See ``apns``.
        public var fcm: Int64 = 0
        /// Expected pushes not yet delivered or lost at the second's end.
        public var backlog: Int64 = 0
        /// End-to-end latency of the pushes delivered in the second (µs; 0 when none).
        public var p50: Int64 = 0
        /// See ``p50``.
        public var p99: Int64 = 0
        /// The second's end-to-end histogram, encoded (for e2e_latency.hlog).
        public var histogram: EncodedHistogram?
    }

    /// What one push turned out to be when it arrived (the `--log` file's `arrival` column). A push of a
    /// request the front door refuses only later stays `delivered` here, though the books move it.
    public enum Verdict: UInt8, CaseIterable, Sendable {
        case delivered, rejected, duplicate, refusedByGateway, refusedRequest, unknownRequest, noID, otherRun

        /// The name in the log.
        public var name: String {
            switch self {
            case .delivered: "delivered"
            case .rejected: "rejected"
            case .duplicate: "duplicate"
            case .refusedByGateway: "refused_by_gateway"
            case .refusedRequest: "refused_request"
            case .unknownRequest: "unknown_request"
            case .noID: "no_id"
            case .otherRun: "other_run"
            }
        }
    }

    private struct Record {
        var index: Int64 = -1
        /// 0 no answer yet, 1 accepted, 2 refused.
        var answer: UInt8 = 0
        var finals: UInt16 = 0
        var pendingRetries: UInt16 = 0
    }

    /// Pushes each request asks for.
    public let fanOut: Int
    /// Requests tracked at once (a power of two).
    public let capacity: Int
    /// The totals so far of the measured requests (and of the pushes that name no request).
    public var counts: Counts { books[1] }
    /// The totals so far of the warm-up's requests: matched like the others, kept apart.
    public var warmup: Counts { books[0] }
    /// Expected pushes still open, warm-up included: nothing is left to wait for at 0.
    public var inFlight: Int64 { books[0].inFlight + books[1].inFlight }
    /// Warm-up's and measured books.
    private var books = [Counts(), Counts()]
    /// End-to-end latency (µs) of every delivered push of a measured request.
    public let endToEnd = HdrHistogram.latencyMicroseconds()
    /// Front-door latency (µs, from the intended send time, so corrected for coordinated omission) of
    /// the measured requests, by the status the front door answered.
    public private(set) var frontDoorByStatus: [UInt16: HdrHistogram] = [:]
    /// The closed seconds (the caller may take them with ``takeSeconds()``).
    public private(set) var seconds: [Second] = []
    /// Pushes the front door or gateway queues could not pass on (full rings): the books are short by
    /// as many, and the run says so.
    public var overflow = 0

    private let records: UnsafeMutablePointer<Record>
    private let intended: (Int64) -> UInt64
    private let measuredFrom: UInt64
    private let firstMeasured: Int64
    private let indexLimit: Int64
    private var highestIndex: Int64 = -1
    private var current: Second
    private let secondHistogram = HdrHistogram.latencyMicroseconds()

    /// A ledger for requests fanning out to `fanOut` pushes each, tracking `capacity` requests at once
    /// (rounded up to a power of two); `intended(g)` is request g's intended send time (monotonic ns),
    /// `measuredFrom` the start of the measured phase and `firstMeasured` the first measured index
    /// (earlier ones are the warm-up: matched and counted, not in the histogram).
    /// `indexLimit` is the number of requests the run can send: a push naming an index past it names no
    /// request of the run (and must not close the record of one that does).
    init(fanOut: Int, capacity: Int, measuredFrom: UInt64, firstMeasured: Int64, indexLimit: Int64 = Int64.max,
                intended: @escaping (Int64) -> UInt64) {
        self.indexLimit = indexLimit
        self.fanOut = max(1, fanOut)
        var c = 1024
        while c < capacity { c <<= 1 }
        self.capacity = c
        records = .allocate(capacity: c)
        records.initialize(repeating: Record(), count: c)
        self.intended = intended
        self.measuredFrom = measuredFrom
        self.firstMeasured = firstMeasured
        current = Second(second: 0)
    }

    deinit { records.deallocate() }

    /// The record of request `g`, opening it (and closing the one it replaces); nil when `g`'s record
    /// already closed.
    @inline(__always)
    private func record(_ g: Int64) -> UnsafeMutablePointer<Record>? {
        guard g < indexLimit else { return nil }
        let r = records + Int(g & Int64(capacity - 1))
        if r.pointee.index == g { return r }
        if r.pointee.index > g { return nil }
        if r.pointee.index >= 0 { close(r) }
        r.pointee = Record(index: g)
        if g > highestIndex { highestIndex = g }
        return r
    }

    /// Which books request `g` is kept in: 0 the warm-up's, 1 the measured.
    @inline(__always) private func book(_ g: Int64) -> Int { g >= firstMeasured ? 1 : 0 }

    private func close(_ r: UnsafeMutablePointer<Record>) {
        let b = book(r.pointee.index)
        let n = Int64(fanOut)
        let delivered = Int64(min(Int(r.pointee.finals), fanOut))
        switch r.pointee.answer {
        case 1:
            books[b].lost += n - delivered
        case 0 where delivered > 0:
            // No front-door answer (cut off), but the service sent pushes: it took the request.
            books[b].expected += n
            books[b].lost += n - delivered
        default:
            break
        }
        r.pointee.index = -1
    }

    /// The front door answered request `answer.index`.
    func take(_ answer: FrontDoorAnswer) {
        advance(to: answer.answeredAt)
        if answer.answeredAt >= measuredFrom { current.frontDoor += 1 }
        guard let r = record(answer.index) else { return }
        let accepted = answer.status >= 200 && answer.status < 300
        r.pointee.answer = accepted ? 1 : 2
        let delivered = Int64(min(Int(r.pointee.finals), fanOut))
        let b = book(answer.index)
        if b == 1 {
            let start = intended(answer.index)
            let h = frontDoorByStatus[answer.status] ?? {
                let made = HdrHistogram.latencyMicroseconds()
                frontDoorByStatus[answer.status] = made
                return made
            }()
            h.record(Int64(answer.answeredAt > start ? (answer.answeredAt - start) / 1000 : 0))
        }
        if accepted {
            books[b].expected += Int64(fanOut)
        } else if delivered > 0 {
            // Pushes of a refused request came first: they were not expected after all.
            books[b].delivered -= delivered
            books[b].refusedRequest += delivered
        }
    }

    /// The gateway saw a push; returns what it turned out to be.
    @discardableResult
    func take(_ push: PushArrival) -> Verdict {
        advance(to: push.arrivedAt)
        let inSecond: Int64 = push.arrivedAt >= measuredFrom ? 1 : 0
        let b = push.index >= 0 ? book(push.index) : 1
        if push.route == 1 { books[b].fcm += 1; current.fcm += inSecond } else { books[b].apns += 1; current.apns += inSecond }
        guard push.index >= 0 else {
            if push.index == PushArrival.foreignID { books[b].otherRun += 1; return .otherRun }
            books[b].noID += 1
            return .noID
        }
        guard let r = record(push.index) else {
            books[b].unknownRequest += 1
            return .unknownRequest
        }
        if r.pointee.pendingRetries > 0 {
            books[b].retried += 1
            r.pointee.pendingRetries -= 1
        }
        if push.isRetryable {
            books[b].refusedByGateway += 1
            r.pointee.pendingRetries &+= 1
            return .refusedByGateway
        }
        if Int(r.pointee.finals) >= fanOut {
            books[b].duplicated += 1
            return .duplicate
        }
        r.pointee.finals += 1
        if r.pointee.answer == 2 {
            books[b].refusedRequest += 1
            return .refusedRequest
        }
        books[b].delivered += 1
        if push.status >= 400 { books[b].rejected += 1 }
        if push.index >= firstMeasured {
            let start = intended(push.index)
            let us = Int64(push.arrivedAt > start ? (push.arrivedAt - start) / 1000 : 0)
            endToEnd.record(us)
            secondHistogram.record(us)
        }
        return push.status >= 400 ? .rejected : .delivered
    }

    /// Closes the seconds before the one `now` falls in.
    private func advance(to now: UInt64) {
        guard now >= measuredFrom else { return }
        let s = Int((now - measuredFrom) / 1_000_000_000)
        while current.second < s { closeSecond() }
    }

    private func closeSecond() {
        current.backlog = inFlight
        if secondHistogram.totalCount > 0 {
            current.p50 = secondHistogram.valueAtPercentile(50)
            current.p99 = secondHistogram.valueAtPercentile(99)
        }
        current.histogram = EncodedHistogram(secondHistogram)
        seconds.append(current)
        secondHistogram.reset()
        current = Second(second: current.second + 1)
    }

    /// The closed seconds so far, handed over and forgotten.
    func takeSeconds() -> [Second] {
        defer { seconds.removeAll(keepingCapacity: true) }
        return seconds
    }

    /// Closes every record (what did not arrive is lost) and the open second; call once, at the end.
    public func finish(at now: UInt64) {
        advance(to: now)
        for i in 0..<capacity where records[i].index >= 0 { close(records + i) }
        // The open second, unless nothing happened in it (the run ended on a second's boundary).
        if current.frontDoor + current.apns + current.fcm > 0 || secondHistogram.totalCount > 0 || seconds.isEmpty { closeSecond() }
    }

}
