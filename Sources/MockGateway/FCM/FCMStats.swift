#if canImport(Glibc)
import Glibc
#endif
import PushVocabulary
import Synchronization

/// The FCM numbers of `GET /stats` (the `"fcm"` object, present once the FCM route or token churn was used),
/// summed over every event loop. FCM's own reports count messages sent and devices reached separately;
/// so does this.
public struct FCMStats: Equatable, Sendable {
    /// Requests on the FCM route.
    public var requests: UInt64 = 0
    /// Messages accepted for delivery (200, not dry runs).
    public var messagesAccepted: UInt64 = 0
    /// `validate_only` requests that passed.
    public var validatedOnly: UInt64 = 0
    /// Messages to a topic or a condition (among `messagesAccepted`).
    public var topicMessages: UInt64 = 0
    /// Devices reached: one per token message, plus topic/condition fan-out done so far.
    public var deviceDeliveries: UInt64 = 0
    /// Fan-out deliveries still pending (they advance at `--fanout-rate`).
    public var fanoutPending: UInt64 = 0
    /// Errors by FCM `errorCode` (and `UNAUTHENTICATED`, `NOT_FOUND` for the plain google.rpc errors).
    public var byCode: [String: UInt64] = [:]
    /// Distinct tokens found invalidated by `--token-churn` (both routes).
    public var churnedTokens: UInt64 = 0
    /// Requests refused because their token had churned (both routes).
    public var churnRefusals: UInt64 = 0
    /// The first `--capture N` delivered Apple pushes.
    public var captured: [FCMCapturedPush] = []
    /// Requests to the OAuth2 token endpoint, access tokens it issued, and assertions it refused
    /// (JSON `"oauth":{"token_requests":…,"tokens_issued":…,"refused":…}`, present once it was asked).
    var tokenRequests: UInt64 = 0
    /// Access tokens issued.
    var tokensIssued: UInt64 = 0
    /// Token requests refused (400/405).
    var tokenRefusals: UInt64 = 0

    /// Empty numbers.
    init() {}

    /// Whether anything FCM-related happened (the `"fcm"` key is left out of /stats otherwise).
    public var isEmpty: Bool { requests == 0 && churnedTokens == 0 && churnRefusals == 0 && tokenRequests == 0 }

    /// The numbers as a JSON object.
    public var json: String {
        JSONWriter.text { write(to: &$0) }
    }

    /// Writes the numbers as a JSON object (the value of /stats' `"fcm"`).
    func write(to w: inout JSONWriter) {
        w.object { o in
            o.member("requests", requests)
            o.member("messages_accepted", messagesAccepted)
            o.member("validate_only", validatedOnly)
            o.member("topic_messages", topicMessages)
            o.member("device_deliveries", deviceDeliveries)
            o.member("fanout_pending", fanoutPending)
            o.member("by_code", sortedByKey: byCode)
            o.member("churned_tokens", churnedTokens)
            o.member("churn_refusals", churnRefusals)
            if tokenRequests != 0 {
                o.member("oauth") { t in
                    t.member("token_requests", tokenRequests)
                    t.member("tokens_issued", tokensIssued)
                    t.member("refused", tokenRefusals)
                }
            }
            o.key("captured")
            writeCaptured(to: &o)
        }
    }

    /// The captured pushes as a JSON array (what the load generator writes to capture.json).
    public var captureJSON: String {
        JSONWriter.text { writeCaptured(to: &$0) }
    }

    private func writeCaptured(to w: inout JSONWriter) {
        w.array { a in for push in captured { push.write(to: &a) } }
    }
}

/// One Apple push FCM would have sent: the APNs headers and the payload.
public struct FCMCapturedPush: Equatable, Sendable {
    /// The FCM message name (`projects/<p>/messages/<id>`).
    public var name: String
    /// `token:<t>`, `topic:<t>` or `condition:<c>`.
    public var target: String
    /// APNs request headers, in a fixed order (`apns-priority`, `apns-expiration`, `apns-push-type`, `apns-topic`, …).
    var headers: [(String, String)]
    /// The APNs payload (JSON text).
    public var payload: String
    /// When the request arrived (monotonic ns): the order of capture across event loops.
    var order: UInt64

    public static func == (l: Self, r: Self) -> Bool {
        l.name == r.name && l.target == r.target && l.payload == r.payload && l.order == r.order
            && l.headers.map { $0.0 + ":" + $0.1 } == r.headers.map { $0.0 + ":" + $0.1 }
    }

    /// `{"name":…,"target":…,"headers":{…},"payload":{…}}`.
    public var json: String {
        JSONWriter.text { write(to: &$0) }
    }

    func write(to w: inout JSONWriter) {
        w.object { o in
            o.member("name", name)
            o.member("target", target)
            o.member("headers") { h in for (k, v) in headers { h.member(k, v) } }
            o.key("payload")
            o.raw(payload)
        }
    }
}

/// One event loop's FCM counters: written by that loop only, read by any thread (same scheme as
/// ``GatewayCounters``: relaxed atomic load + store, one writer).
final class FCMCounters: Sendable {
    static let requests = 0, accepted = 1, validated = 2, topicMessages = 3, direct = 4
    static let fanoutEnqueued = 5, fanoutBacklog = 6, fanoutLast = 7, fanoutRate = 8, churned = 9, churnRefusals = 10
    static let tokenRequests = 11, tokensIssued = 12, tokenRefusals = 13
    static let codeBase = 16, slotCount = 16 + 16

    private let slots = CounterSlots(count: slotCount)
    private let captures = Mutex<[FCMCapturedPush]>([])
    private let captureCount = Atomic<Int>(0)
    private let captureLimit = Atomic<Int>(0)

    /// Zeroed counters.
    init() {}

    deinit { slots.deallocate() }

    @inline(__always) func add(_ slot: Int, _ n: UInt64 = 1) { slots.add(slot, n) }
    @inline(__always) func value(_ slot: Int) -> UInt64 { slots.value(slot) }
    @inline(__always) func set(_ slot: Int, _ v: UInt64) { slots.set(slot, v) }

    /// Plain google.rpc errors are counted under these two slots after the FcmError codes.
    static let unauthenticatedCode = 14, notFoundCode = 15

    @inline(__always) func countError(_ code: FCMErrorCode?, problem: FCMProblem) {
        if let code { add(Self.codeBase + Int(code.code)) }
        else { add(Self.codeBase + (problem == .notFound ? Self.notFoundCode : Self.unauthenticatedCode)) }
    }

    /// Adds `devices` to the fan-out backlog at `now`; the backlog drains at `perSecond` devices/s.
    @inline(__always) func enqueueFanout(_ devices: UInt64, now: UInt64, perSecond: Double) {
        let backlog = Self.backlog(value(Self.fanoutBacklog), since: value(Self.fanoutLast), now: now, perSecond: perSecond)
        set(Self.fanoutRate, perSecond.bitPattern)
        set(Self.fanoutBacklog, backlog &+ devices)
        set(Self.fanoutLast, now)
        add(Self.fanoutEnqueued, devices)
    }

    @inline(__always) static func backlog(_ b: UInt64, since last: UInt64, now: UInt64, perSecond: Double) -> UInt64 {
        guard b > 0, now > last else { return b }
        let drained = Double(now - last) * 1e-9 * perSecond
        return drained >= Double(b) ? 0 : b - UInt64(drained)
    }

    /// Whether one more push may be captured (fewer than `limit` so far); reserves its place.
    @inline(__always) func reserveCapture(limit: Int) -> Bool {
        let n = captureCount.load(ordering: .relaxed)
        guard n < limit else { return false }
        captureCount.store(n + 1, ordering: .relaxed)
        captureLimit.store(limit, ordering: .relaxed)
        return true
    }

    /// Keeps a captured push (after ``reserveCapture(limit:)``).
    func store(_ push: FCMCapturedPush) { captures.withLock { $0.append(push) } }

    /// Adds these counters into `stats`, with the fan-out drained up to `now` (monotonic ns).
    func accumulate(into stats: inout FCMStats, now: UInt64) {
        stats.requests += value(Self.requests)
        stats.messagesAccepted += value(Self.accepted)
        stats.validatedOnly += value(Self.validated)
        stats.topicMessages += value(Self.topicMessages)
        let enqueued = value(Self.fanoutEnqueued)
        let pending = min(enqueued, Self.backlog(value(Self.fanoutBacklog), since: value(Self.fanoutLast), now: now,
                                                  perSecond: Double(bitPattern: value(Self.fanoutRate))))
        stats.deviceDeliveries += value(Self.direct) + (enqueued - pending)
        stats.fanoutPending += pending
        stats.churnedTokens += value(Self.churned)
        stats.churnRefusals += value(Self.churnRefusals)
        stats.tokenRequests += value(Self.tokenRequests)
        stats.tokensIssued += value(Self.tokensIssued)
        stats.tokenRefusals += value(Self.tokenRefusals)
        for code in FCMErrorCode.allCases {
            let n = value(Self.codeBase + Int(code.code))
            if n > 0 { stats.byCode[code.rawValue, default: 0] += n }
        }
        let u = value(Self.codeBase + Self.unauthenticatedCode), nf = value(Self.codeBase + Self.notFoundCode)
        if u > 0 { stats.byCode["UNAUTHENTICATED", default: 0] += u }
        if nf > 0 { stats.byCode["NOT_FOUND", default: 0] += nf }
        let mine = captures.withLock { $0 }
        if !mine.isEmpty {
            // Each loop keeps its first N; across loops the first N by arrival time are kept.
            stats.captured = Array((stats.captured + mine).sorted { $0.order < $1.order }
                .prefix(max(captureLimit.load(ordering: .relaxed), 1)))
        }
    }

    /// The monotonic clock in ns (the clock the transport stamps requests with).
    static func monotonicNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
