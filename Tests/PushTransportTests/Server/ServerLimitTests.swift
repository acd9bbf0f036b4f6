import CNGHTTP2
import Foundation
import Testing
@testable import PushTransport

/// Raw HTTP/2 frames for a client driven by hand (an `InMemoryTransport` end no session took), so a
/// test can send what no well-behaved client would: HPACK bombs, floods, stalls.
enum RawFrames {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    static let endStream: UInt8 = 0x1, endHeaders: UInt8 = 0x4, ack: UInt8 = 0x1

    static func frame(_ type: UInt8, _ flags: UInt8, _ stream: Int32, _ payload: [UInt8] = []) -> [UInt8] {
        let n = payload.count
        return [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, flags,
                UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)] + payload
    }

    /// The client's preface and an empty SETTINGS.
    static var hello: [UInt8] { preface + frame(0x4, 0, 0) }

    /// `:method POST`, `:scheme http`, `:path /` from the static table and `:authority x` (a literal with
    /// an indexed name): a minimal request's header block.
    static let minimalBlock: [UInt8] = [0x83, 0x86, 0x84, 0x01, 0x01, 0x78]

    static func headers(_ stream: Int32, _ block: [UInt8] = minimalBlock, endStream: Bool = true, endHeaders: Bool = true) -> [UInt8] {
        frame(0x1, (endStream ? Self.endStream : 0) | (endHeaders ? Self.endHeaders : 0), stream, block)
    }

    static func data(_ stream: Int32, _ bytes: [UInt8], endStream: Bool = false) -> [UInt8] {
        frame(0x0, endStream ? Self.endStream : 0, stream, bytes)
    }

    static func ping(_ n: UInt8) -> [UInt8] { frame(0x6, 0, 0, [UInt8](repeating: n, count: 8)) }

    /// An HPACK integer with an `prefix`-bit prefix, the first byte's high bits `high`.
    static func integer(_ value: Int, prefix: Int, high: UInt8) -> [UInt8] {
        let max = (1 << prefix) - 1
        if value < max { return [high | UInt8(value)] }
        var out = [high | UInt8(max)]
        var v = value - max
        while v >= 128 { out.append(UInt8(v % 128 + 128)); v /= 128 }
        out.append(UInt8(v))
        return out
    }

    /// A literal field with incremental indexing and a new name (it enters the dynamic table at 62).
    static func literalIndexed(_ name: String, _ value: [UInt8]) -> [UInt8] {
        [0x40] + integer(name.utf8.count, prefix: 7, high: 0) + Array(name.utf8) + integer(value.count, prefix: 7, high: 0) + value
    }

    /// A header block that decodes to `references` copies of one `entryBytes`-byte field: a literal that
    /// enters the dynamic table, then one-byte references to it (index 62).
    static func hpackBomb(entryBytes: Int, references: Int) -> [UInt8] {
        minimalBlock + literalIndexed("x-bomb", [UInt8](repeating: 0x61, count: entryBytes))
            + [UInt8](repeating: 0x80 | 62, count: references)
    }

    /// The frames in `bytes` (after the server's preface-free start): (type, flags, stream, payload).
    static func parse(_ bytes: [UInt8]) -> [(type: UInt8, flags: UInt8, stream: Int32, payload: [UInt8])] {
        var out: [(UInt8, UInt8, Int32, [UInt8])] = []
        var i = 0
        while i + 9 <= bytes.count {
            let n = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            guard i + 9 + n <= bytes.count else { break }
            let stream = Int32(bytes[i + 5] & 0x7F) << 24 | Int32(bytes[i + 6]) << 16 | Int32(bytes[i + 7]) << 8 | Int32(bytes[i + 8])
            out.append((bytes[i + 3], bytes[i + 4], stream, Array(bytes[(i + 9)..<(i + 9 + n)])))
            i += 9 + n
        }
        return out
    }

    static func errorCode(_ payload: [UInt8], at offset: Int) -> UInt32 {
        UInt32(payload[offset]) << 24 | UInt32(payload[offset + 1]) << 16 | UInt32(payload[offset + 2]) << 8 | UInt32(payload[offset + 3])
    }
}

/// A hand-driven client end, collecting what the server writes.
final class RawClient {
    let end: InMemoryTransport
    var received: [UInt8] = []
    init(_ end: InMemoryTransport) { self.end = end }
    func send(_ bytes: [UInt8]) { end.send(bytes) }
    func collect() -> [(type: UInt8, flags: UInt8, stream: Int32, payload: [UInt8])] {
        received += end.takeReceived()
        return RawFrames.parse(received)
    }
    func resets() -> [Int32: UInt32] {
        var r: [Int32: UInt32] = [:]
        for f in collect() where f.type == 0x3 { r[f.stream] = RawFrames.errorCode(f.payload, at: 0) }
        return r
    }
    /// The GOAWAY the server sent: (error code, debug data).
    func goAway() -> (code: UInt32, debug: String)? {
        guard let f = collect().first(where: { $0.type == 0x7 }) else { return nil }
        return (RawFrames.errorCode(f.payload, at: 4), String(decoding: f.payload.dropFirst(8), as: UTF8.self))
    }
}

func rawClient(_ loop: EventLoop, _ server: HTTP2Server) -> RawClient {
    let (client, serverEnd) = InMemoryTransport.pair(loop: loop)
    server.accept(serverEnd)
    return RawClient(client)
}

/// The bounds of ServerLimits, each against a client that would get past it without them.
@Suite struct ServerLimitTests {
    /// A header block of 14 KB that decodes to 40 MB (one 4 KB table entry referenced 10,000 times): the
    /// server stops at the header-list limit, answers 431 and never hands the request on.
    @Test func hpackBombIsAnswered431WithoutStoringIt() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        let c = rawClient(loop, server.server)
        c.send(RawFrames.hello + RawFrames.headers(1, RawFrames.hpackBomb(entryBytes: 4000, references: 10_000)))
        #expect(loop.run(until: { c.collect().contains { $0.type == 0x1 && $0.stream == 1 } }, timeoutNanoseconds: 10 * seconds))
        let response = try #require(c.collect().first { $0.type == 0x1 && $0.stream == 1 })
        // :status 431 is not in HPACK's static table: it goes out as a literal holding the digits.
        #expect(String(decoding: response.payload, as: UTF8.self).contains("431"))
        #expect(server.requests == 0)
        #expect(server.limits == [.headerListSize])
        // The announced limit: SETTINGS_MAX_HEADER_LIST_SIZE (0x6) in the server's first SETTINGS.
        let settings = try #require(c.collect().first { $0.type == 0x4 && $0.flags & RawFrames.ack == 0 })
        let entries = stride(from: 0, to: settings.payload.count, by: 6).map { i in
            (Int(settings.payload[i]) << 8 | Int(settings.payload[i + 1]), Int(RawFrames.errorCode(settings.payload, at: i + 2)))
        }
        #expect(entries.contains { $0.0 == 0x6 && $0.1 == ServerLimits().maxHeaderListSize })
        // The connection still serves a normal request.
        c.send(RawFrames.headers(3))
        #expect(loop.run(until: { server.requests == 1 }, timeoutNanoseconds: 10 * seconds))
    }

    /// Requests each under the per-request limit, held open together past the connection's header
    /// memory: the one that passes it is refused (REFUSED_STREAM), the others are served.
    @Test func headerMemoryPerConnectionRefusesTheStreamPastIt() throws {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        config.limits.maxHeaderMemoryPerConnection = 64 * 1024
        let server = try TestServer(loop: loop, configuration: config, listening: false)
        server.deferResponses = true
        let c = rawClient(loop, server.server)
        var bytes = RawFrames.hello
        for k in 0..<10 {
            bytes += RawFrames.headers(Int32(2 * k + 1), RawFrames.minimalBlock
                                       + RawFrames.literalIndexed("x-k\(k)", [UInt8](repeating: 0x62, count: 10_000)))
        }
        c.send(bytes)
        #expect(loop.run(until: { !c.resets().isEmpty && server.requests + c.resets().count == 10 }, timeoutNanoseconds: 10 * seconds))
        #expect(server.requests == 6)
        #expect(c.resets().values.allSatisfy { $0 == NGHTTP2_REFUSED_STREAM.rawValue })
        #expect(server.limits.allSatisfy { $0 == .headerMemory } && server.limits.count == 4)
    }

    /// Bodies over the per-request cap are reset (CANCEL); bodies held open past the connection's budget
    /// reset the stream that passes it (ENHANCE_YOUR_CALM), past the server's budget (REFUSED_STREAM).
    @Test func bodyCapsAndBudgets() throws {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        config.limits.maxRequestBodySize = 20_000
        config.limits.maxBodyMemoryPerConnection = 50_000
        config.limits.maxBodyMemory = 80_000
        let server = try TestServer(loop: loop, configuration: config, listening: false)
        let chunk = [UInt8](repeating: 0x7B, count: 15_000)
        func held(_ streams: [Int32]) -> [UInt8] {
            streams.reduce(RawFrames.hello) { $0 + RawFrames.headers($1, endStream: false) + RawFrames.data($1, chunk) }
        }
        // a: one body over the cap.
        let a = rawClient(loop, server.server)
        a.send(RawFrames.hello + RawFrames.headers(1, endStream: false) + RawFrames.data(1, chunk) + RawFrames.data(1, chunk))
        #expect(loop.run(until: { a.resets()[1] != nil && server.server.bodyBytesHeld == 0 }, timeoutNanoseconds: 10 * seconds))
        #expect(a.resets() == [1: NGHTTP2_CANCEL.rawValue])
        // b: four bodies of 15 KB held open; the fourth passes the connection's 50 KB.
        let b = rawClient(loop, server.server)
        b.send(held([1, 3, 5, 7]))
        #expect(loop.run(until: { b.resets().count == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(b.resets() == [7: NGHTTP2_ENHANCE_YOUR_CALM.rawValue])
        // c: with b's 45 KB held, two more fit the server's 80 KB, the third does not.
        let c = rawClient(loop, server.server)
        c.send(held([1, 3, 5]))
        #expect(loop.run(until: { c.resets().count == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(c.resets() == [5: NGHTTP2_REFUSED_STREAM.rawValue])
        #expect(loop.run(until: { server.server.bodyBytesHeld == 75_000 }, timeoutNanoseconds: 10 * seconds))
        #expect(server.limits == [.requestBodySize, .bodyMemoryPerConnection, .bodyMemory])
        #expect(server.requests == 0)
        // What a closed connection held leaves the budget.
        b.end.close()
        #expect(loop.run(until: { server.server.bodyBytesHeld == 30_000 }, timeoutNanoseconds: 10 * seconds))
    }

    /// A client that sends requests and never reads the answers: the server stops reading from it once
    /// its queue passes the bound, then drops it with GOAWAY ENHANCE_YOUR_CALM when its write stalls.
    @Test func aClientThatNeverReadsIsPausedThenDropped() throws {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        config.limits.writeTimeoutNanos = 300_000_000
        let server = try TestServer(loop: loop, configuration: config, listening: false)
        let (client, serverEnd) = InMemoryTransport.pair(loop: loop)
        client.bufferLimit = 64 * 1024
        server.server.accept(serverEnd)
        var bytes = RawFrames.hello
        var stream: Int32 = 1
        for _ in 0..<200_000 {
            bytes += RawFrames.headers(stream)
            stream += 2
        }
        client.send(bytes)
        #expect(loop.run(until: { server.closed == 1 }, timeoutNanoseconds: 20 * seconds))
        #expect(server.limits.contains(.outboundQueue))
        #expect(server.limits.last == .writeTimeout)
        // Reading paused long before the 200,000 requests were all read.
        #expect(server.requests + server.closedStreams < 100_000)
    }

    /// Blocks freed past the pool's limit go back to malloc (a burst of frames for a client that reads
    /// nothing does not stay pooled for good), and trimming empties the pool.
    @Test func theNGHTTP2PoolKeepsNoMoreThanItsLimit() {
        let mem = NGHTTP2Memory(poolLimit: 64 * 1024)
        let t = mem.testTable
        var blocks: [UnsafeMutableRawPointer] = []
        for _ in 0..<1000 { blocks.append(t.malloc(1024, t.mem_user_data)!) }
        for b in blocks { t.free(b, t.mem_user_data) }
        #expect(mem.pooledBytes == 64 * 1024)
        #expect(mem.frees == 1000 - 64)
        mem.trimPool()
        #expect(mem.pooledBytes == 0)
        #expect(mem.frees == 1000)
        withExtendedLifetime(mem) {}
    }

    @Test func aClientWithoutAPrefaceIsClosedAtTheHandshakeTimeout() throws {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        config.limits.handshakeTimeoutNanos = 100_000_000
        let server = try TestServer(loop: loop, configuration: config, listening: false)
        let truncated = rawClient(loop, server.server), silent = rawClient(loop, server.server)
        truncated.send(Array(RawFrames.preface.prefix(10)))
        #expect(loop.run(until: { server.closed == 2 }, timeoutNanoseconds: 10 * seconds))
        #expect(server.limits == [.handshakeTimeout, .handshakeTimeout])
        #expect(truncated.end.peerHasClosed && silent.end.peerHasClosed)
    }

    /// An idle connection gets GOAWAY(NO_ERROR) with the configured debug data, as APNs' IdleTimeout.
    @Test func anIdleConnectionGetsGoAwayWithItsReason() throws {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        config.limits.idleTimeoutNanos = 200_000_000
        config.limits.idleGoAwayDebugData = Array(#"{"reason":"IdleTimeout"}"#.utf8)
        let server = try TestServer(loop: loop, configuration: config, listening: false)
        let d = TestClient()
        let client = connectInMemory(loop, to: server.server, d)
        #expect(loop.run(until: { d.closed }, timeoutNanoseconds: 10 * seconds))
        withExtendedLifetime(client) {}
        #expect(d.goAways.first?.errorCode == 0)
        #expect(d.goAways.first.map { String(decoding: $0.debugData, as: UTF8.self) } == #"{"reason":"IdleTimeout"}"#)
        #expect(server.limits == [.idleTimeout])
    }

    /// A request whose body never ends is reset (CANCEL); a header block that never ends closes the
    /// connection (GOAWAY ENHANCE_YOUR_CALM), since nothing else may be sent on it meanwhile.
    @Test func requestsThatNeverFinishTimeOut() throws {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        config.limits.requestTimeoutNanos = 150_000_000
        let server = try TestServer(loop: loop, configuration: config, listening: false)
        let body = rawClient(loop, server.server), headers = rawClient(loop, server.server)
        body.send(RawFrames.hello + RawFrames.headers(1, endStream: false) + RawFrames.data(1, [0x7B]))
        headers.send(RawFrames.hello + RawFrames.headers(1, endHeaders: false))
        #expect(loop.run(until: { body.resets()[1] != nil && headers.goAway() != nil }, timeoutNanoseconds: 10 * seconds))
        #expect(body.resets()[1] == NGHTTP2_CANCEL.rawValue)
        #expect(headers.goAway()?.code == NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
        #expect(loop.run(until: { server.closed == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(server.limits.filter { $0 == .requestTimeout }.count == 2)
    }

    /// WINDOW_UPDATE frames by the thousand carry no request: past the per-second budget the client gets
    /// GOAWAY ENHANCE_YOUR_CALM and is closed. (A PING or SETTINGS flood meets nghttp2's own bound on
    /// the acknowledgements it queues first.)
    @Test func aControlFrameFloodGetsEnhanceYourCalm() throws {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        config.limits.maxControlFramesPerSecond = 1000
        let server = try TestServer(loop: loop, configuration: config, listening: false)
        let c = rawClient(loop, server.server)
        var bytes = RawFrames.hello
        for _ in 0..<5000 { bytes += RawFrames.frame(0x8, 0, 0, [0, 0, 0, 1]) }
        c.send(bytes)
        #expect(loop.run(until: { server.closed == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(c.goAway()?.code == NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
        #expect(server.limits == [.controlFrames])
    }

    /// Connections past the cap are closed at once and reported; a place frees when one closes.
    @Test func connectionsPastTheCapAreClosedAtOnce() throws {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        let cap = ConnectionCap(limit: 2)
        config.connectionCap = cap
        let server = try TestServer(loop: loop, configuration: config, listening: false)
        let ends = (0..<3).map { _ in InMemoryTransport.pair(loop: loop) }
        let served = ends.map { server.server.accept($0.1) }
        #expect(served[0] != nil && served[1] != nil && served[2] == nil)
        #expect(server.limits == [.connections])
        #expect(cap.current == 2)
        ends[0].0.close()
        #expect(loop.run(until: { cap.current == 1 }, timeoutNanoseconds: 10 * seconds))
        let again = InMemoryTransport.pair(loop: loop)
        #expect(server.server.accept(again.1) != nil)
    }
}
