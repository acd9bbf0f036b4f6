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

    @Test func thePrefaceChoosesHTTP2AndAnythingElseDecidesAtTheFirstDifference() {
        let only2 = ProtocolSelection(servesHTTP1: false), both = ProtocolSelection(servesHTTP1: true)
        #expect(Self.verdict(only2, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") == .serve(.http2))
        #expect(Self.verdict(both, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\u{12}\u{4}") == .serve(.http2))
        #expect(Self.verdict(both, "PRI * HTTP/2") == .needBytes)
        #expect(Self.verdict(both, "") == .needBytes)
        #expect(Self.verdict(both, "POST /3/device/ab HTTP/1.1\r\n") == .serve(.http1))
        #expect(Self.verdict(both, "P") == .needBytes)
        #expect(Self.verdict(both, "PO") == .serve(.http1))
        #expect(Self.verdict(only2, "GET / HTTP/1.1\r\n") == .refuse("it sent an HTTP/1.x request; this server speaks HTTP/2 only"))
        #expect(Self.verdict(only2, "\u{16}\u{3}\u{1}") == .refuse("its first bytes are not the HTTP/2 connection preface"))
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

    @Test func requestLinesAreRecognised() {
        func looks(_ t: String) -> Bool { Array(t.utf8).withUnsafeBytes { ProtocolSelection.looksLikeHTTP1($0) } }
        #expect(looks("GET / HTTP/1.1"))
        #expect(looks("POST /x"))
        #expect(!looks("PRI"))
        #expect(!looks(" GET"))
        #expect(!looks("get / HTTP/1.1"))
        #expect(ProtocolSelection.http1Refusal.count > 0)
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

    @Test func closingTheServerClosesConnectionsStillChoosing() throws {
        let loop = try EventLoop()
        let server = HTTP2Server(loop: loop, delegate: Refusals())
        server.http1 = FakeHTTP1()
        let (peer, serverEnd) = InMemoryTransport.pair(loop: loop)
        server.accept(serverEnd)
        server.close()
        #expect(loop.run(until: { peer.peerHasClosed }, timeoutNanoseconds: 10 * seconds))
        #expect(server.connectionsRefused == 0)
    }
}
