import CNGHTTP2
@testable import PushTransport
import Testing

/// Client-to-server round trips on one loop in the test thread, over an in-memory pair unless a
/// test is about the socket path (partial writes through uv_write).
@Suite struct RoundTripTests {
    enum BodyMode: CaseIterable { case zeroCopy, copied, borrowed }

    /// Runs `total` requests keeping `window` in flight, bodies of `bodySize` bytes in `mode`;
    /// returns the bodies the server saw (in arrival order) and checks every response.
    func roundTrips(total: Int, window: Int, bodySize: Int, mode: BodyMode, wire: Wire = .memory,
                    serverConfig: HTTP2ServerConfiguration = HTTP2ServerConfiguration(),
                    tune: (_ clientEnd: InMemoryTransport, _ serverEnd: InMemoryTransport) -> Void = { _, _ in })
        throws -> [[UInt8]] {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, configuration: serverConfig, listening: wire == .tcp)
        server.recordBodies = true
        let d = TestClient()
        var config = HTTP2ClientConfiguration()
        config.slotBodyCapacity = max(bodySize, 1024)
        let client = wire == .tcp ? connectClient(loop, port: server.port, d, configuration: config)
                                  : connectInMemory(loop, to: server.server, d, configuration: config, tune: tune)
        #expect(d.connected)
        let block = try makeBlock()
        // Body bytes depend on the request number so misplaced or mixed bytes are caught.
        func payload(_ k: Int) -> [UInt8] { (0..<bodySize).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ k) } }
        var owned: [[UInt8]] = []
        var sent = 0
        func submitOne() throws {
            let k = sent
            let body = payload(k)
            owned.append(body)
            try client.submit(block, context: UInt64(k)) { req in
                req.setValue(0, "/3/device/\(k)")
                req.setValue(1, "id-\(k)")
                switch mode {
                case .zeroCopy:
                    body.withUnsafeBytes { req.body.copyMemory(from: $0) }
                    req.setBodyLength(body.count)
                case .copied:
                    owned[k].withUnsafeBytes { req.copyBody($0) }
                case .borrowed:
                    owned[k].withUnsafeBytes { req.borrowBody($0) }
                }
            }
            sent += 1
        }
        owned.reserveCapacity(total)  // borrowed/copied bodies must not move while in flight
        d.onResponse = { _, _ in
            if sent < total { try? submitOne() }
        }
        for _ in 0..<min(window, total) { try submitOne() }
        #expect(client.inFlight == min(window, total))
        let ok = loop.run(until: { d.responses + d.failures.count >= total }, timeoutNanoseconds: 60 * seconds)
        #expect(ok)
        #expect(d.responses == total)
        #expect(d.failures.isEmpty)
        #expect(d.statuses[200] == total)
        #expect(d.contexts.count == total)
        #expect(client.inFlight == 0)
        #expect(server.requests == total)
        // Every body arrived intact (order may differ with concurrency): compare as multisets by content.
        let expected = (0..<total).map(payload).sorted { $0.lexicographicallyPrecedes($1) }
        let got = server.bodies.sorted { $0.lexicographicallyPrecedes($1) }
        #expect(got == expected)
        client.close()
        loop.run(until: { server.server.connectionsOpen == 0 }, timeoutNanoseconds: 10 * seconds)
        return server.bodies
    }

    @Test(arguments: Wire.allCases)
    func singleRequestZeroCopyBody(wire: Wire) throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: wire == .tcp)
        server.recordBodies = true
        let d = TestClient()
        let client = connect(loop, to: server, d, over: wire)
        #expect(d.connected)
        #expect(client.peerMaxConcurrentStreams == 1000)
        let block = try makeBlock()
        let payload = Array("{\"aps\":{\"alert\":\"hi\"}}".utf8)
        try client.submit(block, context: 7) { req in
            req.setValue(0, "/3/device/abcdef")
            req.setValue(1, "0000-1111")
            payload.withUnsafeBytes { req.body.copyMemory(from: $0) }
            req.setBodyLength(payload.count)
        }
        #expect(loop.run(until: { d.responses == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(d.statuses[200] == 1)
        #expect(d.contexts == [7])
        #expect(d.lastBody == Array("{\"ok\":true}".utf8))
        #expect(d.lastHeaderLength == String(payload.count))
        #expect(server.bodies == [payload])
        #expect(client.inFlight == 0)
        client.close()
        loop.run(until: { server.closed == 1 }, timeoutNanoseconds: 10 * seconds)
        #expect(server.closed == 1)
        #expect(server.server.connectionsTotal == 1)
        #expect(server.server.bytesIn > UInt64(payload.count))
    }

    @Test func requestWithoutBodyAndServerSeesPseudoHeaders() throws {
        final class Inspect: HTTP2ServerDelegate {
            var seen: (String, String, String, String, String?) = ("", "", "", "", nil)
            func server(_ server: HTTP2Server, didReceive r: HTTP2ServerRequest) {
                seen = (r.method.pbString, r.path.pbString, r.authority.pbString, r.scheme.pbString,
                        r.headers.first(named: "apns-id")?.pbString)
                r.connection.respond(to: r.streamID, status: 410)
            }
        }
        let loop = try EventLoop()
        let inspect = Inspect()
        let server = HTTP2Server(loop: loop, delegate: inspect)
        let d = TestClient()
        let client = connectInMemory(loop, to: server, d)
        let block = try HTTP2HeaderBlock([.fixed(name: ":method", value: "GET"), .fixed(name: ":scheme", value: "http"),
                                          .fixed(name: ":authority", value: "example.test"), .perRequest(name: ":path"),
                                          .perRequest(name: "apns-id")])
        try client.submit(block, context: 1) { req in
            req.setValue(0, "/stats")
            req.setValue(1, capacity: 8) { buf in
                for i in 0..<4 { buf[i] = UInt8(ascii: "a") + UInt8(i) }
                return 4
            }
        }
        #expect(loop.run(until: { d.responses == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(d.statuses[410] == 1)
        #expect(inspect.seen.0 == "GET")
        #expect(inspect.seen.1 == "/stats")
        #expect(inspect.seen.2 == "example.test")
        #expect(inspect.seen.3 == "http")
        #expect(inspect.seen.4 == "abcd")
        client.close()
    }

    @Test func neverIndexedResponseHeadersArrive() throws {
        final class NoIndex: HTTP2ServerDelegate {
            func server(_ server: HTTP2Server, didReceive r: HTTP2ServerRequest) {
                let id = r.headers.first(named: "apns-id")!
                r.connection.respond(to: r.streamID, status: 200) { h in h.addUnique("apns-id", id) }
            }
        }
        let loop = try EventLoop()
        let delegate = NoIndex()
        let server = HTTP2Server(loop: loop, delegate: delegate)
        final class Echo: HTTP2ClientDelegate {
            var ids: [String] = []
            var connected = false
            func connectionDidConnect(_ c: HTTP2ClientConnection, peerSettings: HTTP2Settings) { connected = true }
            func connection(_ c: HTTP2ClientConnection, didReceive r: HTTP2Response) {
                ids.append(r.headers.first(named: "apns-id")?.pbString ?? "-")
            }
        }
        let echo = Echo()
        let client = HTTP2ClientConnection(loop: loop, delegate: echo)
        let (clientEnd, serverEnd) = InMemoryTransport.pair(loop: loop)
        server.accept(serverEnd)
        client.connect(over: clientEnd)
        #expect(loop.run(until: { echo.connected }, timeoutNanoseconds: 10 * seconds))
        let block = try makeBlock(path: "/x")
        for k in 0..<3 { try client.submit(block, context: UInt64(k)) { req in req.setValue(0, "id-\(k)") } }
        #expect(loop.run(until: { echo.ids.count == 3 }, timeoutNanoseconds: 10 * seconds))
        #expect(Set(echo.ids) == ["id-0", "id-1", "id-2"])
    }

    @Test func missingPerRequestValueIsRefused() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        let d = TestClient()
        let client = connectInMemory(loop, to: server.server, d)
        let block = try makeBlock()
        #expect(throws: HTTP2SubmitError.missingValue(field: 1)) {
            try client.submit(block, context: 1) { req in req.setValue(0, "/x") }
        }
        #expect(client.inFlight == 0)
        #expect(throws: HTTP2HeaderBlock.InvalidBlock.self) {
            try HTTP2HeaderBlock([.fixed(name: "Content-Type", value: "x")])
        }
    }

    @Test(arguments: [1, 100, 1000])
    func concurrentStreamsSmallBodies(window: Int) throws {
        _ = try roundTrips(total: max(window * 2, 10), window: window, bodySize: 200, mode: .zeroCopy)
    }

    @Test(arguments: BodyMode.allCases)
    func fourKiBBodiesEveryMode(mode: BodyMode) throws {
        _ = try roundTrips(total: 300, window: 100, bodySize: 4096, mode: mode)
    }

    @Test(arguments: BodyMode.allCases)
    func bodiesLargerThanOneFrame(mode: BodyMode) throws {
        _ = try roundTrips(total: 20, window: 10, bodySize: 40_000, mode: mode)
    }

    @Test(arguments: BodyMode.allCases, Wire.allCases)
    func bodiesLargerThanTheFlowControlWindow(mode: BodyMode, wire: Wire) throws {
        var sc = HTTP2ServerConfiguration()
        sc.initialWindowSize = 65_535
        sc.connectionWindowSize = 65_535
        _ = try roundTrips(total: 6, window: 3, bodySize: 300_000, mode: mode, wire: wire, serverConfig: sc)
    }

    @Test func everyBodyModeSendsIdenticalBytes() throws {
        let a = try roundTrips(total: 5, window: 1, bodySize: 20_000, mode: .zeroCopy)
        let b = try roundTrips(total: 5, window: 1, bodySize: 20_000, mode: .copied)
        let c = try roundTrips(total: 5, window: 1, bodySize: 20_000, mode: .borrowed)
        let overTCP = try roundTrips(total: 5, window: 1, bodySize: 20_000, mode: .zeroCopy, wire: .tcp)
        #expect(a == b)
        #expect(b == c)
        #expect(a == overTCP)
    }

    /// 4 MB of bodies over loopback TCP: writes outrun the socket buffer, so batches go through
    /// uv_write and resume from its callback.
    @Test func manyLargeBodiesOverTCP() throws {
        _ = try roundTrips(total: 40, window: 20, bodySize: 100_000, mode: .zeroCopy, wire: .tcp)
    }

    /// Every frame split across reads (one byte per read), both ways.
    @Test func framesSplitIntoOneByteReads() throws {
        _ = try roundTrips(total: 20, window: 5, bodySize: 300, mode: .zeroCopy) { clientEnd, serverEnd in
            clientEnd.readLimit = 1
            serverEnd.readLimit = 1
        }
    }

    /// A reader that buffers at most 1 KiB: every writer's batch goes pending and resumes as the
    /// reader catches up (what a full socket buffer does, here at every step).
    @Test(arguments: BodyMode.allCases)
    func writersWaitForASlowReader(mode: BodyMode) throws {
        _ = try roundTrips(total: 30, window: 10, bodySize: 20_000, mode: mode) { clientEnd, serverEnd in
            clientEnd.bufferLimit = 1024
            serverEnd.bufferLimit = 1024
            clientEnd.readLimit = 700
            serverEnd.readLimit = 700
        }
    }
}
