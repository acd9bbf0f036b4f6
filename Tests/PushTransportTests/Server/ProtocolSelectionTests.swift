@testable import PushTransport
import Testing

/// Choosing an accepted connection's protocol: the pure rules, and the hand-over of the transport and
/// the bytes read so far to the chosen session.
@Suite struct ProtocolSelectionTests {
    static func verdict(_ s: ProtocolSelection, _ text: String) -> ProtocolSelection.Verdict {
        Array(text.utf8).withUnsafeBytes { s.byFirstBytes($0) }
    }

    static func alpn(_ names: [String]) -> [UInt8] { names.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } }

    @Test func cleartextWithHTTP2AloneStartsAtOnce() {
        #expect(ProtocolSelection(servesHTTP1: false).atStart(tls: false, alpn: nil) == .serve(.http2))
        #expect(ProtocolSelection(servesHTTP1: true).atStart(tls: false, alpn: nil) == .needBytes)
        #expect(ProtocolSelection(servesHTTP1: false).atStart(tls: true, alpn: nil) == .needBytes)
        #expect(ProtocolSelection(servesHTTP1: false).atStart(tls: true, alpn: .http2) == .serve(.http2))
        #expect(ProtocolSelection(servesHTTP1: true).atStart(tls: true, alpn: .http1) == .serve(.http1))
    }

    static func classify(_ text: String) -> ProtocolSelection.FirstBytes {
        Array(text.utf8).withUnsafeBytes { ProtocolSelection.classify($0) }
    }

    /// Feeds `bytes` in reads of `size` and returns the classification after each (what a pending
    /// connection sees as its buffer grows).
    static func classifyInReads(_ bytes: [UInt8], size: Int) -> [ProtocolSelection.FirstBytes] {
        stride(from: size, through: bytes.count + size - 1, by: size).map { end in
            Array(bytes.prefix(min(end, bytes.count))).withUnsafeBytes { ProtocolSelection.classify($0) }
        }
    }

    static let preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

    @Test func thePrefaceIsHTTP2AndItsPrefixesWait() {
        #expect(Self.classify(Self.preface) == .preface)
        #expect(Self.classify(Self.preface + "\0\0\u{12}\u{4}") == .preface)
        #expect(Self.classify("") == .undecided)
        #expect(Self.classify("PRI * HTTP/2") == .undecided)
        // Split across reads of every size: undecided until the last byte arrives, then HTTP/2.
        for size in [1, 2, 5, 7, 23] {
            let seen = Self.classifyInReads(Array(Self.preface.utf8), size: size)
            #expect(seen.dropLast().allSatisfy { $0 == .undecided }, "reads of \(size)")
            #expect(seen.last == .preface, "reads of \(size)")
        }
    }

    @Test(arguments: ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "PRI"])
    func aRequestLineOfEveryMethodIsHTTP1(method: String) {
        let target = method == "CONNECT" ? "fcm.googleapis.com:443" : (method == "OPTIONS" ? "*" : "/v1/projects/p/messages:send")
        for version in ["1.1", "1.0"] {
            let line = "\(method) \(target) HTTP/\(version)\r\nHost: x\r\n\r\n"
            #expect(Self.classify(line) == .requestLine, "\(line)")
            // Split at every byte, then in a few larger reads: it waits until the version is read.
            let bytes = Array(line.utf8)
            let versionEnd = "\(method) \(target) HTTP/1.1".utf8.count
            for size in [1, 3, 8] {
                let seen = Self.classifyInReads(bytes, size: size)
                for (k, verdict) in seen.enumerated() {
                    let have = min((k + 1) * size, bytes.count)
                    #expect(verdict == (have >= versionEnd ? .requestLine : .undecided), "\(method) reads of \(size), \(have) bytes")
                }
            }
        }
        // Absolute form, as a proxy client sends it.
        #expect(Self.classify("\(method) http://127.0.0.1:8080/stats HTTP/1.1\r\n") == .requestLine)
    }

    @Test(arguments: [
        "INVALID CONNECTION PREFACE\r\n\r\n",    // h2spec 3.5/2
        "\u{16}\u{3}\u{1}\u{2}\0",                  // a TLS ClientHello on the cleartext port
        "\0\0\u{12}\u{4}\0\0\0\0\0",                // HTTP/2 frames without the preface
        "GET / HTTP/2.0\r\n",                      // not HTTP/1.x
        "GET /\r\n",                               // HTTP/0.9
        "GET  / HTTP/1.1\r\n",                     // two spaces: an empty target
        "GET /a\tb HTTP/1.1\r\n",                  // a control in the target
        "GET / HTTP/1.x\r\n",                      // no digit
        " GET / HTTP/1.1\r\n",                     // no method
        "GET\r\n",
        "\r\n\r\n",
        "G(T / HTTP/1.1\r\n",                      // not a token
        String(repeating: "A", count: 40) + " / HTTP/1.1\r\n",  // longer than any method
    ])
    func neitherIsAnInvalidPreface(text: String) {
        #expect(Self.classify(text) == .neither)
    }

    @Test func aPrefaceWithOneWrongByteIsInvalid() {
        let good = Array(Self.preface.utf8)
        for k in 0..<good.count {
            for wrong in [good[k] ^ 0x20, UInt8(ascii: "X")] where wrong != good[k] {
                var bytes = good
                bytes[k] = wrong
                #expect(bytes.withUnsafeBytes { ProtocolSelection.classify($0) } == .neither, "byte \(k) as \(wrong)")
                // Past `PRI * ` (which could begin a request line) it is decided at the wrong byte.
                if k >= 6 {
                    #expect(Array(bytes[0...k]).withUnsafeBytes { ProtocolSelection.classify($0) } == .neither, "byte \(k) as \(wrong)")
                }
            }
        }
        // One wrong byte can make a request line, which is HTTP/1.1's to judge.
        #expect(Self.classify("PRI * HTTP/1.0\r\n\r\nSM\r\n\r\n") == .requestLine)
    }

    @Test func aLongRequestTargetIsDecidedAtTheBound() {
        let long = "GET /" + String(repeating: "a", count: ProtocolSelection.requestLineDecisionBytes)
        #expect(Self.classify(String(long.prefix(ProtocolSelection.requestLineDecisionBytes - 1))) == .undecided)
        #expect(Self.classify(long) == .requestLine)
    }

    @Test func theVerdictFollowsWhatIsServed() {
        let only2 = ProtocolSelection(servesHTTP1: false), both = ProtocolSelection(servesHTTP1: true)
        #expect(Self.verdict(only2, Self.preface) == .serve(.http2))
        #expect(Self.verdict(both, Self.preface) == .serve(.http2))
        #expect(Self.verdict(both, "PRI * HTTP/2") == .needBytes)
        #expect(Self.verdict(both, "") == .needBytes)
        #expect(Self.verdict(both, "POST /3/device/ab HTTP/1.1\r\n") == .serve(.http1))
        #expect(Self.verdict(both, "P") == .needBytes)
        #expect(Self.verdict(both, "POST /3/device/ab") == .needBytes)
        #expect(Self.verdict(both, "INVALID CONNECTION PREFACE\r\n\r\n")
                == .refuse("its first bytes are neither the HTTP/2 connection preface nor an HTTP/1.1 request line",
                           answer: .goAwayProtocolError))
        #expect(Self.verdict(only2, "GET / HTTP/1.1\r\n")
                == .refuse("it sent an HTTP/1.x request; this server speaks HTTP/2 only", answer: .http1VersionNotSupported))
        #expect(Self.verdict(only2, "\u{16}\u{3}\u{1}")
                == .refuse("its first bytes are not the HTTP/2 connection preface", answer: .goAwayProtocolError))
    }

    @Test func theInvalidPrefaceAnswerIsSettingsThenGoAwayProtocolError() {
        let a = ProtocolSelection.invalidPrefaceAnswer
        // SETTINGS: empty, type 4, no flags, stream 0.
        #expect(Array(a[0..<9]) == [0, 0, 0, 4, 0, 0, 0, 0, 0])
        // GOAWAY: type 7 on stream 0, last stream 0, PROTOCOL_ERROR, then the debug text to the end.
        let length = Int(a[9]) << 16 | Int(a[10]) << 8 | Int(a[11])
        #expect(a[12] == 7 && Array(a[13..<18]) == [0, 0, 0, 0, 0])
        #expect(9 + 9 + length == a.count)
        #expect(Array(a[18..<22]) == [0, 0, 0, 0] && Array(a[22..<26]) == [0, 0, 0, 1])
        #expect(String(decoding: a[26...], as: UTF8.self) == "invalid connection preface")
    }

    @Test func alpnPrefersHTTP2AndRefusesWhatIsNotServed() {
        let only2 = ProtocolSelection(servesHTTP1: false), both = ProtocolSelection(servesHTTP1: true)
        func select(_ s: ProtocolSelection, _ names: [String]) -> ApplicationProtocol? {
            Self.alpn(names).withUnsafeBytes { s.alpnSelect(offered: $0) }
        }
        #expect(select(only2, ["http/1.1", "h2"]) == .http2)
        #expect(select(both, ["http/1.1", "h2"]) == .http2)
        #expect(select(both, ["http/1.1"]) == .http1)
        #expect(select(only2, ["http/1.1"]) == nil)
        #expect(select(only2, ["spdy/3", "h2c"]) == nil)
        // A truncated list selects nothing it cannot read.
        #expect([UInt8(5), UInt8(ascii: "h"), UInt8(ascii: "2")].withUnsafeBytes { only2.alpnSelect(offered: $0) } == nil)
        let reason = Self.alpn(["http/1.1"]).withUnsafeBytes { only2.alpnRefusal(offered: $0) }
        #expect(reason == "it offers only http/1.1 (ALPN); this server speaks h2")
    }

    @Test func theHTTP1RefusalCountsItsBody() {
        let text = String(decoding: ProtocolSelection.http1Refusal, as: UTF8.self)
        let body = text.components(separatedBy: "\r\n\r\n")[1]
        #expect(text.contains("content-length: \(body.utf8.count)\r\n"))
    }

    /// An HTTP/1.1 stand-in: takes the connection and records what it was given.
    final class FakeHTTP1: ServerSessionStarter, ByteTransportOwner {
        var transport: ByteTransport?
        var received: [UInt8] = []
        var sessions = 0
        func startSession(on transport: ByteTransport, firstBytes: UnsafeRawBufferPointer, tls: TLSConnectionInfo?) {
            sessions += 1
            self.transport = transport
            transport.owner = self
            received += firstBytes
        }
        func transportDidConnect() {}
        func transportDidFailToConnect(_ error: TransportError) {}
        func transportDidRead(_ bytes: UnsafeRawBufferPointer) { received += bytes }
        func transportWriteDidComplete() {}
        func transportDidClose(_ error: TransportError?) { transport = nil }
    }

    @Test(arguments: [1, 64 * 1024])
    func withHTTP1ServedTheFirstBytesPickTheSession(readLimit: Int) throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        let http1 = FakeHTTP1()
        server.server.http1 = http1

        // An HTTP/2 client still gets HTTP/2 (its preface is read first, a byte at a time with readLimit 1).
        let d = TestClient()
        let client = connectInMemory(loop, to: server.server, d) { _, serverEnd in serverEnd.readLimit = readLimit }
        #expect(d.connected)
        let block = try makeBlock(path: "/x")  // the header block must outlive the request
        try client.submit(block, context: 1) { req in req.setValue(0, "id") }
        #expect(loop.run(until: { d.responses == 1 }, timeoutNanoseconds: 10 * seconds))

        // A request line goes to the HTTP/1.1 session with every byte, including those read to decide.
        let (peer, serverEnd) = InMemoryTransport.pair(loop: loop)
        serverEnd.readLimit = readLimit
        server.server.accept(serverEnd)
        let request = Array("POST /3/device/abcd HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n".utf8)
        peer.send(request)
        #expect(loop.run(until: { http1.received.count == request.count }, timeoutNanoseconds: 10 * seconds))
        #expect(http1.received == request)
        #expect(http1.sessions == 1)
        #expect(server.server.connectionsOpen == 1)
        #expect(server.server.connectionsRefused == 0)
    }

    @Test func cleartextHTTP2AloneIsUnchanged() throws {
        // Garbage on h2c still reaches the HTTP/2 session, which answers it with GOAWAY as before.
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        let (peer, serverEnd) = InMemoryTransport.pair(loop: loop)
        server.server.accept(serverEnd)
        #expect(server.opened == 1)
        peer.send(Array("GET / HTTP/1.1\r\n\r\n".utf8))
        #expect(loop.run(until: { server.closed == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(server.server.connectionsRefused == 0)
    }

    /// Records refusals.
    final class Refusals: HTTP2ServerDelegate {
        var reasons: [String] = []
        var peers: [String] = []
        func server(_ server: HTTP2Server, didReceive request: HTTP2ServerRequest) {}
        func server(_ server: HTTP2Server, didRefuseConnectionFrom peer: String, reason: String) {
            peers.append(peer)
            reasons.append(reason)
        }
    }

    @Test func aPeerThatNeverChoosesIsRefusedAfterTheTimeout() throws {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        config.protocolSelectionTimeoutMilliseconds = 50
        let refusals = Refusals()
        let server = HTTP2Server(loop: loop, configuration: config, delegate: refusals)
        server.http1 = FakeHTTP1()
        let (peer, serverEnd) = InMemoryTransport.pair(loop: loop)
        server.accept(serverEnd)
        peer.send(Array("PRI * HTTP/2".utf8))  // half a preface, then silence
        #expect(loop.run(until: { peer.peerHasClosed }, timeoutNanoseconds: 10 * seconds))
        #expect(refusals.reasons == ["no HTTP/2 connection preface within 50 ms"])
        #expect(refusals.peers == ["in-memory peer"])
        #expect(server.connectionsRefused == 1)
        #expect(server.connectionsOpen == 0)
    }

    @Test(arguments: [1, 64 * 1024])
    func anInvalidPrefaceIsAnsweredWithGoAwayThenClosed(readLimit: Int) throws {
        let loop = try EventLoop()
        let refusals = Refusals()
        let server = HTTP2Server(loop: loop, delegate: refusals)
        let http1 = FakeHTTP1()
        server.http1 = http1
        let (peer, serverEnd) = InMemoryTransport.pair(loop: loop)
        serverEnd.readLimit = readLimit
        server.accept(serverEnd)
        peer.send(Array("INVALID CONNECTION PREFACE\r\n\r\n".utf8))
        var received: [UInt8] = []
        // The answer, then the connection ends (here by the linger bound: the peer stays open).
        #expect(loop.run(until: { received += peer.takeReceived(); return peer.peerHasClosed }, timeoutNanoseconds: 10 * seconds))
        received += peer.takeReceived()
        #expect(received == ProtocolSelection.invalidPrefaceAnswer)
        #expect(refusals.reasons == ["its first bytes are neither the HTTP/2 connection preface nor an HTTP/1.1 request line"])
        #expect(http1.sessions == 0)
        #expect(server.connectionsRefused == 1 && server.connectionsOpen == 0)
    }

    @Test func aRefusedClientThatHangsUpEndsTheLingerAtOnce() throws {
        let loop = try EventLoop()
        let refusals = Refusals()
        let server = HTTP2Server(loop: loop, delegate: refusals)
        server.http1 = FakeHTTP1()
        let (peer, serverEnd) = InMemoryTransport.pair(loop: loop)
        server.accept(serverEnd)
        peer.send([0x16, 0x03, 0x01, 0x02, 0x00])
        var received: [UInt8] = []
        #expect(loop.run(until: { received += peer.takeReceived(); return received.count == ProtocolSelection.invalidPrefaceAnswer.count },
                         timeoutNanoseconds: 10 * seconds))
        // What it still sends is dropped; then it closes, and so does the server's end.
        peer.send(Array(repeating: 0, count: 100))
        peer.close()
        #expect(loop.run(until: { serverEnd.isClosed }, timeoutNanoseconds: 500 * 1_000_000))
        #expect(server.connectionsRefused == 1)
    }

    @Test func aRequestLineInSmallReadsStillReachesHTTP1() throws {
        let loop = try EventLoop()
        let refusals = Refusals()
        let server = HTTP2Server(loop: loop, delegate: refusals)
        let http1 = FakeHTTP1()
        server.http1 = http1
        let (peer, serverEnd) = InMemoryTransport.pair(loop: loop)
        server.accept(serverEnd)
        let request = Array("POST /v1/projects/p/messages:send HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n".utf8)
        // Sent in pieces, the loop run between them: the decision waits for the version.
        for piece in [0..<3, 3..<20, 20..<37, 37..<request.count] {
            peer.send(Array(request[piece]))
            loop.run(until: { false }, timeoutNanoseconds: 10_000_000)
            #expect(http1.sessions == (piece.upperBound >= 42 ? 1 : 0), "after \(piece.upperBound) bytes")
        }
        #expect(loop.run(until: { http1.received.count == request.count }, timeoutNanoseconds: 10 * seconds))
        #expect(http1.received == request)
        #expect(server.connectionsRefused == 0)
        #expect(refusals.reasons.isEmpty)
    }

    @Test func closingTheServerClosesConnectionsStillChoosing() throws {
        let loop = try EventLoop()
        let refusals = Refusals()
        let server = HTTP2Server(loop: loop, delegate: refusals)
        server.http1 = FakeHTTP1()
        let (peer, serverEnd) = InMemoryTransport.pair(loop: loop)
        server.accept(serverEnd)
        server.close()
        #expect(loop.run(until: { peer.peerHasClosed }, timeoutNanoseconds: 10 * seconds))
        #expect(server.connectionsRefused == 0)
        #expect(refusals.reasons.isEmpty)
    }
}
