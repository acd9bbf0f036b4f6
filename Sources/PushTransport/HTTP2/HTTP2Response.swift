/// A complete response, delivered to `HTTP2ClientDelegate`. Views are valid during the callback only.
public struct HTTP2Response {
    /// The stream id.
    public var streamID: Int32
    /// The caller's context given to `submit`.
    public var context: UInt64
    /// The `:status` value.
    public var status: Int
    /// The response header fields (pseudo-headers excluded).
    public var headers: HTTP2HeaderList
    /// The response body: all of it, or its first `HTTP2ClientConfiguration.responseBodyLimit` bytes.
    public var body: UnsafeRawBufferPointer
    /// Timestamps of the stream.
    public var timing: HTTP2StreamTiming
    /// Bytes of body received, kept or not: more than `body.count` when the body was cut to the limit.
    public var bodyLength: Int
}

/// Timestamps of one stream, monotonic ns (`EventLoop.nowNanoseconds()`); 0 when it did not happen.
public struct HTTP2StreamTiming: Sendable {
    /// When `submit` was called.
    var submitted: UInt64
    /// When the request HEADERS frame was handed to the socket batch.
    var headersSent: UInt64
    /// When the response HEADERS began to arrive.
    var responseHeadersReceived: UInt64
    /// When the response ended (END_STREAM received) or the stream failed.
    public var completed: UInt64
}
