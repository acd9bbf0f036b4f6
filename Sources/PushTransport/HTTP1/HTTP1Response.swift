/// A response, valid during the delegate call.
public struct HTTP1Response {
    /// The status code.
    public var status: Int
    /// The header fields (names lower-cased; empty unless `keepsResponseHeaders`).
    public var headers: HTTP2HeaderList
    /// The body (de-chunked).
    public var body: UnsafeRawBufferPointer
    /// The request's context.
    public var context: UInt64
    /// When the request was submitted and when the response was read, monotonic ns.
    public var submittedAt: UInt64, completedAt: UInt64
}
