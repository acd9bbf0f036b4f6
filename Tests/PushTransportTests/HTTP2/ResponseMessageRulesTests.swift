import CNGHTTP2
@testable import PushTransport
import Testing

/// What a client made of one response: delivered (status, the fields it kept, the body length) or the
/// stream failed, with the protocol error the connection keeps for its close.
enum ResponseOutcome: Equatable {
    case response(status: Int, fields: [String], bodyLength: Int, error: Int32?)
    case failed(HTTP2StreamFailureReason, error: Int32?)
    case unanswered
}

/// One response as a server could send it: an optional interim (1xx) header section, the header
/// section, a body in one or two DATA frames, optional trailers.
struct ResponseCase: CustomStringConvertible {
    var method = "POST"
    var interim: [(String, [UInt8])]? = nil
    var interimEndsStream = false
    var dataBeforeFinal = false
    var fields: [(String, [UInt8])]
    var body = 0
    var splitBody = false
    var trailers: [(String, [UInt8])]? = nil
    var trailersEndStream = true

    var description: String {
        func show(_ f: [(String, [UInt8])]) -> String {
            f.map { "\($0.0)=\(String(decoding: $0.1, as: UTF8.self).debugDescription)" }.joined(separator: " ")
        }
        var s = method + " "
        if let interim {
            s += "interim[\(interimEndsStream ? "end" : "open")\(dataBeforeFinal ? " data" : "")]: " + show(interim)
            if interimEndsStream { return s }
            s += " | "
        }
        s += show(fields) + " body=\(body)\(splitBody ? " split" : "")"
        if let trailers { s += " trailers[\(trailersEndStream ? "end" : "open")]: " + show(trailers) }
        return s
    }

    /// The frames on stream 1. Every script ends the stream, so each case has an answer, and sends
    /// nothing on it after: a frame after END_STREAM is a stream state error (RFC 9113 §5.1), not a
    /// malformed message, and nghttp2 answers it by the state it keeps of the stream (see
    /// docs/transport.md, "Response rules").
    var frames: [UInt8] {
        var f: [UInt8] = []
        if let interim {
            f += RawPeer.frame(type: 0x1, flags: 0x4 | (interimEndsStream ? 0x1 : 0), stream: 1, RequestCase.block(interim))
            if interimEndsStream { return f }
            if dataBeforeFinal { f += RawPeer.frame(type: 0x0, flags: 0, stream: 1, [0x7b]) }
        }
        let hasMore = body > 0 || trailers != nil
        f += RawPeer.frame(type: 0x1, flags: 0x4 | (hasMore ? 0 : 0x1), stream: 1, RequestCase.block(fields))
        if body > 0 {
            let end: UInt8 = trailers == nil ? 0x1 : 0
            if splitBody && body > 1 {
                f += RawPeer.frame(type: 0x0, flags: 0, stream: 1, [UInt8](repeating: 0x7b, count: 1))
                f += RawPeer.frame(type: 0x0, flags: end, stream: 1, [UInt8](repeating: 0x7b, count: body - 1))
            } else {
                f += RawPeer.frame(type: 0x0, flags: end, stream: 1, [UInt8](repeating: 0x7b, count: body))
            }
        }
        if let trailers {
            f += RawPeer.frame(type: 0x1, flags: 0x4 | (trailersEndStream ? 0x1 : 0), stream: 1, RequestCase.block(trailers))
            if !trailersEndStream { f += RawPeer.frame(type: 0x0, flags: 0x1, stream: 1, []) }
        }
        return f
    }
}

@Suite struct ResponseMessageRulesTests {
    private func judge(_ fields: [(String, String)], method: String = "POST", endStream: Bool = true) -> Bool {
        var m = ResponseMessage(method: method, method.utf8.count)
        for (name, value) in fields {
            let n = Array(name.utf8), v = Array(value.utf8)
            let f = n.withUnsafeBufferPointer { np in
                v.withUnsafeBufferPointer { vp in
                    ResponseMessageRules.field(np.baseAddress!, n.count, vp.baseAddress ?? np.baseAddress!, v.count, &m)
                }
            }
            if f == .malformed { return false }
        }
        return ResponseMessageRules.headersEnd(&m, trailer: false, endStream: endStream)
    }

    @Test func statusIsThreeDigitsOnceAndFirst() {
        #expect(judge([(":status", "200")]))
        #expect(judge([(":status", "000")]), "any three digits")
        #expect(!judge([]), "no :status")
        #expect(!judge([(":status", "20")]))
        #expect(!judge([(":status", "2000")]))
        #expect(!judge([(":status", "2x0")]))
        #expect(!judge([(":status", "101")]), "no Upgrade in HTTP/2")
        #expect(!judge([(":status", "200"), (":status", "200")]))
        #expect(!judge([("x-a", "1"), (":status", "200")]), "pseudo-header after a regular field")
        #expect(!judge([(":status", "200"), (":path", "/")]), "request pseudo-header")
        #expect(!judge([(":status", "100")]), "an interim response cannot end the stream")
        #expect(judge([(":status", "100")], endStream: false))
    }

    @Test func fieldsOfAResponse() {
        #expect(judge([(":status", "200"), ("te", "Trailers")]))
        #expect(!judge([(":status", "200"), ("te", "gzip")]))
        for f in ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"] {
            #expect(!judge([(":status", "200"), (f, "x")]), "\(f)")
        }
        #expect(!judge([(":status", "200"), ("X-Upper", "1")]))
        #expect(!judge([(":status", "200"), ("x-a", " lead")]))
        #expect(judge([(":status", "200"), ("host", "a{b}")]), "host is a field like any other in a response")
        #expect(judge([(":status", "200"), ("content-length", "0")]))
        #expect(!judge([(":status", "200"), ("content-length", "2")]), "no body came")
        #expect(!judge([(":status", "200"), ("content-length", "0"), ("content-length", "0")]))
        #expect(judge([(":status", "204"), ("content-length", "0")]))
        #expect(!judge([(":status", "204"), ("content-length", "1")]))
        #expect(!judge([(":status", "103"), ("content-length", "0")], endStream: false))
        #expect(judge([(":status", "200"), ("content-length", "5")], method: "HEAD"), "HEAD: no body whatever the length")
    }

    /// A block's method sets the rules' start once; a per-request :method leaves it to each request.
    @Test func methodOfABlock() throws {
        #expect(try HTTP2HeaderBlock.request(authority: "a", path: "/").responseMessage?.flags == 0)
        #expect(try HTTP2HeaderBlock.request(method: "HEAD", authority: "a", path: "/").responseMessage?.flags == ResponseMessage.head)
        #expect(try HTTP2HeaderBlock.request(method: "CONNECT", authority: "a", path: "/").responseMessage?.flags == ResponseMessage.connect)
        #expect(try HTTP2HeaderBlock([.perRequest(name: ":method"), .fixed(name: ":path", value: "/")]).responseMessage == nil)
        #expect(try HTTP2HeaderBlock([.fixed(name: ":path", value: "/")]).responseMessage?.flags == 0)
        let nv = [nghttp2_nv(name: UnsafeMutablePointer(mutating: (":method" as StaticString).utf8Start), value: UnsafeMutablePointer(mutating: ("HEAD" as StaticString).utf8Start),
                             namelen: 7, valuelen: 4, flags: 0)]
        #expect(ResponseMessageRules.method(nv, 1).flags == ResponseMessage.head)
    }

    /// The client with these rules and the client with libnghttp2's own checks end the same response
    /// the same way: the same response delivered (status, kept fields, body length) or the same stream
    /// failure, with the same protocol error kept for the connection's close. A thousand responses,
    /// each a valid one with a few random changes from a list of the edges RFC 9113 §8 draws (bad bytes,
    /// repeated, misplaced and request pseudo-header fields, connection-specific fields, content-length
    /// against the body and the status, interim responses, trailers, HEAD).
    @Test func sameVerdictsAsLibnghttp2() throws {
        let loop = try EventLoop()
        var rng = SplitMix(seed: 0x5eed_2033)
        let names = [":status", ":path", ":method", ":authority", ":scheme", ":", ":foo", "content-length", "content-length",
                     "te", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host",
                     "apns-id", "X-Upper", "x-upperCase-late", "bad name", "bad\u{1}", "x_under", "x~tilde|", "server",
                     "a-very-long-header-name-over-eight", "hosts", "x:colon", "te2"]
        var values: [[UInt8]] = ["", "200", "204", "304", "100", "101", "103", "199", "400", "2000", "20", "2x0", "0", "1", "2",
                                 "5", "-1", "1 2", "99999999999999999999", " lead", "trail ", "tab\tinside", "\ttab",
                                 "trailers", "TRAILERS", "gzip", "a{b}", "localhost", "example.com:443", "é utf8",
                                 "0123456789abcdef0123"].map { Array($0.utf8) }
        values += [[0x6e, 0x75, 0x00], [0x63, 0x72, 0x0d], [0x64, 0x7f], [0x80, 0xff, 0x41]]
        let valid: [(String, [UInt8])] = [("apns-id", Array("7c5b3f2a-0000-4e4e-8d8d-0123456789ab".utf8)),
                                          ("te", Array("trailers".utf8)), ("server", Array("mock".utf8)),
                                          ("a-very-long-header-name-over-eight", Array("tab\tinside and é".utf8))]
        let statuses = ["200", "200", "200", "204", "304", "400", "410"]
        var mismatches: [String] = []
        var delivered = 0, failed = 0
        // Edges a random draw reaches seldom, each once for sure.
        let ok: (String, [UInt8]) = (":status", Array("200".utf8))
        var fixed: [ResponseCase] = ["a{b}", "1 2", "é", "[::1]:8443", ""].map { ResponseCase(fields: [ok, ("host", Array($0.utf8))]) }
        fixed += [ResponseCase(fields: [(":status", Array("204".utf8)), ("content-length", Array("0".utf8))]),
                  ResponseCase(fields: [(":status", Array("101".utf8))]),
                  ResponseCase(method: "HEAD", fields: [ok, ("content-length", Array("3".utf8))]),
                  ResponseCase(interim: [(":status", Array("103".utf8))], dataBeforeFinal: true, fields: [ok])]
        for k in 0..<1000 {
            var c = ResponseCase(fields: [(":status", Array(statuses[rng.below(statuses.count)].utf8))])
            if rng.below(8) == 0 { c.method = "HEAD" }
            c.body = [0, 0, 2, 3][rng.below(4)]
            c.splitBody = rng.below(3) == 0
            if rng.below(2) == 0 {
                c.fields.append(valid[rng.below(valid.count)])
                if rng.below(2) == 0 { c.fields.append(("content-length", Array(String(c.body).utf8))) }
            }
            // About half of the responses change, so both kinds of answer are common.
            if rng.below(2) == 0 {
                for _ in 0..<(1 + rng.below(2)) {
                    let field = (names[rng.below(names.count)], values[rng.below(values.count)])
                    switch rng.below(4) {
                    case 0: c.fields.insert(field, at: rng.below(c.fields.count + 1))
                    case 1: c.fields[rng.below(c.fields.count)].1 = field.1
                    case 2: if c.fields.count > 1 { c.fields.remove(at: rng.below(c.fields.count)) }
                    default: c.fields.append(field)
                    }
                }
            }
            if rng.below(5) == 0 { c.fields.append(("content-length", Array(String(rng.below(4)).utf8))) }
            if rng.below(6) == 0 {
                c.interim = [(":status", Array(["100", "103", "103", "101", "199", "200"][rng.below(6)].utf8))]
                if rng.below(3) == 0 { c.interim!.append(rng.below(2) == 0 ? valid[rng.below(valid.count)]
                                                         : (names[rng.below(names.count)], values[rng.below(values.count)])) }
                c.interimEndsStream = rng.below(8) == 0
                c.dataBeforeFinal = !c.interimEndsStream && rng.below(6) == 0
            }
            if rng.below(5) == 0 {
                c.trailers = [rng.below(2) == 0 ? valid[rng.below(valid.count)] : (names[rng.below(names.count)], values[rng.below(values.count)])]
                c.trailersEndStream = rng.below(4) != 0
            }
            if k < fixed.count { c = fixed[k] }
            let expected = outcome(of: c, loop: loop, libraryChecks: true)
            let got = outcome(of: c, loop: loop, libraryChecks: false)
            if case .response = expected { delivered += 1 }
            if case .failed(.reset(NGHTTP2_PROTOCOL_ERROR.rawValue), _) = expected { failed += 1 }
            if got != expected { mismatches.append("\(c)\n  nghttp2: \(expected)\n  rules:   \(got)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of 1000 differ:\n\(mismatches.prefix(8).joined(separator: "\n"))")
        // The cases reach both kinds of answer, so agreement is not agreement on one trivial verdict.
        #expect(delivered > 200 && failed > 200, "\(delivered) delivered, \(failed) reset with PROTOCOL_ERROR")
    }

    /// One request from a fresh client over an in-memory pair, answered by `c`'s frames written raw.
    private func outcome(of c: ResponseCase, loop: EventLoop, libraryChecks: Bool) -> ResponseOutcome {
        withRawPeerClient(loop: loop, libraryChecks: libraryChecks, failed: .unanswered) { client, peer, recorder in
            guard let block = try? HTTP2HeaderBlock.request(method: c.method, authority: "localhost", path: "/3/device/ab"),
                  (try? client.submit(block, context: 1) { _ in }) != nil else { return .unanswered }
            var received: [UInt8] = []
            let sawRequest = loop.run(until: {
                received += peer.takeReceived()
                var i = 24
                while i + 9 <= received.count {
                    let n = Int(received[i]) << 16 | Int(received[i + 1]) << 8 | Int(received[i + 2])
                    if received[i + 3] == 0x1 && received[i + 8] == 1 { return true }
                    i += 9 + n
                }
                return false
            }, timeoutNanoseconds: 2 * seconds)
            guard sawRequest else { return .unanswered }
            peer.send(RawPeer.frame(type: 0x4, flags: 0x1, stream: 0, []) + c.frames)
            _ = loop.run(until: { recorder.outcomes[1] != nil }, timeoutNanoseconds: 2 * seconds)
            return recorder.outcomes[1] ?? .unanswered
        }
    }
}
