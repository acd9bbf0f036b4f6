/// An application protocol a server connection can speak, by its ALPN name.
enum ApplicationProtocol: String, Sendable, Equatable {
    /// HTTP/2 (`h2` over TLS, prior knowledge on cleartext).
    case http2 = "h2"
    /// HTTP/1.1 (`http/1.1`).
    case http1 = "http/1.1"
}

/// How an accepted connection's protocol is chosen: by ALPN when TLS negotiated one, otherwise by its
/// first bytes (the HTTP/2 connection preface, or anything else). Plain logic, no I/O: the server asks
/// it at accept (cleartext), after the TLS handshake, and for each read until it answers.
struct ProtocolSelection: Equatable {
    /// Whether the server can hand a connection to an HTTP/1.1 session (`HTTP2Server.http1`).
    var servesHTTP1: Bool

    /// What to do with a connection.
    enum Verdict: Equatable {
        /// Serve it with this protocol.
        case serve(ApplicationProtocol)
        /// Read more bytes before deciding.
        case needBytes
        /// Refuse it: `reason` is logged, `answer` sent, the connection closed.
        case refuse(String, answer: Refusal)
    }

    /// What a refused connection reads before it closes.
    enum Refusal: Equatable {
        /// Nothing (a timeout, a failed TLS handshake).
        case none
        /// `505 HTTP Version Not Supported` (an HTTP/1.x client of a server that speaks HTTP/2 only).
        case http1VersionNotSupported
        /// The answer to an invalid connection preface: SETTINGS, then GOAWAY(PROTOCOL_ERROR) (RFC 9113 §3.4).
        case goAwayProtocolError

        /// The bytes written; static storage, so a pending write may point at them.
        var bytes: [UInt8]? {
            switch self {
            case .none: return nil
            case .http1VersionNotSupported: return ProtocolSelection.http1Refusal
            case .goAwayProtocolError: return ProtocolSelection.invalidPrefaceAnswer
            }
        }
    }

    /// What the first bytes of a connection are, as far as they go.
    enum FirstBytes: Equatable {
        /// The whole HTTP/2 connection preface.
        case preface
        /// The start of an HTTP/1.x request line, up to its version (`POST /v1/… HTTP/1.1`).
        case requestLine
        /// A prefix of either: more bytes decide.
        case undecided
        /// Neither: an invalid connection preface.
        case neither
    }

    /// The client's connection preface (RFC 9113 §3.4).
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// A request line still valid this far is taken as HTTP/1.1 (whose parser judges the rest): RFC 9112
    /// §3 asks servers to accept request lines of at least 8,000 bytes, and a pending connection holds
    /// what it reads.
    static let requestLineDecisionBytes = 8 * 1024
    /// Longer than any registered method (the longest has 17 bytes): what goes on is not a method.
    static let maxMethodBytes = 32

    /// At accept (cleartext, `tls` false) or once the TLS handshake is done, with the protocol ALPN chose.
    func atStart(tls: Bool, alpn: ApplicationProtocol?) -> Verdict {
        if let alpn { return .serve(alpn) }
        // h2c with prior knowledge when nothing else is served: the session starts at once, as it always
        // has (a client that sends something else gets the HTTP/2 session's GOAWAY).
        if !tls && !servesHTTP1 { return .serve(.http2) }
        return .needBytes
    }

    /// From the first bytes received (all of them so far): the HTTP/2 preface selects HTTP/2, a request
    /// line HTTP/1.1 when served (else a 505 refusal), and anything that is neither an invalid connection
    /// preface, refused with GOAWAY(PROTOCOL_ERROR). A prefix of either waits for more bytes.
    func byFirstBytes(_ bytes: UnsafeRawBufferPointer) -> Verdict {
        switch Self.classify(bytes) {
        case .preface:
            return .serve(.http2)
        case .undecided:
            return .needBytes
        case .requestLine:
            if servesHTTP1 { return .serve(.http1) }
            return .refuse("it sent an HTTP/1.x request; this server speaks HTTP/2 only", answer: .http1VersionNotSupported)
        case .neither:
            return .refuse(servesHTTP1
                           ? "its first bytes are neither the HTTP/2 connection preface nor an HTTP/1.1 request line"
                           : "its first bytes are not the HTTP/2 connection preface",
                           answer: .goAwayProtocolError)
        }
    }

    /// Classifies the first bytes of a connection: the HTTP/2 preface, or the start of an HTTP/1.x request
    /// line (RFC 9112 §3: a method token, SP, a request-target without controls or spaces, SP, `HTTP/1.`
    /// and a digit), decided at the first byte that departs from both.
    static func classify(_ bytes: UnsafeRawBufferPointer) -> FirstBytes {
        let n = bytes.count
        var i = 0
        while i < n && i < preface.count && bytes[i] == preface[i] { i += 1 }
        if i == preface.count { return .preface }
        if i == n { return .undecided }
        return requestLine(bytes)
    }

    /// Whether `bytes` begin an HTTP/1.x request line: `.requestLine` once its version is read (or once
    /// `requestLineDecisionBytes` are valid so far), `.undecided` while they are a prefix of one.
    static func requestLine(_ bytes: UnsafeRawBufferPointer) -> FirstBytes {
        let n = bytes.count
        var i = 0
        while i < n && i <= maxMethodBytes && RequestMessageRules.CharClass.token.contains(bytes[i]) { i += 1 }
        if i == n { return i <= maxMethodBytes ? .undecided : .neither }
        if i == 0 || i > maxMethodBytes || bytes[i] != UInt8(ascii: " ") { return .neither }
        i += 1
        let target = i
        // Visible ASCII and obs-text, as in an HTTP/2 :path: no controls, no spaces, no DEL.
        while i < n && RequestMessageRules.CharClass.path.contains(bytes[i]) { i += 1 }
        if i == n { return n >= requestLineDecisionBytes ? .requestLine : .undecided }
        if i == target || bytes[i] != UInt8(ascii: " ") { return .neither }
        i += 1
        var k = 0
        while k < version.count {
            if i + k == n { return .undecided }
            let b = bytes[i + k]
            if k == version.count - 1 ? !(b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) : b != version[k] { return .neither }
            k += 1
        }
        return .requestLine
    }

    /// `HTTP/1.` and a digit (the last byte here stands for the digit).
    private static let version: [UInt8] = Array("HTTP/1.0".utf8)

    /// The ALPN protocol to select from the client's offer (wire format: length-prefixed names), or
    /// nil when it offers nothing this server speaks (the handshake then fails with the
    /// no_application_protocol alert, RFC 7301 §3.2). HTTP/2 is preferred.
    func alpnSelect(offered: UnsafeRawBufferPointer) -> ApplicationProtocol? {
        var h2 = false, h1 = false
        Self.forEachName(offered) { name in
            if name.elementsEqual("h2".utf8) { h2 = true }
            if name.elementsEqual("http/1.1".utf8) { h1 = true }
        }
        if h2 { return .http2 }
        if h1 && servesHTTP1 { return .http1 }
        return nil
    }

    /// Why an ALPN offer was refused, e.g. `it offers only http/1.1 (ALPN); this server speaks h2`.
    func alpnRefusal(offered: UnsafeRawBufferPointer) -> String {
        var names: [String] = []
        Self.forEachName(offered) { names.append(String(decoding: $0, as: UTF8.self)) }
        let served = servesHTTP1 ? "h2 and http/1.1" : "h2"
        let offer = names.isEmpty ? "an empty list" : (names.count == 1 ? "only " : "") + names.joined(separator: ", ")
        return "it offers \(offer) (ALPN); this server speaks \(served)"
    }

    /// Calls `body` with each name of an ALPN list (length-prefixed names); a truncated last name is ignored.
    static func forEachName(_ list: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        var i = 0
        while i < list.count {
            let start = i + 1
            i = start + Int(list[i])
            if i > list.count { return }
            body(UnsafeRawBufferPointer(rebasing: list[start..<i]))
        }
    }

    /// What a refused client that spoke HTTP/1.x reads before the connection closes.
    static let http1Refusal: [UInt8] = Array(("HTTP/1.1 505 HTTP Version Not Supported\r\ncontent-type: text/plain\r\n"
        + "content-length: 32\r\nconnection: close\r\n\r\nThis server speaks HTTP/2 only.\n").utf8)

    /// What a client whose first bytes are an invalid connection preface reads: the server's preface (an
    /// empty SETTINGS frame, which must come first), then GOAWAY with last stream 0, PROTOCOL_ERROR and a
    /// short debug text.
    static let invalidPrefaceAnswer: [UInt8] = {
        let debug = Array("invalid connection preface".utf8)
        let settings: [UInt8] = [0, 0, 0, 0x4, 0, 0, 0, 0, 0]
        let length = 8 + debug.count
        let goaway: [UInt8] = [0, 0, UInt8(length), 0x7, 0, 0, 0, 0, 0,  // header: length, GOAWAY, no flags, stream 0
                               0, 0, 0, 0,                                 // last stream 0
                               0, 0, 0, 0x1]                               // PROTOCOL_ERROR
        return settings + goaway + debug
    }()
}
