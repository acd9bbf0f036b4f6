/// A prebuilt HTTP/1.1 request head up to `Content-Length: ` (request line, `Host`, fixed fields):
/// each request adds its length digits and the body. Immutable after init, so loops may share one.
///
/// ```swift
/// let head = try HTTP1RequestHead(path: "/v1/projects/p/messages:send", host: "127.0.0.1:8080",
///                                 headers: [("content-type", "application/json"), ("authorization", "Bearer …")])
/// ```
public final class HTTP1RequestHead: @unchecked Sendable {
    // @unchecked: written in init only.
    let bytes: UnsafeMutableRawBufferPointer

    /// A head for `method path` to `host` with `headers` (names and values must not contain CR, LF; names no colon).
    public init(method: String = "POST", path: String, host: String, headers: [(String, String)] = []) throws(HTTP1RequestHead.Invalid) {
        func check(_ s: String, _ what: String) throws(Invalid) {
            if s.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A }) { throw Invalid(description: "\(what) '\(s)' contains CR or LF") }
        }
        try check(method, "method"); try check(path, "path"); try check(host, "host")
        guard !method.isEmpty, !method.contains(" "), path.hasPrefix("/"), !path.contains(" ") else {
            throw Invalid(description: "'\(method) \(path)' is not a request line")
        }
        var text = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
        for (n, v) in headers {
            try check(n, "header name"); try check(v, "header value")
            if n.isEmpty || n.contains(":") { throw Invalid(description: "header name '\(n)' is not a token") }
            text += "\(n): \(v)\r\n"
        }
        text += "Content-Length: "
        let utf8 = Array(text.utf8)
        bytes = .allocate(byteCount: utf8.count, alignment: 1)
        bytes.copyBytes(from: utf8)
    }

    deinit { bytes.deallocate() }

    /// Why a head was refused.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        /// What was wrong.
        public var description: String
    }
}
