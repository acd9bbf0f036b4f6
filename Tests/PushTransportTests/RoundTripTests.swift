import PushTransport
import Testing

@Suite struct RoundTripTests {
    @Test func singleRequestZeroCopyBody() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop)
        server.recordBodies = true
        let d = TestClient()
        let client = connectClient(loop, port: server.port, d)
        #expect(d.connected)
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
    }
}
