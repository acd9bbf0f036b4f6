/// Events of an `HTTP1ClientConnection`, on its loop's thread.
public protocol HTTP1ClientDelegate: AnyObject {
    /// The connection is up: requests may be submitted.
    func connectionDidConnect(_ connection: HTTP1ClientConnection)
    /// The connect failed or timed out; the connection is closed.
    func connection(_ connection: HTTP1ClientConnection, didFailToConnect error: TransportError)
    /// The response to the request in flight.
    func connection(_ connection: HTTP1ClientConnection, didReceive response: HTTP1Response)
    /// The request in flight got no response (the connection was lost, or the peer broke HTTP/1.1).
    func connection(_ connection: HTTP1ClientConnection, requestDidFail context: UInt64, error: TransportError)
    /// The connection closed (peer, error, `Connection: close`, or `close()`).
    func connectionDidClose(_ connection: HTTP1ClientConnection, error: TransportError)
}
