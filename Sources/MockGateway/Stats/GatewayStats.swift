import PushTransport
import PushVocabulary
import Synchronization

/// What the gateway has seen so far: the numbers `GET /stats` answers, summed over every event loop.
///
/// ```swift
/// let s = gateway.stats()
/// print(s.requests, s.byStatus[200] ?? 0, s.byReason["Unregistered"] ?? 0)
/// print(s.json)
/// ```
public struct GatewayStats: Equatable, Sendable {
    /// Requests received (push requests of any kind; `GET /stats` itself is not counted).
    public var requests: UInt64 = 0
    /// Responses decided, by HTTP status.
    public var byStatus: [Int: UInt64] = [:]
    /// Error responses, by `reason` string.
    public var byReason: [String: UInt64] = [:]
    /// Request body bytes received.
    public var bytesIn: UInt64 = 0
    /// Connections open now.
    public var connectionsOpen: UInt64 = 0
    /// Connections accepted since start.
    public var connectionsTotal: UInt64 = 0
    /// Push requests received and not yet answered. Every request is answered as it arrives except those
    /// `--latency` holds back, so this is the number of responses held now.
    public var streamsOpen: UInt64 = 0
    /// GOAWAY frames sent by a behaviour or at shutdown.
    public var goaways: UInt64 = 0
    /// Connections dropped abruptly by a behaviour (no GOAWAY).
    public var drops: UInt64 = 0
    /// The FCM route's numbers and token churn (JSON key `"fcm"`, present once non-empty).
    public var fcm = FCMStats()
    /// Limits enforced, by ``ServerLimit/name`` (JSON key `"limits"`, present once one was): the
    /// connections refused at the cap, requests answered 431, streams reset, clients calmed or timed out.
    public var limits: [String: UInt64] = [:]
    /// Responses held back by injected latency (`--latency`), and the latency injected into them in ns
    /// (JSON `"latency_injected":{"responses":…,"seconds":…}`, present once non-zero).
    public var delayedResponses: UInt64 = 0
    /// See ``delayedResponses``.
    var injectedDelayNanos: UInt64 = 0
    /// Requests that came over HTTP/1.1 (of every route; JSON `"http1":{"requests":…}`, present once non-zero).
    public var http1Requests: UInt64 = 0
    /// HTTP/1.1 requests to the APNs route, refused as APNs refuses them (`"http1":{…,"refused":…}`).
    public var http1Refused: UInt64 = 0

    /// An empty set of numbers.
    public init() {}

    /// The numbers as one JSON object with stable keys, e.g.
    /// `{"requests":3,"by_status":{"200":2,"410":1},"by_reason":{"Unregistered":1},"bytes_in":300,…}`.
    public var json: String {
        JSONWriter.text { $0.object { o in
            o.member("requests", requests)
            o.member("by_status", sortedByKey: byStatus)
            o.member("by_reason", sortedByKey: byReason)
            o.member("bytes_in", bytesIn)
            o.member("connections_open", connectionsOpen)
            o.member("connections_total", connectionsTotal)
            o.member("streams_open", streamsOpen)
            o.member("goaways", goaways)
            o.member("drops", drops)
            if http1Requests != 0 {
                o.member("http1") { h in
                    h.member("requests", http1Requests)
                    h.member("refused", http1Refused)
                }
            }
            if !limits.isEmpty { o.member("limits", sortedByKey: limits) }
            if delayedResponses != 0 {
                o.member("latency_injected") { l in
                    l.member("responses", delayedResponses)
                    l.member("seconds", Double(injectedDelayNanos) / 1e9)
                }
            }
            if !fcm.isEmpty {
                o.key("fcm")
                fcm.write(to: &o)
            }
        } }
    }
}

/// A fixed block of counters written by one thread and read by any: each is an `Atomic` updated with a
/// relaxed load and store (one writer, so no read-modify-write instruction is needed): a plain `mov` on
/// the hot path, yet a reader on another thread never sees a torn value and the program has no data race.
/// A struct holding the pointer, so its owner reaches the counters with no extra indirection; the owner
/// calls ``deallocate()`` in its deinit.
struct CounterSlots: @unchecked Sendable {
    // @unchecked: a raw pointer is not Sendable; the memory is only ever touched through its atomics.
    private let base: UnsafeMutablePointer<Atomic<UInt64>>
    private let count: Int

    /// `count` zeroed counters.
    init(count: Int) {
        self.count = count
        base = .allocate(capacity: count)
        for i in 0..<count { (base + i).initialize(to: Atomic(0)) }
    }

    /// Frees the block (once, from the owner's deinit).
    func deallocate() {
        base.deinitialize(count: count)
        base.deallocate()
    }

    /// Adds `n` to counter `slot` (the single writer only).
    @inline(__always) func add(_ slot: Int, _ n: UInt64 = 1) {
        let v = base[slot].load(ordering: .relaxed)
        base[slot].store(v &+ n, ordering: .relaxed)
    }

    /// Counter `slot` now.
    @inline(__always) func value(_ slot: Int) -> UInt64 { base[slot].load(ordering: .relaxed) }

    /// Sets counter `slot` (the single writer only).
    @inline(__always) func set(_ slot: Int, _ v: UInt64) { base[slot].store(v, ordering: .relaxed) }
}

/// One event loop's counters (``CounterSlots``). Written by that loop's thread only, read by any thread.
public final class GatewayCounters: Sendable {
    /// Slots: fixed counters, then statuses 100...599, then reason codes 0..<64, then limits, then injected
    /// latency (responses delayed, nanoseconds, delayed responses sent).
    static let requestsSlot = 0, bytesInSlot = 1, openedSlot = 2, closedSlot = 3, goawaySlot = 4, dropSlot = 5
    static let http1RequestsSlot = 6, http1RefusedSlot = 7
    static let statusBase = 8, reasonBase = 8 + 500, limitBase = 8 + 500 + 64
    static let delayedSlot = limitBase + ServerLimit.allCases.count, delayNanosSlot = delayedSlot + 1
    static let delayedSentSlot = delayNanosSlot + 1
    static let slotCount = delayedSentSlot + 1

    private let slots = CounterSlots(count: slotCount)
    /// The FCM route's counters for this loop.
    let fcm = FCMCounters()

    /// Zeroed counters.
    @usableFromInline init() {}

    deinit { slots.deallocate() }

    @inline(__always) func add(_ slot: Int, _ n: UInt64 = 1) { slots.add(slot, n) }
    @inline(__always) func value(_ slot: Int) -> UInt64 { slots.value(slot) }

    /// Counts one request with `bodyBytes` of body.
    @inline(__always)
    func countRequest(bodyBytes: Int) {
        add(Self.requestsSlot)
        add(Self.bytesInSlot, UInt64(bodyBytes))
    }

    /// Counts one response with `status` and, for an error, its reason code (``APNsReason/code``).
    @inline(__always)
    func countResponse(status: UInt16, reasonCode: UInt8?) {
        let s = Int(status)
        add(Self.statusBase + (s >= 100 && s < 600 ? s - 100 : 499))
        if let reasonCode, reasonCode < 64 { add(Self.reasonBase + Int(reasonCode)) }
    }

    /// Counts an accepted connection.
    public func connectionOpened() { add(Self.openedSlot) }
    /// Counts a closed connection.
    func connectionClosed() { add(Self.closedSlot) }
    /// Counts a GOAWAY sent.
    func goawaySent() { add(Self.goawaySlot) }
    /// Counts an abrupt drop.
    func connectionDropped() { add(Self.dropSlot) }
    /// Counts a response delayed by `nanos` of injected latency.
    @inline(__always)
    func countDelay(nanos: UInt64) {
        add(Self.delayedSlot)
        add(Self.delayNanosSlot, nanos)
    }
    /// Counts a delayed response released once its latency passed (sent, or dropped with its connection).
    @inline(__always) func countDelayedSent() { add(Self.delayedSentSlot) }
    /// Counts a limit the transport enforced.
    func limitEnforced(_ limit: ServerLimit) { add(Self.limitBase + limit.rawValue) }
    /// Counts a request received over HTTP/1.1.
    @inline(__always) func countHTTP1Request() { add(Self.http1RequestsSlot) }
    /// Counts an HTTP/1.1 request refused as APNs refuses it.
    func countHTTP1Refused() { add(Self.http1RefusedSlot) }

    /// Adds these counters into `stats`.
    func accumulate(into stats: inout GatewayStats) {
        stats.requests += value(Self.requestsSlot)
        stats.bytesIn += value(Self.bytesInSlot)
        let opened = value(Self.openedSlot), closed = value(Self.closedSlot)
        stats.connectionsTotal += opened
        stats.connectionsOpen += opened >= closed ? opened - closed : 0
        stats.goaways += value(Self.goawaySlot)
        stats.drops += value(Self.dropSlot)
        let delayed = value(Self.delayedSlot)
        stats.delayedResponses += delayed
        stats.injectedDelayNanos += value(Self.delayNanosSlot)
        // Read after `delayed`, `sent` may include a response delayed since: never below zero.
        let sent = value(Self.delayedSentSlot)
        stats.streamsOpen += delayed >= sent ? delayed - sent : 0
        stats.http1Requests += value(Self.http1RequestsSlot)
        stats.http1Refused += value(Self.http1RefusedSlot)
        fcm.accumulate(into: &stats.fcm, now: FCMCounters.monotonicNanos())
        for s in 0..<500 {
            let n = value(Self.statusBase + s)
            if n > 0 { stats.byStatus[s + 100, default: 0] += n }
        }
        for r in 0..<64 {
            let n = value(Self.reasonBase + r)
            if n > 0 { stats.byReason[reasonName(UInt8(r)), default: 0] += n }
        }
        for limit in ServerLimit.allCases {
            let n = value(Self.limitBase + limit.rawValue)
            if n > 0 { stats.limits[limit.name, default: 0] += n }
        }
    }

    private func reasonName(_ code: UInt8) -> String {
        APNsReason(code: code)?.rawValue ?? "reason-\(code)"
    }
}

extension GatewayStats {
    /// The sum of every event loop's counters.
    public init(summing counters: [GatewayCounters]) {
        self.init()
        for c in counters { c.accumulate(into: &self) }
    }
}
