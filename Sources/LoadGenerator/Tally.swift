/// Why a request ended as a transport error: counted per cause in ``Tally/transportErrorsByCause``.
public enum TransportErrorCause: Int, Sendable, CaseIterable {
    /// The peer reset the stream (RST_STREAM other than REFUSED_STREAM).
    case reset
    /// The peer refused the stream (REFUSED_STREAM, or a stream above a GOAWAY's last stream id).
    case refused
    /// The connection closed with the stream open.
    case connectionLost
    /// nghttp2 took the request but could not send it.
    case notSent
    /// nghttp2 refused to open a stream for the request.
    case submitFailed
    /// The payload encoder could not write the payload into the stream's slot.
    case encodeFailed

    /// The cause's name in results (snake case).
    public var name: String {
        switch self {
        case .reset: "reset"
        case .refused: "refused"
        case .connectionLost: "connection_lost"
        case .notSent: "not_sent"
        case .submitFailed: "submit_failed"
        case .encodeFailed: "encode_failed"
        }
    }
}

/// Counts of one phase (warm-up or measured) of one driver thread. Plain integers in preallocated
/// arrays: updating them never allocates. Merged across threads at the end.
///
/// Invariant (docs/results.md, "Accounting" in docs/loadgen.md): `sent == completed + transportErrors + unfinished` and
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
    /// Sent but cut off (reset stream, GOAWAY, dropped connection) after all retries, or refused by the
    /// transport when it was handed over.
    public var transportErrors: Int = 0
    /// ``transportErrors`` by cause (index ``TransportErrorCause/rawValue``).
    public var transportErrorsByCause: [Int] = Array(repeating: 0, count: TransportErrorCause.allCases.count)
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
        for i in transportErrorsByCause.indices { transportErrorsByCause[i] += other.transportErrorsByCause[i] }
    }

    /// Whether the accounting invariant holds.
    public func check() -> Bool {
        sent == completed + transportErrors + unfinished && completed == succeeded + failed
            && byStatus.reduce(0, +) == completed && transportErrorsByCause.reduce(0, +) == transportErrors
    }

    /// Non-zero transport error causes as `["connection_lost": n, ...]`.
    public var transportErrorCauseCounts: [String: Int] {
        var d: [String: Int] = [:]
        for c in TransportErrorCause.allCases where transportErrorsByCause[c.rawValue] > 0 {
            d[c.name] = transportErrorsByCause[c.rawValue]
        }
        return d
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
