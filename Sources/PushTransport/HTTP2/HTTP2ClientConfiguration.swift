/// Settings of an `HTTP2ClientConnection`.
public struct HTTP2ClientConfiguration: Sendable {
    /// Local cap on streams in flight; the effective limit is min(this, the peer's SETTINGS_MAX_CONCURRENT_STREAMS).
    public var maxConcurrentStreams: Int = 1000
    /// Bytes of preallocated body memory per stream slot (zero-copy mode writes the payload here).
    public var slotBodyCapacity: Int = 8 * 1024
    /// Bounds the TCP connect plus the wait for the peer's first SETTINGS.
    public var connectTimeoutMilliseconds: UInt64 = 5000
    /// SETTINGS_INITIAL_WINDOW_SIZE announced to the peer (how much response body it may send per stream).
    public var initialWindowSize: Int = 1 << 20
    /// Connection-level receive window announced with a WINDOW_UPDATE at start.
    var connectionWindowSize: Int = 16 << 20
    /// Bytes of the per-connection staging buffer (HEADERS, SETTINGS, DATA frame headers).
    var stagingCapacity: Int = 64 * 1024
    /// iovecs per write batch (each zero-copy DATA frame uses one for its body).
    var iovCapacity: Int = 1024
    /// Whether responses carry their header fields (`HTTP2Response.headers`). A caller that needs only
    /// the status and the body turns this off and saves copying every field of every response.
    public var keepsResponseHeaders: Bool = true
    /// The most response body bytes kept per stream; the rest is counted (`HTTP2Response.bodyLength`)
    /// and dropped, so a peer sending huge bodies costs no memory. A load generator needs the first
    /// bytes only, for an error's reason.
    public var responseBodyLimit: Int = 1 << 20
    /// The most response header bytes kept per stream (name + value of each field; `:status` always
    /// counts); the fields past it are dropped. Only kept headers cost memory.
    var responseHeaderLimit: Int = 64 * 1024
    /// Creates the defaults.
    public init() {}
}
