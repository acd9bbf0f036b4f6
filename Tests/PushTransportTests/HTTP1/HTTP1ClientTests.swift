@testable import PushTransport
import Testing

/// The HTTP/1.1 client against the HTTP/1.1 server (in memory) and against raw bytes.
@Suite struct HTTP1ClientTests {
    final class Client: HTTP1ClientDelegate {
        var connected = false
        var responses: [(status: Int, body: String, context: UInt64, headers: [(String, String)])] = []
        var failed: [UInt64] = []
        var closed = false
        var connectError: TransportError?
        func connectionDidConnect(_ connection: HTTP1ClientConnection) { connected = true }
        func connection(_ connection: HTTP1ClientConnection, didFailToConnect error: TransportError) { connectError = error }
        func connection(_ connection: HTTP1ClientConnection, didReceive response: HTTP1Response) {
            var h: [(String, String)] = []
            for i in 0..<response.headers.count { h.append((response.headers[i].name.pbString, response.headers[i].value.pbString)) }
            responses.append((response.status, response.body.pbString, response.context, h))
        }
        func connection(_ connection: HTTP1ClientConnection, requestDidFail context: UInt64, error: TransportError) {
            failed.append(context)
        }
        func connectionDidClose(_ connection: HTTP1ClientConnection, error: TransportError) { closed = true }
    }

    static func body(_ s: String) -> (UnsafeMutableRawBufferPointer) -> Int {
        { out in
            let b = Array(s.utf8)
            out.copyBytes(from: b)
            return b.count
        }
    }

    @Test func requestsGoOutOneAtATimeOnAKeptAliveConnection() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        let d = Client()
        let (clientEnd, serverEnd) = InMemoryTransport.pair(loop: loop)
        t.server.accept(serverEnd)
        let c = HTTP1ClientConnection(loop: loop, delegate: d)
        c.connect(over: clientEnd)
        #expect(d.connected && c.isIdle)
        let head = try HTTP1RequestHead(path: "/v1/x", host: "localhost", headers: [("Authorization", "Bearer t")])
        try c.submit(head, context: 7, Self.body("{\"a\":1}"))
        #expect(!c.isIdle)
        #expect(throws: HTTP1SubmitError.busy) { try c.submit(head, context: 8, Self.body("x")) }
        #expect(loop.run(until: { d.responses.count == 1 }, timeoutNanoseconds: 5 * seconds))
        #expect(d.responses[0].status == 200 && d.responses[0].body == "POST /v1/x 7" && d.responses[0].context == 7)
        #expect(d.responses[0].headers.contains { $0 == ("content-type", "text/plain") })
        #expect(t.requests[0].headers.contains { $0 == ("authorization", "Bearer t") })
        #expect(t.requests[0].body == "{\"a\":1}")
        try c.submit(head, context: 8, Self.body(""))
        #expect(loop.run(until: { d.responses.count == 2 }, timeoutNanoseconds: 5 * seconds))
        #expect(d.responses[1].body == "POST /v1/x 0")
        #expect(t.opened == 1)
        #expect(throws: HTTP1SubmitError.bodyTooLarge) {
            try c.submit(head, context: 9) { out in out.count + 1 }
        }
    }

    @Test func connectionCloseFromTheServerClosesAfterTheAnswer() throws {
        let loop = try EventLoop()
        let d = Client()
        let (clientEnd, raw) = InMemoryTransport.pair(loop: loop)
        let c = HTTP1ClientConnection(loop: loop, delegate: d)
        c.connect(over: clientEnd)
        try c.submit(try HTTP1RequestHead(path: "/", host: "h"), context: 1, Self.body(""))
        loop.run(until: { !raw.takeReceived().isEmpty }, timeoutNanoseconds: 5 * seconds)
        raw.send(Array("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbusy\r\n0\r\n\r\n".utf8))
        #expect(loop.run(until: { d.closed }, timeoutNanoseconds: 5 * seconds))
        #expect(d.responses.map(\.status) == [503] && d.responses[0].body == "busy")
        #expect(d.failed.isEmpty)
    }

    @Test func aConnectionLostMidRequestFailsTheRequest() throws {
        let loop = try EventLoop()
        let d = Client()
        let (clientEnd, raw) = InMemoryTransport.pair(loop: loop)
        let c = HTTP1ClientConnection(loop: loop, delegate: d)
        c.connect(over: clientEnd)
        try c.submit(try HTTP1RequestHead(path: "/", host: "h"), context: 5, Self.body("x"))
        loop.run(until: { !raw.takeReceived().isEmpty }, timeoutNanoseconds: 5 * seconds)
        raw.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".utf8))
        raw.close()
        #expect(loop.run(until: { d.closed }, timeoutNanoseconds: 5 * seconds))
        #expect(d.failed == [5] && d.responses.isEmpty)
    }

    @Test func garbageFromTheServerIsAProtocolError() throws {
        let loop = try EventLoop()
        let d = Client()
        let (clientEnd, raw) = InMemoryTransport.pair(loop: loop)
        let c = HTTP1ClientConnection(loop: loop, delegate: d)
        c.connect(over: clientEnd)
        try c.submit(try HTTP1RequestHead(path: "/", host: "h"), context: 5, Self.body("x"))
        raw.send([0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0x03, 0xE8])
        #expect(loop.run(until: { d.closed }, timeoutNanoseconds: 5 * seconds))
        #expect(d.failed == [5])
    }

    @Test func headRejectsLineBreaks() {
        #expect(throws: HTTP1RequestHead.Invalid.self) { try HTTP1RequestHead(path: "/", host: "h", headers: [("X", "a\r\nB: c")]) }
        #expect(throws: HTTP1RequestHead.Invalid.self) { try HTTP1RequestHead(path: "no-slash", host: "h") }
    }
}
