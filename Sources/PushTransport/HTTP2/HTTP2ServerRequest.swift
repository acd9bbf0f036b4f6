/// A complete request given to `HTTP2ServerDelegate`. Views are valid during the callback only;
/// answer with `connection.respond(to: streamID, …)` now or later.
public struct HTTP2ServerRequest {
    /// The connection the request came on (respond through it). Unowned(unsafe), as in
    /// HTTP1ServerRequest: the connection is alive during the callback, so building the request per
    /// stream touches no reference count; a delegate that answers later keeps its own reference.
    public unowned(unsafe) let connection: HTTP2ServerConnection
    /// The stream id.
    public let streamID: Int32
    /// `:method`.
    public var method: UnsafeRawBufferPointer
    /// `:path`.
    public var path: UnsafeRawBufferPointer
    /// `:authority` (empty if absent; a `host` header may be among `headers`).
    public var authority: UnsafeRawBufferPointer
    /// `:scheme`.
    public var scheme: UnsafeRawBufferPointer
    /// Regular header fields.
    public var headers: HTTP2HeaderList
    /// The request body.
    public var body: UnsafeRawBufferPointer
    /// When the request completed: when the read that brought its END_STREAM began, monotonic ns.
    public var receivedAt: UInt64
}
