import CNGHTTP2
import CUV
import Glibc
@testable import PushTransport
import Testing

/// Failures and control frames end in reported events within bounded time, never a hang or a crash.
/// What only a socket shows (refused and silent TCP peers, addresses, the listener) runs over TCP;
/// the rest over an in-memory pair.
@Suite struct ConnectionEventTests {
    @Test func connectionRefusedIsReported() throws {
        let loop = try EventLoop()
        // A port that was free a moment ago: bind, read the port, close.
        let port: Int
        do {
            let probe = HTTP2Server(loop: loop, delegate: nil)
            port = try probe.listen(host: "127.0.0.1", port: 0)
            probe.close()
            loop.runOnce(wait: false)
        }
        let d = TestClient()
        let c = HTTP2ClientConnection(loop: loop, delegate: d)
        c.connect(host: "127.0.0.1", port: port)
        #expect(loop.run(until: { d.connectError != nil }, timeoutNanoseconds: 10 * seconds))
        #expect(d.connectError?.code == Int32(UV_ECONNREFUSED.rawValue))
        #expect(d.connectError?.description.contains("refused") == true)
        #expect(!d.connected)
        #expect(throws: HTTP2SubmitError.notConnected) {
            try c.submit(try makeBlock(path: "/"), context: 0) { _ in }
        }
    }

    @Test func silentPeerTimesOutTheHandshake() throws {
        // A bare TCP listener that accepts (via the backlog) but never sends SETTINGS.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        #expect(bound && listen(fd, 8) == 0)
        let loop = try EventLoop()
        let d = TestClient()
        var config = HTTP2ClientConfiguration()
        config.connectTimeoutMilliseconds = 200
        let c = HTTP2ClientConnection(loop: loop, configuration: config, delegate: d)
        c.connect(host: "127.0.0.1", port: Int(UInt16(bigEndian: addr.sin_port)))
        #expect(loop.run(until: { d.connectError != nil }, timeoutNanoseconds: 10 * seconds))
        #expect(d.connectError?.kind == .connectTimeout)
    }

    @Test func silentInMemoryPeerTimesOutTheHandshake() throws {
        let loop = try EventLoop()
        let d = TestClient()
        var config = HTTP2ClientConfiguration()
        config.connectTimeoutMilliseconds = 200
        let (clientEnd, silent) = InMemoryTransport.pair(loop: loop)
        let c = HTTP2ClientConnection(loop: loop, configuration: config, delegate: d)
        c.connect(over: clientEnd)
        #expect(loop.run(until: { d.connectError != nil }, timeoutNanoseconds: 10 * seconds))
        #expect(d.connectError?.kind == .connectTimeout)
        // The client's preface and SETTINGS reached the silent end; it then hung up.
        let sent = silent.takeReceived()
        #expect(sent.starts(with: Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)))
        #expect(silent.peerHasClosed)
    }

    @Test func aPeerHangingUpBeforeItsSettingsIsAConnectFailure() throws {
        let loop = try EventLoop()
        let d = TestClient()
        let (clientEnd, peer) = InMemoryTransport.pair(loop: loop)
        let c = HTTP2ClientConnection(loop: loop, delegate: d)
        c.connect(over: clientEnd)
        peer.close()
        #expect(loop.run(until: { d.connectError != nil }, timeoutNanoseconds: 10 * seconds))
        #expect(d.connectError?.kind == .connectionLost)
        #expect(!d.connected && !d.closed)
        // Garbage instead of SETTINGS is a failed connect too.
        let d2 = TestClient()
        let (clientEnd2, peer2) = InMemoryTransport.pair(loop: loop)
        let c2 = HTTP2ClientConnection(loop: loop, delegate: d2)
        c2.connect(over: clientEnd2)
        peer2.send(Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8))
        #expect(loop.run(until: { d2.connectError != nil }, timeoutNanoseconds: 10 * seconds))
        #expect(d2.connectError?.kind == .protocolError)
        // Closing a connection of one's own before it connected reports nothing.
        let d3 = TestClient()
        let (clientEnd3, _) = InMemoryTransport.pair(loop: loop)
        let c3 = HTTP2ClientConnection(loop: loop, delegate: d3)
        c3.connect(over: clientEnd3)
        c3.close()
        loop.run(until: { false }, timeoutNanoseconds: 20_000_000)
        #expect(d3.connectError == nil && !d3.closed)
        withExtendedLifetime((c, c2)) {}
    }

    @Test func zeroCopyBodyBeyondTheSlotIsRefused() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        let d = TestClient()
        var config = HTTP2ClientConfiguration()
        config.slotBodyCapacity = 1024
        let client = connectInMemory(loop, to: server.server, d, configuration: config)
        #expect(throws: HTTP2SubmitError.bodyTooLarge(length: 4096, capacity: 1024)) {
            try client.submit(try makeBlock(path: "/x"), context: 1) { req in
                req.setValue(0, "id")
                req.setBodyLength(4096)
            }
        }
        #expect(client.inFlight == 0)
    }

    @Test func badAddressIsReported() throws {
        let loop = try EventLoop()
        let d = TestClient()
        let c = HTTP2ClientConnection(loop: loop, delegate: d)
        c.connect(host: "not-an-address", port: 1)
        #expect(loop.run(until: { d.connectError != nil }, timeoutNanoseconds: 5 * seconds))
    }

    @Test func peerClosingMidStreamFailsEveryOpenStream() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        server.deferResponses = true
        let d = TestClient()
        let client = connectInMemory(loop, to: server.server, d)
        let block = try makeBlock(path: "/x")
        for k in 0..<50 {
            try client.submit(block, context: UInt64(k)) { req in
                req.setValue(0, "id")
                req.setBodyLength(100)
            }
        }
        #expect(loop.run(until: { server.deferred.count == 50 }, timeoutNanoseconds: 10 * seconds))
        // Answer a few, then drop the connection with the rest open.
        for (c, id) in server.deferred.prefix(10) { server.respond(c, id) }
        #expect(loop.run(until: { d.responses == 10 }, timeoutNanoseconds: 10 * seconds))
        server.deferred[0].0.close()
        #expect(loop.run(until: { d.closed }, timeoutNanoseconds: 10 * seconds))
        #expect(d.failures.count == 40)
        #expect(d.failures.allSatisfy { $0.reason == .connectionLost })
        #expect(Set(d.failures.map(\.context)) == Set((10..<50).map(UInt64.init)))
        #expect(d.closeError?.kind == .connectionLost)
        #expect(client.inFlight == 0)
        // A response to a stream of a closed connection is refused, not a crash.
        #expect(server.deferred[20].0.respond(to: server.deferred[20].1, status: 200) == false)
    }

    @Test func goAwayWithDebugDataIsObserved() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        server.deferResponses = true
        let d = TestClient()
        let client = connectInMemory(loop, to: server.server, d)
        let block = try makeBlock(path: "/x")
        for k in 0..<3 {
            try client.submit(block, context: UInt64(k)) { req in req.setValue(0, "id") }
        }
        #expect(loop.run(until: { server.deferred.count == 3 }, timeoutNanoseconds: 10 * seconds))
        let conn = server.deferred[0].0
        let reason = Array("{\"reason\":\"Shutdown\"}".utf8)
        // Last stream id 3 (the second request): stream 5 was not processed; it ends as cut by the GOAWAY.
        reason.withUnsafeBytes { conn.goAway(errorCode: 0, debugData: $0, lastStreamID: 3) }
        #expect(loop.run(until: { d.goAways.count == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(d.goAways.first?.debugData == reason)
        #expect(d.goAways.first?.lastStreamID == 3)
        #expect(d.goAways.first?.errorCode == 0)
        #expect(!client.isConnected)
        #expect(throws: HTTP2SubmitError.notConnected) {
            try client.submit(block, context: 9) { req in req.setValue(0, "id") }
        }
        #expect(loop.run(until: { d.failures.count == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(d.failures.first?.reason == .goAway(errorCode: 0))
        #expect(d.failures.first?.context == 2)
        // Streams up to the last id still complete, then the connection closes cleanly.
        for (c, id) in server.deferred.prefix(2) { server.respond(c, id) }
        #expect(loop.run(until: { d.responses == 2 && d.closed && server.closed == 1 }, timeoutNanoseconds: 10 * seconds))
    }

    @Test func settingsChangeToOneStreamIsObservedAndEnforced() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        let d = TestClient()
        let client = connectInMemory(loop, to: server.server, d)
        #expect(client.peerMaxConcurrentStreams == 1000)
        server.server.updateSettings(maxConcurrentStreams: 1)
        #expect(loop.run(until: { !d.settingsUpdates.isEmpty }, timeoutNanoseconds: 10 * seconds))
        #expect(d.settingsUpdates.last?.maxConcurrentStreams == 1)
        #expect(client.peerMaxConcurrentStreams == 1)
        #expect(client.availableStreams == 1)
        server.deferResponses = true
        let block = try makeBlock(path: "/x")
        try client.submit(block, context: 1) { req in req.setValue(0, "a") }
        #expect(throws: HTTP2SubmitError.noStreamAvailable(inFlight: 1, limit: 1)) {
            try client.submit(block, context: 2) { req in req.setValue(0, "b") }
        }
        #expect(loop.run(until: { server.deferred.count == 1 }, timeoutNanoseconds: 10 * seconds))
        server.respond(server.deferred[0].0, server.deferred[0].1)
        #expect(loop.run(until: { d.responses == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(client.availableStreams == 1)
        // New connections get the lowered limit at once.
        let d2 = TestClient()
        let second = connectInMemory(loop, to: server.server, d2)
        #expect(d2.connected)
        #expect(second.peerMaxConcurrentStreams == 1)
    }

    @Test func gracefulShutdownLetsInFlightStreamsFinish() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        server.deferResponses = true
        let d = TestClient()
        let client = connectInMemory(loop, to: server.server, d)
        let block = try makeBlock(path: "/x")
        for k in 0..<5 { try client.submit(block, context: UInt64(k)) { req in req.setValue(0, "id") } }
        #expect(loop.run(until: { server.deferred.count == 5 }, timeoutNanoseconds: 10 * seconds))
        var done = false
        server.server.shutdownGracefully { done = true }
        #expect(loop.run(until: { d.goAways.count == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(!done)
        for (c, id) in server.deferred { server.respond(c, id) }
        #expect(loop.run(until: { done && d.closed }, timeoutNanoseconds: 10 * seconds))
        #expect(d.responses == 5)
        #expect(d.failures.isEmpty)
        withExtendedLifetime(client) {}
    }

    @Test func gracefulShutdownClosesTheListener() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop)
        let d = TestClient()
        let client = connectClient(loop, port: server.port, d)
        #expect(d.connected)
        var done = false
        server.server.shutdownGracefully { done = true }
        #expect(loop.run(until: { done && d.closed }, timeoutNanoseconds: 10 * seconds))
        // The listener is closed: a new connect is refused.
        let d2 = TestClient()
        let c2 = HTTP2ClientConnection(loop: loop, delegate: d2)
        c2.connect(host: "127.0.0.1", port: server.port)
        #expect(loop.run(until: { d2.connectError != nil }, timeoutNanoseconds: 10 * seconds))
        #expect(d2.connectError?.code == Int32(UV_ECONNREFUSED.rawValue))
        withExtendedLifetime(client) {}
    }

    @Test func malformedBytesFromAClientAreAProtocolError() throws {
        final class Closes: HTTP2ServerDelegate {
            var error: TransportError?
            func server(_ server: HTTP2Server, didReceive request: HTTP2ServerRequest) {}
            func server(_ server: HTTP2Server, connectionDidClose connection: HTTP2ServerConnection, error: TransportError) {
                self.error = error
            }
        }
        let loop = try EventLoop()
        let closes = Closes()
        let server = HTTP2Server(loop: loop, delegate: closes)
        let (client, serverEnd) = InMemoryTransport.pair(loop: loop)
        server.accept(serverEnd)
        // The server speaks first (its SETTINGS), then reads what the client sends.
        var answer: [UInt8] = []
        #expect(loop.run(until: { answer += client.takeReceived(); return !answer.isEmpty }, timeoutNanoseconds: 10 * seconds))
        #expect(frameTypes(answer).first == 0x4, "SETTINGS first: \(answer.prefix(9))")
        client.send(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(loop.run(until: { closes.error != nil }, timeoutNanoseconds: 10 * seconds))
        #expect(closes.error?.kind == .protocolError)
        #expect(closes.error?.message.isEmpty == false)
        #expect(server.connectionsOpen == 0)
        #expect(client.peerHasClosed)
    }

    @Test func aPeerHangingUpIsAConnectionLoss() throws {
        let loop = try EventLoop()
        let d = TestClient()
        let (clientEnd, peer) = InMemoryTransport.pair(loop: loop)
        let c = HTTP2ClientConnection(loop: loop, delegate: d)
        c.connect(over: clientEnd)
        // A hand-driven server: its SETTINGS (empty) and the ACK of the client's.
        peer.send([0, 0, 0, 0x4, 0, 0, 0, 0, 0])
        #expect(loop.run(until: { d.connected }, timeoutNanoseconds: 10 * seconds))
        peer.send([0, 0, 0, 0x4, 0x1, 0, 0, 0, 0])
        #expect(frameTypes(peer.takeReceived(), preface: true).first == 0x4)  // the client's SETTINGS
        try c.submit(try makeBlock(path: "/x"), context: 7) { req in req.setValue(0, "id") }
        var sent: [UInt8] = []
        #expect(loop.run(until: { sent += peer.takeReceived(); return frameTypes(sent).contains(0x1) }, timeoutNanoseconds: 10 * seconds))
        peer.close()
        #expect(loop.run(until: { d.closed }, timeoutNanoseconds: 10 * seconds))
        #expect(d.closeError?.kind == .connectionLost)
        #expect(d.failures.map(\.reason) == [.connectionLost])
        #expect(d.failures.first?.context == 7)
    }
}

/// The frame types in `bytes` (whole frames from the start, after the client preface if `preface`).
func frameTypes(_ bytes: [UInt8], preface: Bool = false) -> [UInt8] {
    var i = preface ? 24 : 0
    var types: [UInt8] = []
    while i + 9 <= bytes.count {
        let length = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
        types.append(bytes[i + 3])
        i += 9 + length
    }
    return types
}

/// RST_STREAM from the server reaches the client as a per-stream failure with the error code.
@Suite struct ResetTests {
    @Test func serverResetIsReportedPerStream() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        server.deferResponses = true
        let d = TestClient()
        let client = connectInMemory(loop, to: server.server, d)
        let block = try makeBlock(path: "/x")
        for k in 0..<2 { try client.submit(block, context: UInt64(k)) { req in req.setValue(0, "id") } }
        #expect(loop.run(until: { server.deferred.count == 2 }, timeoutNanoseconds: 10 * seconds))
        server.deferred[0].0.reset(server.deferred[0].1, errorCode: 0x2)  // INTERNAL_ERROR
        server.respond(server.deferred[1].0, server.deferred[1].1)
        #expect(loop.run(until: { d.failures.count == 1 && d.responses == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(d.failures.first?.reason == .reset(errorCode: 2))
        #expect(d.failures.first?.context == 0)
        #expect(client.isConnected)
    }
}

/// Closing a connection from inside its own delegate callback is safe on both sides.
@Suite struct CloseFromCallbackTests {
    final class ClosingServer: HTTP2ServerDelegate {
        var closed = 0
        func server(_ server: HTTP2Server, didReceive r: HTTP2ServerRequest) { r.connection.close() }
        func server(_ server: HTTP2Server, connectionDidClose connection: HTTP2ServerConnection, error: TransportError) {
            closed += 1
        }
    }

    @Test func serverClosesInsideDidReceive() throws {
        let loop = try EventLoop()
        let closing = ClosingServer()
        let server = HTTP2Server(loop: loop, delegate: closing)
        let d = TestClient()
        let client = connectInMemory(loop, to: server, d)
        let block = try makeBlock(path: "/x")
        for k in 0..<5 { try client.submit(block, context: UInt64(k)) { req in req.setValue(0, "id") } }
        #expect(loop.run(until: { d.closed && closing.closed == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(d.failures.count == 5)
        #expect(server.connectionsOpen == 0)
    }

    @Test func clientClosesInsideDidReceive() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        let d = TestClient()
        var c: HTTP2ClientConnection? = connectInMemory(loop, to: server.server, d)
        d.onResponse = { conn, _ in conn.close(); c = nil }
        let block = try makeBlock(path: "/x")
        for k in 0..<5 { try c?.submit(block, context: UInt64(k)) { req in req.setValue(0, "id") } }
        #expect(loop.run(until: { d.closed && server.closed == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(d.responses == 1)
        #expect(d.failures.count == 4)
        #expect(c == nil)
    }
}
