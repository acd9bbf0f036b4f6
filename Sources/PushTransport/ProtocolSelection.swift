/// An application protocol a server connection can speak, by its ALPN name.
public enum ApplicationProtocol: String, Sendable, Equatable {
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
        /// Refuse it: `reason` is logged, the connection closed.
        case refuse(String)
    }

    /// The client's connection preface (RFC 9113 §3.4).
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// At accept (cleartext, `tls` false) or once the TLS handshake is done, with the protocol ALPN chose.
    func atStart(tls: Bool, alpn: ApplicationProtocol?) -> Verdict {
        if let alpn { return .serve(alpn) }
        // h2c with prior knowledge when nothing else is served: the session starts at once, as it always
        // has (a client that sends something else gets the HTTP/2 session's GOAWAY).
        if !tls && !servesHTTP1 { return .serve(.http2) }
        return .needBytes
    }

    /// From the first bytes received (all of them so far): the HTTP/2 preface selects HTTP/2, anything
    /// that departs from it HTTP/1.1 when served, else a refusal naming what arrived.
    func byFirstBytes(_ bytes: UnsafeRawBufferPointer) -> Verdict {
        let n = min(bytes.count, Self.preface.count)
        var i = 0
        while i < n && bytes[i] == Self.preface[i] { i += 1 }
        if i == Self.preface.count { return .serve(.http2) }
        if i == bytes.count { return .needBytes }
        if servesHTTP1 { return .serve(.http1) }
        return .refuse(Self.looksLikeHTTP1(bytes)
                       ? "it sent an HTTP/1.x request; this server speaks HTTP/2 only"
                       : "its first bytes are not the HTTP/2 connection preface")
    }

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

    /// A request line's start: an uppercase method token and a space (`POST /3/device/…`).
    static func looksLikeHTTP1(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < bytes.count && i < 16, bytes[i] >= UInt8(ascii: "A") && bytes[i] <= UInt8(ascii: "Z") { i += 1 }
        return i > 0 && i < bytes.count && bytes[i] == UInt8(ascii: " ")
    }

    /// What a refused client that spoke HTTP/1.x reads before the connection closes.
    static let http1Refusal: [UInt8] = Array(("HTTP/1.1 505 HTTP Version Not Supported\r\ncontent-type: text/plain\r\n"
        + "content-length: 32\r\nconnection: close\r\n\r\nThis server speaks HTTP/2 only.\n").utf8)
}
