/// Settings of an `HTTP1ClientConnection`.
public struct HTTP1ClientConfiguration: Sendable {
    /// Bytes a request body may take (the connection's body buffer).
    public var bodyCapacity = 8192
    /// Bound on the TCP connect.
    public var connectTimeoutMilliseconds: UInt64 = 3000
    /// Keep the response's header fields (`HTTP1Response.headers`); a load generator needs status and body only.
    public var keepsResponseHeaders = true
    /// The defaults.
    public init() {}
}
