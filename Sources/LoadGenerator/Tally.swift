/// Counts of one phase (warm-up or measured) of one driver thread. Plain integers in preallocated
/// arrays: updating them never allocates. Merged across threads at the end.
///
/// Invariant (design.md "Results"): `sent == completed + transportErrors + unfinished` and
/// `completed == succeeded + failed`; ``check()`` verifies it.
public struct Tally: Sendable, Equatable {
    /// Requests handed to a stream (a retried request counts once).
    public var sent: Int = 0
    /// Requests answered with a status.
    public var completed: Int = 0
    /// Answered 2xx.
    public var succeeded: Int = 0
    /// Answered with another status.
    public var failed: Int = 0
    /// Sent but cut off (reset stream, GOAWAY, dropped connection) after all retries.
    public var transportErrors: Int = 0
    /// Sent and still unanswered when the run ended.
    public var unfinished: Int = 0
    /// Re-sends of requests cut off by a lost connection (`--retry`).
    public var retries: Int = 0
    /// Due but never sent: still in the backlog when the run ended or was interrupted.
    public var notSent: Int = 0
    /// Over the payload size limit: counted as PayloadTooLarge and not sent (unless --send-oversize).
    public var oversizeNotSent: Int = 0
    /// Responses by HTTP status (index = status, 0..<600).
    public var byStatus: [Int] = Array(repeating: 0, count: 600)
    /// Responses by reason (index into ``Reasons/names``); oversize requests count under PayloadTooLarge.
    public var byReason: [Int] = Array(repeating: 0, count: Reasons.count)

    /// Zero counts.
    public init() {}

    /// Adds `other`'s counts into this one.
    public mutating func merge(_ other: Tally) {
        sent += other.sent; completed += other.completed; succeeded += other.succeeded; failed += other.failed
        transportErrors += other.transportErrors; unfinished += other.unfinished; retries += other.retries
        notSent += other.notSent; oversizeNotSent += other.oversizeNotSent
        for i in byStatus.indices { byStatus[i] += other.byStatus[i] }
        for i in byReason.indices { byReason[i] += other.byReason[i] }
    }

    /// Whether the accounting invariant holds.
    public func check() -> Bool {
        sent == completed + transportErrors + unfinished && completed == succeeded + failed
            && byStatus.reduce(0, +) == completed
    }

    /// Non-zero statuses as `["200": n, ...]`.
    public var statusCounts: [String: Int] {
        var d: [String: Int] = [:]
        for (s, n) in byStatus.enumerated() where n > 0 { d[String(s)] = n }
        return d
    }

    /// Non-zero reasons as `["BadDeviceToken": n, ...]`.
    public var reasonCounts: [String: Int] {
        var d: [String: Int] = [:]
        for (r, n) in byReason.enumerated() where n > 0 && r > 0 { d[Reasons.names[r]] = n }
        return d
    }
}
