import CHTTPParser
import CNGHTTP2
import COpenSSL
import CUV

/// A failure of the socket or HTTP/2 layer, reported to delegates (never thrown on the request path).
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, by layer.
    public enum Kind: Sendable, Equatable {
        /// A libuv call failed (`code` is the negative libuv error, e.g. UV_ECONNREFUSED).
        case system
        /// The TCP connect or the HTTP/2 handshake (peer SETTINGS) did not finish in time.
        case connectTimeout
        /// The peer closed the connection (EOF) or the socket failed while the connection was open.
        case connectionLost
        /// nghttp2 reported a protocol error (`code` is the nghttp2 error code, e.g. NGHTTP2_ERR_PROTO).
        case protocolError
        /// The connection was closed by its owner (`close()`), not by the peer.
        case closedLocally
        /// A syscall outside libuv failed (`code` is errno).
        case errno
        /// The TLS layer failed: a handshake the peer refused or broke, a bad record (`code` is
        /// OpenSSL's packed error, 0 when the peer closed during the handshake).
        case tls
        /// The peer's certificate did not verify (`code` is OpenSSL's X509_V_ERR_* value).
        case certificate
        /// The peer broke HTTP/1.1 (`code` is libhttp-parser's `http_errno`, e.g. HPE_INVALID_HEADER_TOKEN).
        case http1
    }

    /// The kind of failure.
    public var kind: Kind
    /// The libuv, nghttp2 or errno code (see `kind`).
    public var code: Int32
    /// The function that failed, e.g. "uv_tcp_connect".
    var function: StaticString
    /// Where the error was raised.
    var fileID: StaticString
    /// Line where the error was raised.
    public var line: UInt

    /// Equality by kind, code and function (not source location).
    public static func == (a: TransportError, b: TransportError) -> Bool {
        a.kind == b.kind && a.code == b.code && a.function.description == b.function.description
    }

    /// An error of a libuv call returning `code` (< 0).
    init(uv code: Int32, _ function: StaticString, fileID: StaticString = #fileID, line: UInt = #line) {
        self.init(kind: .system, code: code, function: function, fileID: fileID, line: line)
    }

    /// An error of a syscall that set `errno`.
    init(errno code: Int32, _ function: StaticString, fileID: StaticString = #fileID, line: UInt = #line) {
        self.init(kind: .errno, code: code, function: function, fileID: fileID, line: line)
    }

    /// An error of any kind.
    init(kind: Kind, code: Int32, function: StaticString, fileID: StaticString = #fileID, line: UInt = #line) {
        self.kind = kind
        self.code = code
        self.function = function
        self.fileID = fileID
        self.line = line
    }

    /// The library's text for `code` (uv_strerror / nghttp2_strerror / strerror).
    public var message: String {
        switch kind {
        case .system, .connectionLost:
            return code == 0 ? "connection closed by peer" : String(cString: uv_strerror(code))
        case .protocolError: return String(cString: nghttp2_strerror(code))
        case .errno: return String(cString: strerror(code))
        case .connectTimeout: return "timed out"
        case .closedLocally: return "closed locally"
        case .tls:
            if code == 0 { return "the peer closed the connection during the TLS handshake" }
            if code < 0 { return "TLS error \(-code)" }
            return TLSErrors.reason(UInt(UInt32(bitPattern: code)))
        case .certificate:
            return "certificate verify failed: \(String(cString: X509_verify_cert_error_string(Int(code))))"
        case .http1: return String(cString: http_errno_description(http_errno(UInt32(code))))
        }
    }

    /// A one-line description, e.g. `uv_tcp_connect: connection refused (-111)`.
    public var description: String { "\(function): \(message) (\(code))" }
}
