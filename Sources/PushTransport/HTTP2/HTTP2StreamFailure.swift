/// Why a stream ended without a response.
public enum HTTP2StreamFailureReason: Sendable, Equatable {
    /// The peer reset the stream (RST_STREAM) with this HTTP/2 error code.
    case reset(errorCode: UInt32)
    /// The peer refused the stream (REFUSED_STREAM): safe to retry.
    case refused
    /// The stream was above the last stream id of the peer's GOAWAY (`errorCode` is the GOAWAY's): not
    /// processed, safe to retry.
    case goAway(errorCode: UInt32)
    /// The connection closed with the stream open.
    case connectionLost
    /// The connection closed because the peer broke the protocol (a malformed frame, bad HPACK; `code` is
    /// nghttp2's error code).
    case protocolError(code: Int32)
    /// The request could not be sent (nghttp2 error code).
    case notSent(code: Int32)
}

/// A stream that ended without a response.
public struct HTTP2StreamFailure: Sendable {
    /// The stream id (0 if never assigned).
    public var streamID: Int32
    /// The caller's context given to `submit`.
    public var context: UInt64
    /// Why.
    public var reason: HTTP2StreamFailureReason
    /// Timestamps of the stream.
    public var timing: HTTP2StreamTiming
}
