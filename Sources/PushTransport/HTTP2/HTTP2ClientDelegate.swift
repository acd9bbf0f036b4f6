/// Receives a client connection's events, on the loop thread. All but `didReceive` have empty defaults.
public protocol HTTP2ClientDelegate: AnyObject {
    /// TCP connected and the peer's first SETTINGS arrived: requests may be submitted.
    func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings)
    /// The connect failed, timed out, or the peer closed or broke the protocol before its first SETTINGS
    /// (e.g. ECONNREFUSED); the connection is closed. Not sent after a local `close()`.
    func connection(_ connection: HTTP2ClientConnection, didFailToConnect error: TransportError)
    /// The peer sent new SETTINGS (e.g. a lower max concurrent streams).
    func connection(_ connection: HTTP2ClientConnection, didUpdatePeerSettings settings: HTTP2Settings)
    /// The peer sent GOAWAY; no more submits are accepted on this connection.
    func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway goAway: HTTP2GoAway)
    /// A complete response.
    func connection(_ connection: HTTP2ClientConnection, didReceive response: HTTP2Response)
    /// A stream ended without a response.
    func connection(_ connection: HTTP2ClientConnection, streamDidFail failure: HTTP2StreamFailure)
    /// The connection closed (after a successful connect), with the reason; open streams were reported failed first.
    func connectionDidClose(_ connection: HTTP2ClientConnection, error: TransportError)
}

extension HTTP2ClientDelegate {
    /// Default: ignore.
    public func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings) {}
    /// Default: ignore.
    public func connection(_ connection: HTTP2ClientConnection, didFailToConnect error: TransportError) {}
    /// Default: ignore.
    public func connection(_ connection: HTTP2ClientConnection, didUpdatePeerSettings settings: HTTP2Settings) {}
    /// Default: ignore.
    public func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway goAway: HTTP2GoAway) {}
    /// Default: ignore.
    public func connection(_ connection: HTTP2ClientConnection, streamDidFail failure: HTTP2StreamFailure) {}
    /// Default: ignore.
    public func connectionDidClose(_ connection: HTTP2ClientConnection, error: TransportError) {}
}
