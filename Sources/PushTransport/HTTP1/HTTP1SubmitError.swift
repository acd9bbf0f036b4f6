/// Why `HTTP1ClientConnection.submit` refused a request (typed throw, nothing allocated).
public enum HTTP1SubmitError: Error, Sendable, Equatable {
    /// Not connected, closing, or a request is already in flight (one at a time).
    case busy
    /// The body `fill` wrote does not fit `bodyCapacity`.
    case bodyTooLarge
}
