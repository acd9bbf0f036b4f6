/// Why a request ended as a transport error: counted per cause in ``Tally/transportErrorsByCause``,
/// written to summary.json as `accounting.transport_errors_by_cause`.
public enum TransportErrorCause: Int, Sendable, CaseIterable {
    // The peer reset the stream (RST_STREAM), one case per HTTP/2 error code (RFC 9113 7), in code order:
    // the raw value of each is its code.
    /// RST_STREAM NO_ERROR (0x0).
    case resetNoError
    /// RST_STREAM PROTOCOL_ERROR (0x1).
    case resetProtocolError
    /// RST_STREAM INTERNAL_ERROR (0x2): the server may have acted on the request; never resent.
    case resetInternalError
    /// RST_STREAM FLOW_CONTROL_ERROR (0x3).
    case resetFlowControlError
    /// RST_STREAM SETTINGS_TIMEOUT (0x4).
    case resetSettingsTimeout
    /// RST_STREAM STREAM_CLOSED (0x5).
    case resetStreamClosed
    /// RST_STREAM FRAME_SIZE_ERROR (0x6).
    case resetFrameSizeError
    /// RST_STREAM REFUSED_STREAM (0x7): the server did not process the request; safe to resend.
    case refused
    /// RST_STREAM CANCEL (0x8).
    case resetCancel
    /// RST_STREAM COMPRESSION_ERROR (0x9).
    case resetCompressionError
    /// RST_STREAM CONNECT_ERROR (0xa).
    case resetConnectError
    /// RST_STREAM ENHANCE_YOUR_CALM (0xb).
    case resetEnhanceYourCalm
    /// RST_STREAM INADEQUATE_SECURITY (0xc).
    case resetInadequateSecurity
    /// RST_STREAM HTTP_1_1_REQUIRED (0xd).
    case resetHTTP11Required
    /// RST_STREAM with a code HTTP/2 does not define.
    case resetOther
    /// The stream was above the last stream id of a GOAWAY: not processed; safe to resend.
    case goAway
    /// The connection closed (peer EOF, a socket error) with the stream open.
    case connectionLost
    /// The connection closed because the peer broke the protocol (a malformed frame, bad HPACK).
    case protocolError
    /// nghttp2 took the request but could not send it.
    case notSent
    /// nghttp2 refused to open a stream for the request.
    case submitFailed
    /// The payload encoder could not write the payload into the stream's slot.
    case encodeFailed

    /// The cause of RST_STREAM with `code`.
    public static func reset(code: UInt32) -> TransportErrorCause {
        code <= 0xd ? TransportErrorCause(rawValue: Int(code))! : .resetOther
    }

    /// Whether `--retry` resends a request cut off this way: only when the server cannot have acted on
    /// it (REFUSED_STREAM, above a GOAWAY's last stream) or the connection was lost, as the option says.
    /// A reset such as INTERNAL_ERROR means the server may have acted: resending could push twice.
    var isRetryable: Bool { self == .refused || self == .goAway || self == .connectionLost }

    /// The cause's name in results (snake case).
    public var name: String {
        switch self {
        case .resetNoError: "reset_no_error"
        case .resetProtocolError: "reset_protocol_error"
        case .resetInternalError: "reset_internal_error"
        case .resetFlowControlError: "reset_flow_control_error"
        case .resetSettingsTimeout: "reset_settings_timeout"
        case .resetStreamClosed: "reset_stream_closed"
        case .resetFrameSizeError: "reset_frame_size_error"
        case .refused: "refused_stream"
        case .resetCancel: "reset_cancel"
        case .resetCompressionError: "reset_compression_error"
        case .resetConnectError: "reset_connect_error"
        case .resetEnhanceYourCalm: "reset_enhance_your_calm"
        case .resetInadequateSecurity: "reset_inadequate_security"
        case .resetHTTP11Required: "reset_http_1_1_required"
        case .resetOther: "reset_other"
        case .goAway: "goaway"
        case .connectionLost: "connection_lost"
        case .protocolError: "protocol_error"
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
    init() {}

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
