import CNGHTTP2
@testable import PushTransport
import Testing

/// libnghttp2's own verdict on one request: a bare server session with its HTTP messaging checks on
/// (the checks the server turns off and does itself), fed the same bytes as the server under test.
private final class ReferenceServer {
    private var session: OpaquePointer?
    private var out: [UInt8] = []
    private var fields: [(String, String)] = []
    private var ended = false

    init() {
        var cbs: OpaquePointer?
        nghttp2_session_callbacks_new(&cbs)
        defer { nghttp2_session_callbacks_del(cbs) }
        nghttp2_session_callbacks_set_send_callback(cbs) { _, data, len, _, ud in
            let me = Unmanaged<ReferenceServer>.fromOpaque(ud!).takeUnretainedValue()
            me.out += UnsafeBufferPointer(start: data, count: len)
            return len
        }
        nghttp2_session_callbacks_set_on_header_callback(cbs) { _, _, name, nl, value, vl, _, ud in
            let me = Unmanaged<ReferenceServer>.fromOpaque(ud!).takeUnretainedValue()
            me.fields.append((String(decoding: UnsafeBufferPointer(start: name, count: nl), as: UTF8.self),
                              String(decoding: UnsafeBufferPointer(start: value, count: vl), as: UTF8.self)))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs) { _, frame, ud in
            let me = Unmanaged<ReferenceServer>.fromOpaque(ud!).takeUnretainedValue()
            let type = pb_frame_type(frame!)
            if (type == 0x0 || type == 0x1) && pb_frame_stream_id(frame!) == 1 && pb_frame_flags(frame!) & 0x1 != 0 { me.ended = true }
            return 0
        }
        nghttp2_session_server_new(&session, cbs, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { nghttp2_session_del(session) }

    /// The verdict on `bytes` (the client preface, SETTINGS and one request on stream 1).
    func verdict(_ bytes: [UInt8]) -> RequestOutcome {
        _ = bytes.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, $0.count) }
        _ = nghttp2_session_send(session)
        var i = 0
        while i + 9 <= out.count {
            let n = Int(out[i]) << 16 | Int(out[i + 1]) << 8 | Int(out[i + 2])
            let type = out[i + 3]
            let stream = out[i + 5..<i + 9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let payload = Array(out[i + 9..<i + 9 + n])
            let word = { (k: Int) in payload[k..<k + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
            if type == 0x3 && stream == 1 { return .reset(word(0)) }
            if type == 0x7 { return .goAway(word(4)) }
            i += 9 + n
        }
        guard ended else { return .unanswered }
        let pseudo = fields.filter { $0.0.hasPrefix(":") }.map { "\($0.0): \($0.1)" }.sorted()
        return .accepted(pseudo + fields.filter { !$0.0.hasPrefix(":") }.map { "\($0.0): \($0.1)" })
    }
}

enum RequestOutcome: Equatable {
    /// Delivered whole, with these fields (pseudo-header fields sorted, then the rest in order).
    case accepted([String])
    case reset(UInt32)
    case goAway(UInt32)
    case unanswered
}

/// One request as a client could send it: a header section, an optional body and optional trailers.
struct RequestCase: CustomStringConvertible {
    var fields: [(String, [UInt8])]
    var body = 0
    var trailers: [(String, [UInt8])]? = nil
    var trailersEndStream = true

    var description: String {
        func show(_ f: [(String, [UInt8])]) -> String {
            f.map { "\($0.0)=\(String(decoding: $0.1, as: UTF8.self).debugDescription)" }.joined(separator: " ")
        }
        var s = show(fields) + " body=\(body)"
        if let trailers { s += " trailers[\(trailersEndStream ? "end" : "open")]: " + show(trailers) }
        return s
    }

    /// Literal fields without indexing, no Huffman: the bytes stand as written.
    static func block(_ fields: [(String, [UInt8])]) -> [UInt8] {
        var b: [UInt8] = []
        func length(_ n: Int) {
            if n < 127 { b.append(UInt8(n)); return }
            b.append(127)
            var r = n - 127
            while r >= 128 { b.append(UInt8(r & 0x7f) | 0x80); r >>= 7 }
            b.append(UInt8(r))
        }
        for (name, value) in fields {
            b.append(0x00)
            length(name.utf8.count)
            b += Array(name.utf8)
            length(value.count)
            b += value
        }
        return b
    }

    /// The frames on stream 1.
    var frames: [UInt8] {
        let hasMore = body > 0 || trailers != nil
        var f = RawPeer.frame(type: 0x1, flags: 0x4 | (hasMore ? 0 : 0x1), stream: 1, RequestCase.block(fields))
        if body > 0 {
            f += RawPeer.frame(type: 0x0, flags: trailers == nil ? 0x1 : 0, stream: 1, [UInt8](repeating: 0x7b, count: body))
        }
        if let trailers {
            f += RawPeer.frame(type: 0x1, flags: 0x4 | (trailersEndStream ? 0x1 : 0), stream: 1, RequestCase.block(trailers))
        }
        return f
    }
}

@Suite struct RequestMessageRulesTests {
    /// The byte classes, each spelled from its definition: RFC 9110 tokens (lower case only for field
    /// names), RFC 3986 authority characters, visible bytes and obs-text for a path, and a field value's
    /// VCHAR, SP, HTAB and obs-text.
    @Test func byteClassesAreTheDefinitions() {
        let tokenSymbols = Set("!#$%&'*+-.^_`|~".utf8)
        let digits = Set(UInt8(ascii: "0")...UInt8(ascii: "9"))
        let lower = Set(UInt8(ascii: "a")...UInt8(ascii: "z")), upper = Set(UInt8(ascii: "A")...UInt8(ascii: "Z"))
        let name = tokenSymbols.union(digits).union(lower)
        let token = name.union(upper)
        let authority = Set("-._~!$&'()*+,;=:@[]%".utf8).union(digits).union(lower).union(upper)
        let path = Set(UInt8(0x21)...UInt8(0x7e)).union(UInt8(0x80)...UInt8(0xff))
        let value = path.union([0x20, 0x09])
        for b in 0...255 {
            let c = UInt8(b)
            #expect(RequestMessageRules.CharClass.name.contains(c) == name.contains(c), "name \(b)")
            #expect(RequestMessageRules.CharClass.token.contains(c) == token.contains(c), "token \(b)")
            #expect(RequestMessageRules.CharClass.authority.contains(c) == authority.contains(c), "authority \(b)")
            #expect(RequestMessageRules.CharClass.path.contains(c) == path.contains(c), "path \(b)")
            #expect(RequestMessageRules.CharClass.value.contains(c) == value.contains(c), "value \(b)")
        }
    }

    /// The word-at-a-time checks agree with the byte-at-a-time walk for every byte value at every
    /// position of every length up to 24, 40 for paths (whole words, pairs of words, overlapping last
    /// ones, two overlapping halves below eight bytes, byte walks below four), on a plain background
    /// and on one of other classes.
    @Test func wordChecksAgreeWithTheByteWalk() {
        typealias Check = (UnsafePointer<UInt8>, Int) -> Bool
        let checks: [(String, Check, Check)] = [
            ("name", RequestMessageRules.isName, { $1 > 0 && RequestMessageRules.all($0, $1, .name) }),
            ("path", RequestMessageRules.allPath, { RequestMessageRules.all($0, $1, .path) }),
            ("method", RequestMessageRules.isMethod, { $1 > 0 && RequestMessageRules.all($0, $1, .token) }),
            ("authority", RequestMessageRules.isAuthority, { RequestMessageRules.all($0, $1, .authority) }),
            ("value", { p, n in RequestMessageRules.isValue(p, n) },
             { p, n in n == 0 || (p[0] != 0x20 && p[0] != 0x09 && p[n - 1] != 0x20 && p[n - 1] != 0x09 && RequestMessageRules.all(p, n, .value)) }),
        ]
        var mismatches: [String] = []
        for (label, fast, exact) in checks {
            for n in 1...(label == "path" ? 40 : 24) {
                for at in 0..<n {
                    for b in 0...255 {
                        var bytes = [UInt8](repeating: UInt8(ascii: "k"), count: n)
                        if b & 1 == 1 { for k in 0..<n where k != at { bytes[k] = Array("A9.-:[~é".utf8)[(k + b) % 9] } }
                        bytes[at] = UInt8(b)
                        let (f, e) = bytes.withUnsafeBufferPointer { (fast($0.baseAddress!, n), exact($0.baseAddress!, n)) }
                        if f != e { mismatches.append("\(label) length \(n) byte \(b) at \(at): \(f) vs \(e)") }
                    }
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
    }

    @Test func httpSchemesInAnyCase() {
        func http(_ s: String) -> Bool { Array(s.utf8).withUnsafeBufferPointer { RequestMessageRules.isHTTP($0.baseAddress!, $0.count) } }
        for yes in ["http", "https", "HTTP", "HttpS"] { #expect(http(yes), "\(yes)") }
        for no in ["htt", "httpx", "hxxp", "https1", "h\u{8}tp", "ftp", "httq"] { #expect(!http(no), "\(no)") }
    }

    @Test func contentLengthIsDigitsOnlyAndFitsInt64() {
        func parse(_ s: String) -> Int64 { Array(s.utf8).withUnsafeBufferPointer { RequestMessageRules.parseLength($0.baseAddress!, $0.count) } }
        #expect(parse("0") == 0)
        #expect(parse("0096") == 96)
        #expect(parse("9223372036854775807") == Int64.max)
        for bad in ["", "9223372036854775808", "-1", "+1", "1 2", "1.0", "0x10"] where !bad.isEmpty {
            #expect(parse(bad) == -1, "\(bad)")
        }
        #expect(RequestMessageRules.parseLength(UnsafePointer(bitPattern: 1)!, 0) == -1)
    }

    /// Cases h2spec's §8.1 group sends, and what RFC 9113 answers them: reset with PROTOCOL_ERROR.
    @Test(arguments: [
        ("upper-case name", [("X-Upper", "1")], "reset"),
        ("pseudo after regular", [("x-a", "1"), (":authority", "b")], "reset"),
        ("unknown pseudo", [(":foo", "1")], "reset"),
        ("connection-specific", [("connection", "close")], "reset"),
        ("te not trailers", [("te", "gzip")], "reset"),
        ("te trailers", [("te", "Trailers")], "accepted"),
        ("second :path", [(":path", "/y")], "reset"),
        ("bad byte in a value", [("x-a", "a\u{1}b")], "reset"),
        ("leading space", [("x-a", " a")], "reset"),
        ("odd name character", [("x a", "1")], "reset"),
        ("host and authority", [("host", "example.com")], "accepted"),
        ("content-length not a number", [("content-length", "x")], "reset"),
    ] as [(String, [(String, String)], String)])
    func fieldVerdicts(label: String, extra: [(String, String)], expected: String) {
        var m = RequestMessage()
        var verdict = "accepted"
        for (name, value) in [(":method", "GET"), (":scheme", "https"), (":path", "/x"), (":authority", "a")] + extra {
            let n = Array(name.utf8), v = Array(value.utf8)
            let f = n.withUnsafeBufferPointer { np in
                v.withUnsafeBufferPointer { vp in
                    RequestMessageRules.field(np.baseAddress!, n.count, vp.baseAddress ?? np.baseAddress!, v.count, &m, trailer: false)
                }
            }
            if f == .malformed { verdict = "reset"; break }
        }
        if verdict != "reset" && !RequestMessageRules.headersEnd(&m, trailer: false, endStream: true) { verdict = "reset" }
        #expect(verdict == expected, "\(label)")
    }

    @Test func requiredPseudoHeaderFieldsAndPaths() {
        func end(_ fields: [(String, String)]) -> Bool {
            var m = RequestMessage()
            for (name, value) in fields {
                let n = Array(name.utf8), v = Array(value.utf8)
                let f = n.withUnsafeBufferPointer { np in
                    v.withUnsafeBufferPointer { RequestMessageRules.field(np.baseAddress!, n.count, $0.baseAddress!, v.count, &m, trailer: false) }
                }
                if f == .malformed { return false }
            }
            return RequestMessageRules.headersEnd(&m, trailer: false, endStream: true)
        }
        #expect(end([(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "a")]))
        #expect(end([(":method", "GET"), (":scheme", "http"), (":path", "/"), ("host", "a")]), "host stands for :authority")
        #expect(!end([(":method", "GET"), (":scheme", "http"), (":path", "/")]), "no authority at all")
        #expect(!end([(":method", "GET"), (":path", "/"), (":authority", "a")]), "no :scheme")
        #expect(!end([(":method", "GET"), (":scheme", "http"), (":path", "x"), (":authority", "a")]), "relative http path")
        #expect(end([(":method", "GET"), (":scheme", "foo"), (":path", "x"), (":authority", "a")]), "other schemes: any path")
        #expect(end([(":method", "OPTIONS"), (":scheme", "http"), (":path", "*"), (":authority", "a")]))
        #expect(!end([(":method", "GET"), (":scheme", "http"), (":path", "*"), (":authority", "a")]))
        #expect(end([(":method", "CONNECT"), (":authority", "a:443")]))
        #expect(!end([(":method", "CONNECT"), (":authority", "a:443"), (":path", "/")]))
        #expect(!end([(":method", "CONNECT"), (":scheme", "http")]))
    }

    /// The server under test (nghttp2's checks off, these rules on) and libnghttp2 with its own checks
    /// give the same answer to the same bytes: reset with the same code, or the same fields delivered.
    /// Hundreds of requests, each a valid one with a few random changes from a list of the edges RFC
    /// 9113 §8 draws (bad bytes at every kind of position, repeated and misplaced pseudo-header
    /// fields, connection-specific fields, content-length against the body, trailers).
    @Test func sameVerdictsAsLibnghttp2() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        server.recordFields = true
        var rng = SplitMix(seed: 0x5eed_2026)
        let names = [":method", ":path", ":scheme", ":authority", ":protocol", ":status", ":", "host", "content-length",
                     "te", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "x-ok",
                     "apns-topic", "X-Upper", "x-upperCase-late", "bad name", "bad\u{1}", "x_under", "x~tilde|",
                     "accept-encoding", "a-very-long-header-name-over-eight", "priority", "te2", "hosts", "x:colon"]
        var values: [[UInt8]] = ["", "POST", "GET", "CONNECT", "OPTIONS", "HEAD", "GE T", "/", "/3/device/abc", "*", "abc",
                                 "/a b", "http", "https", "HTTP", "foo+bar", "1http", "localhost", "local host",
                                 "example.com:443", "[::1]:8443", "a{b}", "trailers", "TRAILERS", "gzip", "0", "2", "5", "-1",
                                 "1 2", "99999999999999999999", " lead", "trail ", "tab\tinside", "\ttab", "é utf8",
                                 "0123456789abcdef0123", "0123456789abcdef012 "].map { Array($0.utf8) }
        values += [[0x6e, 0x75, 0x00], [0x63, 0x72, 0x0d], [0x64, 0x7f], Array("0123456789abc".utf8) + [0x0a] + Array("0123456".utf8),
                   Array("/0123456789abcde".utf8) + [0x7f], [0x80, 0xff, 0x41]]
        let base: [(String, [UInt8])] = [(":method", Array("POST".utf8)), (":scheme", Array("http".utf8)),
                                         (":path", Array("/3/device/ab".utf8)), (":authority", Array("localhost".utf8))]
        var mismatches: [String] = []
        var accepted = 0, resets = 0
        let valid: [(String, [UInt8])] = [("x-ok", Array("1".utf8)), ("apns-topic", Array("com.example.app".utf8)),
                                          ("te", Array("trailers".utf8)), ("host", Array("example.com".utf8)),
                                          ("a-very-long-header-name-over-eight", Array("tab\tinside and é".utf8))]
        for _ in 0..<1000 {
            var c = RequestCase(fields: base)
            c.body = [0, 0, 2, 3][rng.below(4)]
            // Half of the requests are valid but for at most one change, so both kinds of answer are common.
            if rng.below(2) == 0 {
                c.fields.append(valid[rng.below(valid.count)])
                if rng.below(2) == 0 { c.fields.append(("content-length", Array(String(c.body).utf8))) }
            }
            for _ in 0..<rng.below(3) {
                let field = (names[rng.below(names.count)], values[rng.below(values.count)])
                switch rng.below(4) {
                case 0: c.fields.insert(field, at: rng.below(c.fields.count + 1))
                case 1: c.fields[rng.below(c.fields.count)].1 = field.1
                case 2: if c.fields.count > 1 { c.fields.remove(at: rng.below(c.fields.count)) }
                default: c.fields.append(field)
                }
            }
            if rng.below(4) == 0 { c.fields.append(("content-length", Array(String(rng.below(4)).utf8))) }
            if rng.below(5) == 0 {
                c.trailers = [rng.below(2) == 0 ? valid[rng.below(valid.count)] : (names[rng.below(names.count)], values[rng.below(values.count)])]
                c.trailersEndStream = rng.below(4) != 0
            }
            let bytes = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + RawPeer.frame(type: 0x4, flags: 0, stream: 0, []) + c.frames
            let expected = ReferenceServer().verdict(bytes)
            let got = outcome(of: c, loop: loop, server: server)
            if case .accepted = expected { accepted += 1 }
            if expected == .reset(NGHTTP2_PROTOCOL_ERROR.rawValue) { resets += 1 }
            if got != expected { mismatches.append("\(c)\n  nghttp2: \(expected)\n  server:  \(got)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of 1000 differ:\n\(mismatches.prefix(8).joined(separator: "\n"))")
        // The cases reach both kinds of answer, so agreement is not agreement on one trivial verdict.
        #expect(accepted > 200 && resets > 200, "\(accepted) accepted, \(resets) reset with PROTOCOL_ERROR")
    }

    private func outcome(of c: RequestCase, loop: EventLoop, server: TestServer) -> RequestOutcome {
        let peer = RawPeer(loop: loop, server: server.server)
        let before = server.fieldLists.count
        peer.end.send(c.frames)
        guard let f = peer.waitFor(timeout: 2 * seconds, { ($0.type == 0x3 && $0.stream == 1) || $0.type == 0x7 || ($0.type == 0x1 && $0.stream == 1) }) else {
            return .unanswered
        }
        switch f.type {
        case 0x3: return .reset(f.errorCode ?? 0)
        case 0x7: return .goAway(f.errorCode ?? 0)
        default: return server.fieldLists.count > before ? .accepted(server.fieldLists[before]) : .unanswered
        }
    }
}

/// A small seeded generator, so a failing case comes back on every run.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}
