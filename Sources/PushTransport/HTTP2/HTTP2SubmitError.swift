/// Why `HTTP2ClientConnection.submit` refused a request (typed throw: nothing is allocated).
public enum HTTP2SubmitError: Error, Sendable, Equatable {
    /// Every stream the peer allows (`peerMaxConcurrentStreams`, capped by the local limit) is in flight.
    case noStreamAvailable(inFlight: Int, limit: Int)
    /// The connection is not (or no longer) open: not connected yet, GOAWAY received, or closed.
    case notConnected
    /// The body does not fit the stream slot (`HTTP2ClientConfiguration.slotBodyCapacity`).
    case bodyTooLarge(length: Int, capacity: Int)
    /// A per-request header value was not set by the request writer.
    case missingValue(field: Int)
    /// nghttp2 refused the submit (`code` is an nghttp2 error code).
    case nghttp2(code: Int32)
}
