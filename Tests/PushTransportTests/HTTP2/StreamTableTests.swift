@testable import PushTransport
import Testing

/// The server finds a stream's slot through a direct-mapped table by stream id; a stream whose entry
/// another open stream holds keeps its slot in nghttp2's stream user data. Both must reach every
/// callback (header fields, DATA, END_STREAM) and the answer.
@Suite struct StreamTableTests {
    @Test func streamsSharingAnEntryWithAnOpenStreamAreServedWhole() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        server.recordBodies = true
        server.deferResponses = true
        let d = TestClient()
        let client = connectInMemory(loop, to: server.server, d)
        #expect(d.connected)
        let block = try makeBlock()
        let size = HTTP2ServerConnection.streamTableSize
        // Enough streams after the held one that ids 2 × size apart (the same entry) open while it is
        // open, several times over.
        let total = 3 * size + 7
        func payload(_ k: Int) -> [UInt8] { (0..<100).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ k) } }
        var sent = 0
        func submitOne() throws {
            let k = sent
            try client.submit(block, context: UInt64(k)) { req in
                req.setValue(0, "/3/device/\(k)")
                req.setValue(1, "id-\(k)")
                let body = payload(k)
                body.withUnsafeBytes { req.body.copyMemory(from: $0) }
                req.setBodyLength(body.count)
            }
            sent += 1
        }
        // Stream 1 arrives and is held unanswered.
        try submitOne()
        #expect(loop.run(until: { server.deferred.count == 1 }, timeoutNanoseconds: 10 * seconds))
        server.deferResponses = false
        d.onResponse = { _, _ in
            if sent < total { try? submitOne() }
        }
        for _ in 0..<20 { try submitOne() }
        #expect(loop.run(until: { d.responses == total - 1 }, timeoutNanoseconds: 30 * seconds))
        #expect(d.failures.isEmpty)
        // The held stream is still found by its id.
        let (connection, stream) = server.deferred[0]
        #expect(stream == 1)
        #expect(connection.respond(to: stream, status: 200))
        #expect(loop.run(until: { d.responses == total }, timeoutNanoseconds: 10 * seconds))
        #expect(d.statuses[200] == total)
        #expect(d.failures.isEmpty)
        #expect(server.requests == total)
        let expected = (0..<total).map(payload).sorted { $0.lexicographicallyPrecedes($1) }
        #expect(server.bodies.sorted { $0.lexicographicallyPrecedes($1) } == expected)
        // Answering it again is refused: its slot left the table when the stream closed.
        #expect(connection.respond(to: stream, status: 200) == false)
        client.close()
        loop.run(until: { server.server.connectionsOpen == 0 }, timeoutNanoseconds: 10 * seconds)
    }
}
