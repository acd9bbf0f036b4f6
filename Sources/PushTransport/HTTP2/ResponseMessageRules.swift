import CNGHTTP2

/// What the client keeps of one response to judge it as an HTTP/2 response (RFC 9113 §8.1, §8.2,
/// §8.3.2): the request's method where it changes the rules, which header section is being read, the
/// status, the declared content-length and the body bytes received so far.
struct ResponseMessage {
    var flags: UInt8 = 0
    /// The :status of the header section being read or of the final response, -1 before one came.
    var status: Int16 = -1
    /// The content-length field's value (0 when the response has no body), -1 when absent.
    var contentLength: Int64 = -1
    /// DATA payload bytes received (padding excluded).
    var received: Int64 = 0

    /// The request was HEAD, or CONNECT: its responses follow other rules of length.
    static let head: UInt8 = 1 << 0, connect: UInt8 = 1 << 1
    static let statusSeen: UInt8 = 1 << 2
    /// A regular field came: a pseudo-header field may no longer follow.
    static let pseudoClosed: UInt8 = 1 << 3
    /// An interim (1xx) response ended: a final one must follow before any body or the stream's end.
    static let expectFinal: UInt8 = 1 << 4
    /// The final response's header section ended: a later header section is trailers.
    static let final: UInt8 = 1 << 5
    /// The response was found malformed and its stream reset: nothing more of it counts.
    static let malformed: UInt8 = 1 << 6

    /// A response to a request with this method (the :method value, or nil when it has none).
    init(method: UnsafePointer<UInt8>?, _ methodLength: Int) {
        guard let method else { return }
        if methodLength == 4 && ResponseMessageRules.equals(method, 4, "HEAD") { flags = ResponseMessage.head }
        else if methodLength == 7 && ResponseMessageRules.equals(method, 7, "CONNECT") { flags = ResponseMessage.connect }
    }
}

/// The HTTP/2 response rules the client enforces on every response, as libnghttp2's own HTTP messaging
/// checks do them (same verdict for every field and frame), without the cost of its generic version.
///
/// The client session turns nghttp2's checks off (`nghttp2_option_set_no_http_messaging`) and calls
/// these from its header, data and frame callbacks. The byte classes and word-at-a-time checks are
/// `RequestMessageRules`' own.
///
/// Verdicts, per field: `.malformed` (the stream is reset with PROTOCOL_ERROR, RFC 9113 §8.1.1: a bad
/// byte in a name or value, an upper-case name, a pseudo-header field other than one :status, or
/// misplaced, a connection-specific field, a content-length that is not a number or not allowed), or
/// what kind of field it is. Interim responses (1xx, but 101) pass, and a final response must follow.
/// Plain Swift: tests drive it with byte arrays.
enum ResponseMessageRules {
    enum Field: Equatable {
        /// A field to hand on.
        case regular
        /// The :status field.
        case status
        /// A field that is accepted but not handed on: content-length 0 in a 204 response.
        case removed
        case malformed
    }

    /// The method flags of a request's fields (nghttp2_nv), found as nghttp2 records them: the first
    /// :method field.
    static func method(_ nv: UnsafePointer<nghttp2_nv>, _ count: Int) -> ResponseMessage {
        var i = 0
        while i < count {
            if nv[i].namelen == 7 && equals(nv[i].name, 7, ":method") {
                return ResponseMessage(method: nv[i].value, nv[i].valuelen)
            }
            i += 1
        }
        return ResponseMessage(method: nil, 0)
    }

    /// Judges one field of a response's header section, or of its trailers once the final response's
    /// header section ended, and records what it declares in `m`.
    @inline(__always)
    static func field(_ name: UnsafePointer<UInt8>, _ nameLength: Int, _ value: UnsafePointer<UInt8>, _ valueLength: Int,
                      _ m: inout ResponseMessage) -> Field {
        if nameLength > 0 && name[0] == UInt8(ascii: ":") {
            // Only :status belongs in a response, once, before any regular field and not in trailers.
            if nameLength != 7 || !RequestMessageRules.equals(name, 7, ":status") { return .malformed }
            if m.flags & (ResponseMessage.final | ResponseMessage.pseudoClosed | ResponseMessage.statusSeen) != 0 {
                return .malformed
            }
            // Three digits, and not 101: HTTP/2 has no Upgrade (RFC 9113 §8.6).
            guard valueLength == 3 else { return .malformed }
            let d0 = value[0] &- UInt8(ascii: "0"), d1 = value[1] &- UInt8(ascii: "0"), d2 = value[2] &- UInt8(ascii: "0")
            if d0 >= 10 || d1 >= 10 || d2 >= 10 { return .malformed }
            let status = Int16(d0) * 100 + Int16(d1) * 10 + Int16(d2)
            if status == 101 { return .malformed }
            m.status = status
            m.flags |= ResponseMessage.statusSeen
            return .status
        }
        m.flags |= ResponseMessage.pseudoClosed
        // Names are lower-case tokens (RFC 9113 §8.2.1).
        if !RequestMessageRules.isName(name, nameLength) { return .malformed }
        switch nameLength {
        case 2 where RequestMessageRules.equals(name, 2, "te"):
            // RFC 9113 §8.2.2: TE may only say "trailers".
            return RequestMessageRules.equalsIgnoringCase(value, valueLength, "trailers") ? .regular : .malformed
        case 14 where RequestMessageRules.equals(name, 14, "content-length"):
            return contentLength(value, valueLength, &m)
        case 7 where RequestMessageRules.equals(name, 7, "upgrade"),
             10 where RequestMessageRules.equals(name, 10, "connection") || RequestMessageRules.equals(name, 10, "keep-alive"),
             16 where RequestMessageRules.equals(name, 16, "proxy-connection"),
             17 where RequestMessageRules.equals(name, 17, "transfer-encoding"):
            // Connection-specific fields (RFC 9113 §8.2.2).
            return .malformed
        default:
            // host too: in a response it is a field like any other.
            return RequestMessageRules.isValue(value, valueLength) ? .regular : .malformed
        }
    }

    private static func contentLength(_ value: UnsafePointer<UInt8>, _ valueLength: Int, _ m: inout ResponseMessage) -> Field {
        if m.status == 204 {
            // A 204 has no content (RFC 9110 §15.3.5), but servers send "content-length: 0" with it:
            // that one is accepted and dropped, any other is malformed.
            if m.contentLength != -1 || valueLength != 1 || value[0] != UInt8(ascii: "0") { return .malformed }
            m.contentLength = 0
            return .removed
        }
        // Interim responses have no content, and a 2xx to CONNECT turns the stream into a tunnel.
        if m.status / 100 == 1 || (m.status / 100 == 2 && m.flags & ResponseMessage.connect != 0) { return .malformed }
        if m.contentLength != -1 { return .malformed }
        m.contentLength = RequestMessageRules.parseLength(value, valueLength)
        return m.contentLength == -1 ? .malformed : .regular
    }

    /// Whether the header section now beginning is trailers.
    @inline(__always)
    static func isTrailer(_ m: ResponseMessage) -> Bool { m.flags & ResponseMessage.final != 0 }

    /// The end of a response's header section (`trailer`: of its trailers): false when the response is
    /// malformed (no :status, trailers that do not end the stream, an interim response that ends it, a
    /// body shorter than its content-length).
    static func headersEnd(_ m: inout ResponseMessage, trailer: Bool, endStream: Bool) -> Bool {
        if trailer {
            if !endStream { return false }
        } else {
            if m.flags & ResponseMessage.statusSeen == 0 { return false }
            let method = m.flags & (ResponseMessage.head | ResponseMessage.connect)
            if m.status / 100 == 1 {
                // An interim response: the next header section is a response of its own.
                m.flags = method | ResponseMessage.expectFinal
                m.contentLength = -1
                m.status = -1
            } else {
                m.flags = method | ResponseMessage.final
                if method & ResponseMessage.head != 0 || m.status == 304 || m.status == 204 {
                    m.contentLength = 0
                } else if method & ResponseMessage.connect != 0 {
                    m.contentLength = -1
                }
            }
        }
        return !endStream || streamEnd(m)
    }

    /// A DATA payload of `count` bytes: false when no final response came before it or the body now
    /// exceeds its content-length.
    @inline(__always)
    static func data(_ m: inout ResponseMessage, _ count: Int) -> Bool {
        m.received &+= Int64(count)
        return m.flags & ResponseMessage.expectFinal == 0 && (m.contentLength == -1 || m.received <= m.contentLength)
    }

    /// The stream ended: false when only interim responses came or the body is not the length its
    /// content-length said.
    @inline(__always)
    static func streamEnd(_ m: ResponseMessage) -> Bool {
        m.flags & ResponseMessage.expectFinal == 0 && (m.contentLength == -1 || m.contentLength == m.received)
    }

    @inline(__always)
    static func equals(_ p: UnsafePointer<UInt8>, _ n: Int, _ s: StaticString) -> Bool {
        RequestMessageRules.equals(p, n, s)
    }
}
