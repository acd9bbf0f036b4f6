import Testing
@testable import PushTransport

/// A client's stream failures name what ended them, and a peer's bodies cost the client no more than
/// its limit: a hand-driven server end sends resets of each kind, GOAWAY, a malformed frame, a huge body.
@Suite struct ClientAttributionTests {
    /// A connected client over an in-memory pair whose server end the test writes by hand.
    static func connect(_ loop: EventLoop, _ d: TestClient, configuration: HTTP2ClientConfiguration = HTTP2ClientConfiguration())
        -> (HTTP2ClientConnection, RawClient) {
        let (clientEnd, serverEnd) = InMemoryTransport.pair(loop: loop)
        let c = HTTP2ClientConnection(loop: loop, configuration: configuration, delegate: d)
        c.connect(over: clientEnd)
        let peer = RawClient(serverEnd)
        peer.send(RawFrames.frame(0x4, 0, 0))
        _ = loop.run(until: { d.connected && peer.collect().count >= 0 && peer.received.count >= RawFrames.preface.count },
                     timeoutNanoseconds: 10 * seconds)
        // What the client wrote, less its preface: frames from here on.
        peer.received.removeFirst(min(RawFrames.preface.count, peer.received.count))
        return (c, peer)
    }

    static func submit(_ c: HTTP2ClientConnection, _ contexts: Range<UInt64>) throws {
        let block = try makeBlock(path: "/x")
        for k in contexts {
            try c.submit(block, context: k) { req in
                req.setValue(0, "id")
                req.setBodyLength(0)
            }
        }
    }

    static func rst(_ stream: Int32, _ code: UInt32) -> [UInt8] {
        RawFrames.frame(0x3, 0, stream, [UInt8(code >> 24), UInt8(code >> 16 & 0xFF), UInt8(code >> 8 & 0xFF), UInt8(code & 0xFF)])
    }

    static func goAway(last: Int32, code: UInt32) -> [UInt8] {
        RawFrames.frame(0x7, 0, 0, [UInt8(last >> 24), UInt8(last >> 16 & 0xFF), UInt8(last >> 8 & 0xFF), UInt8(last & 0xFF),
                                    UInt8(code >> 24), UInt8(code >> 16 & 0xFF), UInt8(code >> 8 & 0xFF), UInt8(code & 0xFF)])
    }

    /// INTERNAL_ERROR and REFUSED_STREAM look different to the run; a stream above a GOAWAY's last
    /// stream id is neither.
    @Test func resetsAndGoAwayAreToldApart() throws {
        let loop = try EventLoop()
        let d = TestClient()
        let (c, peer) = Self.connect(loop, d)
        #expect(d.connected)
        try Self.submit(c, 0..<4)
        #expect(loop.run(until: { peer.collect().filter { $0.type == 0x1 }.count == 4 }, timeoutNanoseconds: 10 * seconds))
        // Streams 1, 3, 5, 7: reset INTERNAL_ERROR, reset REFUSED_STREAM, answered, cut by GOAWAY(last 5).
        peer.send(Self.rst(1, 0x2) + Self.rst(3, 0x7) + RawFrames.frame(0x1, RawFrames.endHeaders | RawFrames.endStream, 5, [0x88])
                  + Self.goAway(last: 5, code: 0))
        #expect(loop.run(until: { d.failures.count == 3 && d.responses == 1 }, timeoutNanoseconds: 10 * seconds))
        let byContext = Dictionary(uniqueKeysWithValues: d.failures.map { ($0.context, $0.reason) })
        #expect(byContext[0] == .reset(errorCode: 0x2))
        #expect(byContext[1] == .refused)
        #expect(byContext[3] == .goAway(errorCode: 0))
        #expect(d.statuses[200] == 1)
    }

    /// A malformed frame mid-run (DATA on stream 0): the open streams end as a protocol error and the
    /// connection's close says so, rather than looking like an orderly close.
    @Test func aMalformedFrameIsAProtocolError() throws {
        let loop = try EventLoop()
        let d = TestClient()
        let (c, peer) = Self.connect(loop, d)
        try Self.submit(c, 0..<2)
        #expect(loop.run(until: { peer.collect().filter { $0.type == 0x1 }.count == 2 }, timeoutNanoseconds: 10 * seconds))
        peer.send(RawFrames.data(0, [1, 2, 3]))
        #expect(loop.run(until: { d.closed }, timeoutNanoseconds: 10 * seconds))
        #expect(d.failures.count == 2)
        #expect(d.failures.allSatisfy { if case .protocolError = $0.reason { true } else { false } })
        #expect(d.closeError?.kind == .protocolError)
        // The client told the peer why (GOAWAY PROTOCOL_ERROR).
        let goAway = try #require(peer.collect().first { $0.type == 0x7 })
        #expect(RawFrames.errorCode(goAway.payload, at: 4) == 0x1)
    }

    /// A 60 KB body is counted whole and kept up to the limit: bodies of any size cost the client the
    /// limit at most, however many of them a run gets.
    @Test func aResponseBodyIsKeptUpToTheLimitAndCountedWhole() throws {
        let loop = try EventLoop()
        let d = TestClient()
        var config = HTTP2ClientConfiguration()
        config.responseBodyLimit = 1024
        var lengths: [Int] = []
        d.onResponse = { _, r in lengths.append(r.bodyLength) }
        let (c, peer) = Self.connect(loop, d, configuration: config)
        try Self.submit(c, 0..<1)
        #expect(loop.run(until: { peer.collect().contains { $0.type == 0x1 } }, timeoutNanoseconds: 10 * seconds))
        var bytes = RawFrames.frame(0x1, RawFrames.endHeaders, 1, [0x8c])  // :status 400
        let body = Array(#"{"reason":"BadDeviceToken"}"#.utf8) + [UInt8](repeating: 0x20, count: 60_000)
        var offset = 0
        while offset < body.count {
            let n = min(16_384, body.count - offset)
            bytes += RawFrames.data(1, Array(body[offset..<(offset + n)]), endStream: offset + n == body.count)
            offset += n
        }
        peer.send(bytes)
        #expect(loop.run(until: { d.responses == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(d.lastBody.count == 1024)
        #expect(d.lastBody.starts(with: Array(#"{"reason":"BadDeviceToken"}"#.utf8)))
        #expect(lengths == [body.count])
        #expect(d.statuses[400] == 1)
    }
}
