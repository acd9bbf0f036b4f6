/// A complete HTTP/1.1 request given to `HTTP2ServerDelegate.server(_:didReceive:)` by a server that also
/// speaks HTTP/1.1 (`HTTP2ServerConfiguration.servesHTTP1`). Views are valid during the callback only;
/// answer with `connection.respond(to: sequence, …)` now or later. A connection carries one request at a
/// time: the next one is read only once this one is answered.
public struct HTTP1ServerRequest {
    /// The connection the request came on (respond through it).
    public let connection: HTTP1ServerConnection
    /// The request's number on its connection (1, 2, …): `respond(to:)` names it, so a late answer to a
    /// request whose connection moved on is refused.
    public let sequence: UInt64
    /// The method (`POST`, `GET`, …).
    public var method: UnsafeRawBufferPointer
    /// The request target as sent (`/v1/projects/p/messages:send`, with any query).
    public var path: UnsafeRawBufferPointer
    /// The header fields, names in lower case (as HTTP/2 spells them), values as sent.
    public var headers: HTTP2HeaderList
    /// The body (de-chunked; empty when there was none).
    public var body: UnsafeRawBufferPointer
    /// When the request completed, monotonic ns.
    public var receivedAt: UInt64
    /// Whether the connection stays open after the answer (HTTP/1.1 without `Connection: close`).
    var keepAlive: Bool
}

/// Adds response header fields inside `HTTP1ServerConnection.respond` (written straight into the
/// connection's output). Names are sent as given; `Content-Length`, `Date` and `Connection` are added
/// by the connection.
public struct HTTP1ResponseHeaders: ResponseHeaderWriter, ~Copyable {
    unowned(unsafe) let connection: HTTP1ServerConnection

    /// Adds a field; the value must not contain CR or LF.
    public mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        connection.appendField(name, value)
    }
}
