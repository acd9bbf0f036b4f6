import CUV

/// Outcome of handing a batch of iovecs to a `ByteTransport`.
enum WriteOutcome {
    /// Every byte was taken synchronously; the buffers may be reused now.
    case complete
    /// Part of the batch is queued; buffers (and the iovec array) stay untouched until `transportWriteDidComplete`.
    case pending
    /// The write failed; the transport has closed and already reported `transportDidClose`.
    case failed
}

/// Events from a byte transport to the session above it, on the loop thread.
protocol ByteTransportOwner: AnyObject {
    /// The transport can carry bytes now (TCP connected).
    func transportDidConnect()
    /// The transport could not connect; it is closed.
    func transportDidFailToConnect(_ error: TransportError)
    /// Bytes arrived; they are valid during the call only.
    func transportDidRead(_ bytes: UnsafeRawBufferPointer)
    /// A `.pending` write finished; the batch's buffers may be reused.
    func transportWriteDidComplete()
    /// The transport closed (peer EOF, an error, or `close(_:notify: true)`).
    func transportDidClose(_ error: TransportError?)
}

/// The seam between the bytes and the HTTP/2 session above them. `TCPTransport` carries them over a
/// libuv socket, `InMemoryTransport` hands them to its peer on the same loop; a TLS layer is another
/// implementation (it encrypts the iovecs into its own buffer and forwards to a TCP transport).
///
/// A session writes once per loop turn, so these calls are per batch, not per request.
protocol ByteTransport: AnyObject {
    /// Receives the transport's events; cleared by an owner that goes away first.
    var owner: ByteTransportOwner? { get set }
    /// Writes `count` iovecs as one batch. The array may be modified in place while pending.
    func write(_ iov: UnsafeMutablePointer<uv_buf_t>, count: Int) -> WriteOutcome
    /// Starts (or resumes) delivering reads to the owner.
    func startReading()
    /// Stops delivering reads until `startReading()` (back-pressure on a peer that does not read).
    func stopReading()
    /// Closes the transport; pending writes are cancelled; `transportDidClose(error)` is called now unless `notify` is false.
    func close(_ error: TransportError?, notify: Bool)
    /// The peer's address for messages, e.g. `127.0.0.1:54321` (allocates: not for the request path).
    func peerName() -> String
    /// Ends the sending direction once queued writes are out (TCP FIN), while reads go on: an HTTP/1.1
    /// server closing after an error answer lets the client read to the end instead of being reset.
    func shutdownWrite()
}

extension ByteTransport {
    /// Default: nothing (the close that follows ends both directions).
    func shutdownWrite() {}
}

extension ByteTransport {
    /// A transport that cannot pause reads ignores the request: the session stays correct, only
    /// without back-pressure.
    func stopReading() {}
}
