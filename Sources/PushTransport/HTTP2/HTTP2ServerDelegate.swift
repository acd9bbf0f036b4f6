/// Receives a server's events on the loop thread. All but `didReceive` have empty defaults.
public protocol HTTP2ServerDelegate: AnyObject {
    /// A complete request.
    func server(_ server: HTTP2Server, didReceive request: HTTP2ServerRequest)
    /// A connection was accepted.
    func server(_ server: HTTP2Server, connectionDidOpen connection: HTTP2ServerConnection)
    /// A connection closed (peer close, error, GOAWAY exchange done, or local close).
    func server(_ server: HTTP2Server, connectionDidClose connection: HTTP2ServerConnection, error: TransportError)
    /// A client changed its SETTINGS (any SETTINGS after its first).
    func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, didUpdatePeerSettings settings: HTTP2Settings)
    /// A client sent GOAWAY.
    func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, didReceiveGoAway goAway: HTTP2GoAway)
    /// A stream closed before it was answered (client reset, connection loss); `respond` to it now returns false.
    func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, streamDidClose streamID: Int32, errorCode: UInt32)
    /// A connection was refused before any session started; `reason` says why (e.g. `it offers only
    /// http/1.1 (ALPN); this server speaks h2`, `TLS handshake: …`), `peer` is its address.
    func server(_ server: HTTP2Server, didRefuseConnectionFrom peer: String, reason: String)
    /// A bound of ``ServerLimits`` was enforced on `connection` (nil: on the listener, for
    /// ``ServerLimit/connections`` and ``ServerLimit/descriptors``). Called each time; a logger says the
    /// first of each kind.
    func server(_ server: HTTP2Server, connection: HTTP2ServerConnection?, didEnforce limit: ServerLimit)
    /// A complete HTTP/1.1 request (servers with `servesHTTP1`); the next one on its connection is read
    /// once it is answered.
    func server(_ server: HTTP2Server, didReceive request: HTTP1ServerRequest)
    /// An HTTP/1.1 connection opened (its first bytes were not the HTTP/2 preface).
    func server(_ server: HTTP2Server, http1ConnectionDidOpen connection: HTTP1ServerConnection)
    /// An HTTP/1.1 connection closed.
    func server(_ server: HTTP2Server, http1ConnectionDidClose connection: HTTP1ServerConnection, error: TransportError)
}

extension HTTP2ServerDelegate {
    /// Default: ignore.
    public func server(_ server: HTTP2Server, connectionDidOpen connection: HTTP2ServerConnection) {}
    /// Default: ignore.
    public func server(_ server: HTTP2Server, connectionDidClose connection: HTTP2ServerConnection, error: TransportError) {}
    /// Default: ignore.
    public func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, didUpdatePeerSettings settings: HTTP2Settings) {}
    /// Default: ignore.
    public func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, didReceiveGoAway goAway: HTTP2GoAway) {}
    /// Default: ignore.
    public func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, streamDidClose streamID: Int32, errorCode: UInt32) {}
    /// Default: ignore.
    public func server(_ server: HTTP2Server, didRefuseConnectionFrom peer: String, reason: String) {}
    public func server(_ server: HTTP2Server, connection: HTTP2ServerConnection?, didEnforce limit: ServerLimit) {}
    /// Default: 501 Not Implemented.
    public func server(_ server: HTTP2Server, didReceive request: HTTP1ServerRequest) {
        request.connection.respond(to: request.sequence, status: 501)
    }
    /// Default: ignore.
    public func server(_ server: HTTP2Server, http1ConnectionDidOpen connection: HTTP1ServerConnection) {}
    /// Default: ignore.
    public func server(_ server: HTTP2Server, http1ConnectionDidClose connection: HTTP1ServerConnection, error: TransportError) {}
}
