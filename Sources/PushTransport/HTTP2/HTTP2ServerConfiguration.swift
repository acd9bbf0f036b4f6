/// Settings of an `HTTP2Server` (applied to every connection it accepts).
public struct HTTP2ServerConfiguration: Sendable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to clients (changeable later with `updateSettings`).
    public var maxConcurrentStreams: Int = 1000
    /// SETTINGS_INITIAL_WINDOW_SIZE announced to clients (request body bytes per stream before a WINDOW_UPDATE).
    public var initialWindowSize: Int = 1 << 20
    /// Connection-level receive window announced at start.
    var connectionWindowSize: Int = 16 << 20
    /// Set SO_REUSEPORT before bind so several loops (threads) can listen on one port.
    public var reusePort = false
    /// listen(2) backlog.
    public var backlog: Int32 = 1024
    /// Bytes of the per-connection staging buffer.
    var stagingCapacity: Int = 64 * 1024
    /// iovecs per write batch.
    var iovCapacity: Int = 1024
    /// Bounds the time from accept to a chosen protocol (the TLS handshake, the first bytes when they
    /// decide); a connection that takes longer is refused. 0: no bound.
    public var protocolSelectionTimeoutMilliseconds: UInt64 = 10_000
    /// TLS for every connection (listened or accepted in memory); nil serves cleartext (h2c).
    public var tls: TLSServerContext?
    /// The bounds every connection is held to: header and body bytes, back-pressure, timeouts.
    public var limits = ServerLimits()
    /// Fields (lower-case names) whose value may end in white space, taken with it trimmed instead of
    /// resetting the stream as RFC 9113 §8.2.1 has it: a server that must answer such a request as its
    /// application would (the gateway, for `authorization: bearer `) names them here.
    public var trailingWhitespaceTrimmed: [String] = []
    /// Open connections across every server sharing it (a gateway's loops); nil: no cap. A connection
    /// accepted past it is closed at once.
    public var connectionCap: ConnectionCap?
    /// Request bodies larger than this are reset with RST_STREAM(CANCEL), or over HTTP/1.1 answered 413
    /// (``ServerLimits/maxRequestBodySize``).
    public var maxRequestBodySize: Int {
        get { limits.maxRequestBodySize }
        set { limits.maxRequestBodySize = newValue }
    }
    /// Serve HTTP/1.1 on the same port as well: each cleartext connection is HTTP/2 when it starts with
    /// the HTTP/2 preface, HTTP/1.1 otherwise (requests go to the delegate's HTTP/1.1 `didReceive`).
    public var servesHTTP1 = false
    /// An HTTP/1.1 request still unfinished this long after its first bytes is answered 408 and its
    /// connection closed (0: wait for ever).
    var http1RequestTimeoutMilliseconds: UInt64 = 10_000
    /// Creates the defaults.
    public init() {}
}
