/// What the server keeps of one request's header section to judge it as an HTTP/2 request (RFC 9113
/// §8.1.1, §8.2, §8.3): which pseudo-header fields came, whether a regular field has come, the declared
/// content-length and the body bytes received so far.
struct RequestMessage {
    var flags: UInt16 = 0
    /// The content-length field's value, -1 when absent.
    var contentLength: Int64 = -1
    /// DATA payload bytes received (padding excluded).
    var received: Int64 = 0

    static let method: UInt16 = 1 << 0, path: UInt16 = 1 << 1, scheme: UInt16 = 1 << 2
    static let authority: UInt16 = 1 << 3, host: UInt16 = 1 << 4
    /// A regular field came: a pseudo-header field may no longer follow.
    static let pseudoClosed: UInt16 = 1 << 5
    static let connect: UInt16 = 1 << 6, options: UInt16 = 1 << 7
    static let pathSlash: UInt16 = 1 << 8, pathAsterisk: UInt16 = 1 << 9, schemeHTTP: UInt16 = 1 << 10
}

/// The HTTP/2 request rules the gateway's server enforces on every request, as libnghttp2's own HTTP
/// messaging checks do them (same verdict for every field), without the cost of its generic version.
///
/// nghttp2 checks each decoded field with a byte-at-a-time table walk, three function calls and a
/// token lookup: a large share of the gateway's time on a small APNs request.
/// The server session turns those checks off (`nghttp2_option_set_no_http_messaging`) and calls these
/// instead from its header, data and frame callbacks, where it already looks at every field: the common
/// characters are checked eight at a time, and the field names a request needs are recognised by
/// length first.
///
/// Verdicts, per field: `.malformed` (the request is reset with PROTOCOL_ERROR, RFC 9113 §8.1.1: any
/// bad byte in a name or value, as nghttp2 answers when no invalid-header callback is set, and as
/// nghttpd answers), or what kind of field it is. Plain Swift: tests drive it with byte arrays.
enum RequestMessageRules {
    enum Field: UInt8 {
        case regular, method, path, authority, scheme, malformed
    }

    /// What a field's bytes say on their own, before the request's state is taken into account: the
    /// kind of field (`.malformed` when its bytes alone make it so), the flag of a field that may come
    /// once, the flags it sets when accepted, and a content-length's value. The server keeps these for
    /// the fields a connection repeats (``FieldVerdictCache``), so a repeated field is judged without
    /// reading its bytes again.
    struct FieldClass {
        var kind: Field
        var pseudo: Bool
        /// The flag of a field allowed once per request (a pseudo-header field, host), else 0.
        var once: UInt16
        /// Flags the field sets besides `once` when it is accepted.
        var sets: UInt16
        /// A content-length field's value; -1 for every other field.
        var contentLength: Int64
    }

    /// Judges one field of a request's header section (`trailer`: of its trailer section) and records
    /// what it declares in `m`.
    @inline(__always)
    static func field(_ name: UnsafePointer<UInt8>, _ nameLength: Int, _ value: UnsafePointer<UInt8>, _ valueLength: Int,
                      _ m: inout RequestMessage, trailer: Bool) -> Field {
        apply(classify(name, nameLength, value, valueLength), &m, trailer: trailer)
    }

    /// The verdict on a field of class `c` where the request stands at `m` (`trailer`: in its trailer
    /// section); records what the field declares in `m`.
    @inline(__always)
    static func apply(_ c: FieldClass, _ m: inout RequestMessage, trailer: Bool) -> Field {
        if c.pseudo {
            // A pseudo-header field in trailers, after a regular field or repeated is malformed.
            if trailer || m.flags & RequestMessage.pseudoClosed != 0 || c.kind == .malformed || m.flags & c.once != 0 {
                return .malformed
            }
            m.flags |= c.once | c.sets
            return c.kind
        }
        m.flags |= RequestMessage.pseudoClosed
        if c.kind == .malformed || m.flags & c.once != 0 { return .malformed }
        m.flags |= c.once
        if c.contentLength >= 0 {
            if m.contentLength != -1 { return .malformed }
            m.contentLength = c.contentLength
        }
        return .regular
    }

    /// What a field's name alone says: which of the fields the rules single out it is.
    enum Name: UInt8 {
        case path, method, scheme, authority
        /// A pseudo-header field the server does not know (or an empty name after the colon).
        case unknownPseudo
        case te, host, contentLength
        /// A connection-specific field (RFC 9113 §8.2.2).
        case connectionSpecific
        /// Not a lower-case token (RFC 9113 §8.2.1).
        case invalid
        /// Any other regular field.
        case other
    }

    /// The class of a field from its bytes alone.
    @inline(__always)
    static func classify(_ name: UnsafePointer<UInt8>, _ nameLength: Int, _ value: UnsafePointer<UInt8>,
                         _ valueLength: Int) -> FieldClass {
        classify(kind(name, nameLength), value, valueLength)
    }

    /// What the name `name` is.
    @inline(__always)
    static func kind(_ name: UnsafePointer<UInt8>, _ nameLength: Int) -> Name {
        if nameLength > 0 && name[0] == UInt8(ascii: ":") {
            switch nameLength {
            case 5 where equals(name, nameLength, ":path"): return .path
            case 7 where equals(name, nameLength, ":method"): return .method
            case 7 where equals(name, nameLength, ":scheme"): return .scheme
            case 10 where equals(name, nameLength, ":authority"): return .authority
            // :protocol too: the server does not offer extended CONNECT (RFC 8441).
            default: return .unknownPseudo
            }
        }
        if !isName(name, nameLength) { return .invalid }
        switch nameLength {
        case 2 where equals(name, 2, "te"): return .te
        case 4 where equals(name, 4, "host"): return .host
        case 14 where equals(name, 14, "content-length"): return .contentLength
        case 7 where equals(name, 7, "upgrade"),
             10 where equals(name, 10, "connection") || equals(name, 10, "keep-alive"),
             16 where equals(name, 16, "proxy-connection"),
             17 where equals(name, 17, "transfer-encoding"):
            return .connectionSpecific
        default: return .other
        }
    }

    /// The class of a field named as `name` says, with the value `value`.
    @inline(__always)
    static func classify(_ name: Name, _ value: UnsafePointer<UInt8>, _ valueLength: Int) -> FieldClass {
        switch name {
        case .path, .method, .scheme, .authority, .unknownPseudo:
            return pseudoField(name, value, valueLength)
        default:
            return regularField(name, value, valueLength)
        }
    }

    @inline(__always)
    private static func pseudoField(_ name: Name, _ value: UnsafePointer<UInt8>, _ valueLength: Int) -> FieldClass {
        let malformed = FieldClass(kind: .malformed, pseudo: true, once: 0, sets: 0, contentLength: -1)
        // An empty or unknown pseudo-header field is malformed; so is one whose value has a byte its
        // kind does not allow.
        if valueLength == 0 { return malformed }
        switch name {
        case .path:
            guard allPath(value, valueLength) else { return malformed }
            let sets = value[0] == UInt8(ascii: "/") ? RequestMessage.pathSlash
                : valueLength == 1 && value[0] == UInt8(ascii: "*") ? RequestMessage.pathAsterisk : 0
            return FieldClass(kind: .path, pseudo: true, once: RequestMessage.path, sets: sets, contentLength: -1)
        case .method:
            guard isMethod(value, valueLength) else { return malformed }
            let sets = valueLength == 7 && equals(value, 7, "CONNECT") ? RequestMessage.connect
                : valueLength == 7 && equals(value, 7, "OPTIONS") ? RequestMessage.options : 0
            return FieldClass(kind: .method, pseudo: true, once: RequestMessage.method, sets: sets, contentLength: -1)
        case .scheme:
            let sets: UInt16
            if isHTTP(value, valueLength) {
                sets = RequestMessage.schemeHTTP
            } else if isScheme(value, valueLength) {
                sets = 0
            } else {
                return malformed
            }
            return FieldClass(kind: .scheme, pseudo: true, once: RequestMessage.scheme, sets: sets, contentLength: -1)
        case .authority:
            guard isAuthority(value, valueLength) else { return malformed }
            return FieldClass(kind: .authority, pseudo: true, once: RequestMessage.authority, sets: 0, contentLength: -1)
        default:
            return malformed
        }
    }

    @inline(__always)
    private static func regularField(_ name: Name, _ value: UnsafePointer<UInt8>, _ valueLength: Int) -> FieldClass {
        let malformed = FieldClass(kind: .malformed, pseudo: false, once: 0, sets: 0, contentLength: -1)
        let regular = FieldClass(kind: .regular, pseudo: false, once: 0, sets: 0, contentLength: -1)
        switch name {
        case .te:
            // RFC 9113 §8.2.2: TE may only say "trailers".
            return equalsIgnoringCase(value, valueLength, "trailers") ? regular : malformed
        case .host:
            if valueLength == 0 || !isAuthority(value, valueLength) { return malformed }
            return FieldClass(kind: .regular, pseudo: false, once: RequestMessage.host, sets: 0, contentLength: -1)
        case .contentLength:
            let length = parseLength(value, valueLength)
            if length == -1 { return malformed }
            return FieldClass(kind: .regular, pseudo: false, once: 0, sets: 0, contentLength: length)
        case .other:
            return isValue(value, valueLength) ? regular : malformed
        default:
            // Not a token, or connection-specific.
            return malformed
        }
    }

    /// The end of a request's header section (`trailer`: of its trailers): false when the request is
    /// malformed (pseudo-header fields missing, a path that is not absolute, trailers that do not end
    /// the stream, a body shorter than its content-length).
    static func headersEnd(_ m: inout RequestMessage, trailer: Bool, endStream: Bool) -> Bool {
        if trailer {
            if !endStream { return false }
        } else if m.flags & RequestMessage.connect != 0 {
            // CONNECT (RFC 9113 §8.5): :authority only.
            if m.flags & (RequestMessage.scheme | RequestMessage.path) != 0 || m.flags & RequestMessage.authority == 0 {
                return false
            }
            m.contentLength = -1
        } else {
            let required = RequestMessage.method | RequestMessage.path | RequestMessage.scheme
            if m.flags & required != required || m.flags & (RequestMessage.authority | RequestMessage.host) == 0 {
                return false
            }
            // http and https paths start with "/", but for OPTIONS "*" (RFC 9113 §8.3.1).
            if m.flags & RequestMessage.schemeHTTP != 0 && m.flags & RequestMessage.pathSlash == 0
                && m.flags & (RequestMessage.options | RequestMessage.pathAsterisk) != RequestMessage.options | RequestMessage.pathAsterisk {
                return false
            }
        }
        return !endStream || bodyComplete(m)
    }

    /// A DATA payload of `count` bytes: false when the body now exceeds its content-length.
    @inline(__always)
    static func data(_ m: inout RequestMessage, _ count: Int) -> Bool {
        m.received &+= Int64(count)
        return m.contentLength == -1 || m.received <= m.contentLength
    }

    /// The stream ended: false when the body is not the length its content-length said.
    @inline(__always)
    static func bodyComplete(_ m: RequestMessage) -> Bool {
        m.contentLength == -1 || m.contentLength == m.received
    }

    // MARK: bytes

    /// Which bytes each kind of field allows, one bit per byte value in four words (0-63, 64-127,
    /// 128-191, 192-255): RFC 9110 tokens (`token`: methods, and the method of an HTTP/1.x request line)
    /// and their lower-case form for field names, the URI characters of an authority, visible characters
    /// for a path, and a value's VCHAR, SP, HTAB and obs-text.
    struct CharClass {
        let w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64
        static let name = CharClass(w0: 0x03ff_6cfa_0000_0000, w1: 0x57ff_ffff_c000_0000, w2: 0, w3: 0)
        static let token = CharClass(w0: 0x03ff_6cfa_0000_0000, w1: 0x57ff_ffff_c7ff_fffe, w2: 0, w3: 0)
        static let authority = CharClass(w0: 0x2fff_7ff2_0000_0000, w1: 0x47ff_fffe_afff_ffff, w2: 0, w3: 0)
        static let path = CharClass(w0: 0xffff_fffe_0000_0000, w1: 0x7fff_ffff_ffff_ffff, w2: ~0, w3: ~0)
        static let value = CharClass(w0: 0xffff_ffff_0000_0200, w1: 0x7fff_ffff_ffff_ffff, w2: ~0, w3: ~0)

        @inline(__always) func contains(_ b: UInt8) -> Bool {
            let w: UInt64
            switch b >> 6 {
            case 0: w = w0
            case 1: w = w1
            case 2: w = w2
            default: w = w3
            }
            return (w >> UInt64(b & 63)) & 1 != 0
        }
    }

    private static let high: UInt64 = 0x8080_8080_8080_8080
    private static let ones: UInt64 = 0x0101_0101_0101_0101

    /// Nonzero when some byte of `w` is below `n` (n ≤ 128).
    @inline(__always) private static func anyBelow(_ w: UInt64, _ n: UInt8) -> UInt64 {
        (w &- ones &* UInt64(n)) & ~w & high
    }

    /// Nonzero when some byte of `w` equals `b`.
    @inline(__always) private static func anyEqual(_ w: UInt64, _ b: UInt8) -> UInt64 {
        let x = w ^ (ones &* UInt64(b))
        return (x &- ones) & ~x & high
    }

    /// The high bit of each byte of `w` that lies in lo...hi; every byte of `w` must be below 0x80 (so
    /// no sum carries into its neighbour).
    @inline(__always) private static func inRange(_ w: UInt64, _ lo: UInt8, _ hi: UInt8) -> UInt64 {
        (w &+ ones &* UInt64(0x80 - lo)) & ~(w &+ ones &* UInt64(0x7f - hi)) & high
    }

    /// Every byte of `p[0..<n]` in `c`.
    @inline(__always) static func all(_ p: UnsafePointer<UInt8>, _ n: Int, _ c: CharClass) -> Bool {
        var i = 0
        while i < n {
            if !c.contains(p[i]) { return false }
            i += 1
        }
        return true
    }

    /// `ok` holds for words that together cover `p[0..<n]` (n ≥ 4): whole words, the last one
    /// overlapping the one before, and below 8 bytes two overlapping halves.
    @inline(__always) private static func everyWord(_ p: UnsafePointer<UInt8>, _ n: Int, _ ok: (UInt64) -> Bool) -> Bool {
        let raw = UnsafeRawPointer(p)
        if n < 8 {
            return ok(UInt64(raw.loadUnaligned(as: UInt32.self)) | UInt64(raw.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)) << 32)
        }
        var i = 0
        while true {
            if !ok(raw.loadUnaligned(fromByteOffset: min(i, n - 8), as: UInt64.self)) { return false }
            i += 8
            if i >= n { return true }
        }
    }

    /// Every byte of `p[0..<n]` in `c`, settled a word at a time when every byte passes `plain` (a
    /// subset of `c` that real fields keep to) and byte by byte otherwise.
    @inline(__always) private static func check(_ p: UnsafePointer<UInt8>, _ n: Int, _ c: CharClass,
                                                plain: (UInt64) -> Bool) -> Bool {
        if n >= 4 && everyWord(p, n, plain) { return true }
        return all(p, n, c)
    }

    /// A field name nghttp2 passes: one or more lower-case token characters.
    @inline(__always) static func isName(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        n > 0 && check(p, n, CharClass.name) { w in
            // a-z, 0-9 and "-", as nearly every real name is.
            w & high == 0 && (inRange(w, 0x61, 0x7a) | inRange(w, 0x30, 0x39) | inRange(w, 0x2d, 0x2d)) == high
        }
    }

    /// A method: one or more token characters.
    @inline(__always) static func isMethod(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        n > 0 && check(p, n, CharClass.token) { w in
            w & high == 0 && (inRange(w, 0x41, 0x5a) | inRange(w, 0x61, 0x7a)) == high
        }
    }

    /// An authority (or host): URI authority characters.
    @inline(__always) static func isAuthority(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        check(p, n, CharClass.authority) { w in
            // Letters, digits, ".", "-" and ":": host names, addresses and ports.
            w & high == 0 && (inRange(w, 0x61, 0x7a) | inRange(w, 0x30, 0x3a) | inRange(w, 0x2d, 0x2e) | inRange(w, 0x41, 0x5a)) == high
        }
    }

    /// A value RFC 9113 §8.2.1 allows: no NUL, CR, LF or other control byte but HTAB, and no white
    /// space at either end.
    @inline(__always) static func isValue(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        if n == 0 { return true }
        let first = p[0], last = p[n - 1]
        if first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09 { return false }
        // HTAB is below 0x20 too: the byte walk settles words that have one.
        return check(p, n, CharClass.value) { w in anyBelow(w, 0x20) | anyEqual(w, 0x7f) == 0 }
    }

    /// Every byte of a :path value visible (0x21-0x7e) or above 0x7f.
    @inline(__always) static func allPath(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        if n < 4 { return all(p, n, CharClass.path) }
        if n < 16 { return everyWord(p, n) { w in anyBelow(w, 0x21) | anyEqual(w, 0x7f) == 0 } }
        // An APNs path (64 hex digits of token) is long: two words a step, one test for both, the last
        // pair overlapping the one before.
        let raw = UnsafeRawPointer(p)
        var i = 0
        while true {
            let at = min(i, n - 16)
            let a = raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)
            let b = raw.loadUnaligned(fromByteOffset: at + 8, as: UInt64.self)
            if anyBelow(a, 0x21) | anyEqual(a, 0x7f) | anyBelow(b, 0x21) | anyEqual(b, 0x7f) != 0 { return false }
            i += 16
            if i >= n { return true }
        }
    }

    /// "http" or "https", in any case.
    @inline(__always) static func isHTTP(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        // Or-ing 0x20 folds only "H", "T", "P" and "S" onto the lower-case letters compared.
        guard n == 4 || (n == 5 && p[4] | 0x20 == UInt8(ascii: "s")) else { return false }
        return UnsafeRawPointer(p).loadUnaligned(as: UInt32.self) | 0x2020_2020 == 0x7074_7468
    }

    /// RFC 3986 scheme: a letter, then letters, digits, "+", "-" or ".".
    static func isScheme(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        if n == 0 || (p[0] | 0x20) &- UInt8(ascii: "a") >= 26 { return false }
        var i = 1
        while i < n {
            let b = p[i]
            if (b | 0x20) &- UInt8(ascii: "a") >= 26 && b &- UInt8(ascii: "0") >= 10
                && b != UInt8(ascii: "+") && b != UInt8(ascii: "-") && b != UInt8(ascii: ".") { return false }
            i += 1
        }
        return true
    }

    /// A content-length: one or more digits, at most Int64.max; -1 otherwise.
    static func parseLength(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int64 {
        if n == 0 { return -1 }
        var v: Int64 = 0
        var i = 0
        while i < n {
            let d = p[i] &- UInt8(ascii: "0")
            if d >= 10 { return -1 }
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int64(d))
            if o1 || o2 { return -1 }
            v = s
            i += 1
        }
        return v
    }

    /// `p[0..<n]` is `s` (``bytesEqual(_:_:count:)``).
    @inline(__always) static func equals(_ p: UnsafePointer<UInt8>, _ n: Int, _ s: StaticString) -> Bool {
        n == s.utf8CodeUnitCount && bytesEqual(p, s.utf8Start, count: n)
    }

    static func equalsIgnoringCase(_ p: UnsafePointer<UInt8>, _ n: Int, _ s: StaticString) -> Bool {
        if n != s.utf8CodeUnitCount { return false }
        let q = s.utf8Start
        var i = 0
        while i < n {
            var b = p[i]
            if b &- UInt8(ascii: "A") < 26 { b |= 0x20 }
            if b != q[i] { return false }
            i += 1
        }
        return true
    }
}
