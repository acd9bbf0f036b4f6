import CNGHTTP2
@testable import PushTransport
import Testing

/// A server delegate that answers every HTTP/1.1 request 200 with `method path body-length`, or holds it.
final class HTTP1TestServer: HTTP2ServerDelegate {
    let server: HTTP2Server
    var requests: [(method: String, path: String, body: String, headers: [(String, String)], keepAlive: Bool)] = []
    var held: [(HTTP1ServerConnection, UInt64)] = []
    var holdAnswers = false
    var http2Requests = 0
    var opened = 0
    var closed = 0

    init(loop: EventLoop, configure: (inout HTTP2ServerConfiguration) -> Void = { _ in }) {
        var c = HTTP2ServerConfiguration()
        c.servesHTTP1 = true
        configure(&c)
        server = HTTP2Server(loop: loop, configuration: c, delegate: nil)
        server.delegate = self
    }

    func server(_ server: HTTP2Server, didReceive request: HTTP2ServerRequest) {
        http2Requests += 1
        request.connection.respond(to: request.streamID, status: 200)
    }

    func server(_ server: HTTP2Server, didReceive request: HTTP1ServerRequest) {
        var headers: [(String, String)] = []
        for i in 0..<request.headers.count { headers.append((request.headers[i].name.pbString, request.headers[i].value.pbString)) }
        requests.append((request.method.pbString, request.path.pbString, request.body.pbString, headers, request.keepAlive))
        if holdAnswers {
            held.append((request.connection, request.sequence))
            return
        }
        answer(request.connection, request.sequence, "\(request.method.pbString) \(request.path.pbString) \(request.body.count)")
    }

    func answer(_ c: HTTP1ServerConnection, _ sequence: UInt64, _ text: String) {
        var t = text
        t.withUTF8 { b in
            _ = c.respond(to: sequence, status: 200, body: UnsafeRawBufferPointer(b)) { h in h.add("content-type", "text/plain") }
        }
    }

    /// Bounds the server enforced, in order.
    var limits: [ServerLimit] = []
    func server(_ server: HTTP2Server, connection: HTTP2ServerConnection?, didEnforce limit: ServerLimit) { limits.append(limit) }

    func server(_ server: HTTP2Server, http1ConnectionDidOpen connection: HTTP1ServerConnection) { opened += 1 }
    func server(_ server: HTTP2Server, http1ConnectionDidClose connection: HTTP1ServerConnection, error: TransportError) {
        closed += 1
    }
}

/// Drives one raw client end by hand: sends bytes, collects what the server wrote.
struct HTTP1RawClient {
    let loop: EventLoop
    let end: InMemoryTransport
    var received: [UInt8] = []

    init(_ loop: EventLoop, _ server: HTTP2Server) {
        self.loop = loop
        let (client, serverEnd) = InMemoryTransport.pair(loop: loop)
        end = client
        server.accept(serverEnd)
    }

    mutating func send(_ text: String) { end.send(Array(text.utf8)) }

    /// Runs the loop until `condition` holds on what was received (or 5 s pass).
    @discardableResult
    mutating func run(until condition: (String) -> Bool) -> String {
        var text = ""
        let loop = self.loop, end = self.end
        var got = received
        loop.run(until: {
            got += end.takeReceived()
            text = String(decoding: got, as: UTF8.self)
            return condition(text)
        }, timeoutNanoseconds: 5 * seconds)
        received = got
        return text
    }

    /// The number of complete answers with status `status` in `text`.
    static func count(_ status: Int, in text: String) -> Int {
        text.components(separatedBy: "HTTP/1.1 \(status) ").count - 1
    }
}

@Suite struct HTTP1ServerTests {
    static let post = "POST /v1/projects/p/messages:send HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"

    @Test func keepAliveServesRequestsInOrderOnOneConnection() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        var c = HTTP1RawClient(loop, t.server)
        c.send(Self.post)
        c.run { HTTP1RawClient.count(200, in: $0) == 1 }
        c.send("GET /stats HTTP/1.1\r\nHost: x\r\n\r\n")
        let text = c.run { HTTP1RawClient.count(200, in: $0) == 2 }
        #expect(text.contains("Content-Length: 35\r\n\r\nPOST /v1/projects/p/messages:send 2"))
        #expect(text.hasSuffix("GET /stats 0"))
        #expect(text.contains("Date: "))
        #expect(!text.contains("Connection: close"))
        #expect(t.opened == 1 && t.closed == 0 && t.server.http1ConnectionsOpen == 1)
        #expect(t.requests.map(\.keepAlive) == [true, true])
    }

    @Test func headerNamesArriveInLowerCase() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        var c = HTTP1RawClient(loop, t.server)
        c.send("POST /x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer AbC\r\nContent-Length: 0\r\n\r\n")
        c.run { HTTP1RawClient.count(200, in: $0) == 1 }
        #expect(t.requests.first?.headers.contains { $0 == ("authorization", "Bearer AbC") } == true)
    }

    @Test func chunkedBodyIsReassembled() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        var c = HTTP1RawClient(loop, t.server)
        c.send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        c.run { HTTP1RawClient.count(200, in: $0) == 1 }
        #expect(t.requests.first?.body == "hello world")
    }

    @Test func requestSplitIntoOneByteReadsIsParsedWhole() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        let (client, serverEnd) = InMemoryTransport.pair(loop: loop)
        serverEnd.readLimit = 1
        t.server.accept(serverEnd)
        client.send(Array("POST /split HTTP/1.1\r\nHost: x\r\nX-Long-Name: some value\r\nContent-Length: 5\r\n\r\nabcde".utf8))
        #expect(loop.run(until: { t.requests.count == 1 }, timeoutNanoseconds: 5 * seconds))
        #expect(t.requests.first?.body == "abcde")
        #expect(t.requests.first?.headers.contains { $0 == ("x-long-name", "some value") } == true)
    }

    @Test func expectContinueIsAnsweredBeforeTheBody() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        var c = HTTP1RawClient(loop, t.server)
        c.send("POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
        let interim = c.run { $0.contains("\r\n\r\n") }
        #expect(interim == "HTTP/1.1 100 Continue\r\n\r\n")
        #expect(t.requests.isEmpty)
        c.send("abc")
        let text = c.run { HTTP1RawClient.count(200, in: $0) == 1 }
        #expect(text.hasSuffix("POST /e 3"))
    }

    @Test func pipelinedRequestsAreAnsweredOneAtATimeInOrder() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        t.holdAnswers = true
        var c = HTTP1RawClient(loop, t.server)
        c.send("POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\naPOST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nbb"
               + "GET /3 HTTP/1.1\r\nHost: x\r\n\r\n")
        loop.run(until: { t.held.count == 1 }, timeoutNanoseconds: 5 * seconds)
        // Only the first is read while it waits for its answer.
        loop.run(until: { false }, timeoutNanoseconds: 20_000_000)
        #expect(t.requests.map(\.path) == ["/1"])
        // An answer to a request that is not the one waiting is refused.
        #expect(!t.held[0].0.respond(to: t.held[0].1 + 1, status: 200))
        t.holdAnswers = false
        t.answer(t.held[0].0, t.held[0].1, "one")
        let text = c.run { HTTP1RawClient.count(200, in: $0) == 3 }
        #expect(t.requests.map(\.path) == ["/1", "/2", "/3"])
        #expect(t.requests.map(\.body) == ["a", "bb", ""])
        let one = text.range(of: "one")!, two = text.range(of: "POST /2 2")!, three = text.range(of: "GET /3 0")!
        #expect(one.lowerBound < two.lowerBound && two.lowerBound < three.lowerBound)
    }

    @Test func connectionCloseIsHonoured() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        var c = HTTP1RawClient(loop, t.server)
        c.send("GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        let text = c.run { HTTP1RawClient.count(200, in: $0) == 1 }
        #expect(text.contains("Connection: close\r\n"))
        #expect(t.requests.map(\.path) == ["/a"])
        c.end.close()
        #expect(loop.run(until: { t.closed == 1 }, timeoutNanoseconds: 5 * seconds))
    }

    @Test(arguments: [
        ("BROKEN / HTTP/1.1\r\n\r\n", 400, "invalid HTTP method"),  // a request line libhttp-parser refuses
        ("GET /x HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400, "invalid character in header"),
        ("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 12a\r\n\r\n", 400, "content-length"),
        ("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400, "content-length"),
        ("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n", 413, "over 1048576 bytes"),
        ("POST /x HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nContent-Length: 1\r\n\r\nx", 417, "100-continue"),
        ("GET /x HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "a", count: 90_000) + "\r\n\r\n", 431, "header"),
    ])
    func malformedRequestIsAnsweredAndClosed(request: String, status: Int, text: String) throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        var c = HTTP1RawClient(loop, t.server)
        c.send(request)
        let answer = c.run { $0.contains("HTTP/1.1 \(status) ") && $0.hasSuffix("\n") && $0.contains("\r\n\r\n") }
        #expect(answer.hasPrefix("HTTP/1.1 \(status) "))
        #expect(answer.contains("Connection: close\r\n"))
        #expect(answer.contains(text))
        #expect(t.requests.isEmpty)
        // The client hangs up after reading the answer; the server keeps nothing.
        c.end.close()
        #expect(loop.run(until: { t.closed == 1 }, timeoutNanoseconds: 5 * seconds))
        // And it goes on serving new connections.
        var d = HTTP1RawClient(loop, t.server)
        d.send(Self.post)
        #expect(HTTP1RawClient.count(200, in: d.run { HTTP1RawClient.count(200, in: $0) == 1 }) == 1)
    }

    /// A body of `size` bytes, by `Content-Length` or in two chunks.
    static func bodyRequest(_ size: Int, chunked: Bool) -> String {
        let body = String(repeating: "b", count: size)
        if !chunked { return "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: \(size)\r\n\r\n" + body }
        let first = size / 2
        return "POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + String(first, radix: 16) + "\r\n" + body.prefix(first) + "\r\n"
            + String(size - first, radix: 16) + "\r\n" + body.dropFirst(first) + "\r\n0\r\n\r\n"
    }

    @Test(arguments: [false, true])
    func theBodyBoundIsTheServersMaxRequestBodySize(chunked: Bool) throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop) { $0.maxRequestBodySize = 1000 }
        // At the bound: read whole and delivered.
        var c = HTTP1RawClient(loop, t.server)
        c.send(Self.bodyRequest(1000, chunked: chunked))
        let ok = c.run { HTTP1RawClient.count(200, in: $0) == 1 && $0.hasSuffix("POST /b 1000") }
        #expect(ok.hasSuffix("POST /b 1000"), "\(ok)")
        #expect(t.limits.isEmpty)
        // One byte over: 413, Connection: close, nothing delivered, the bound reported.
        var d = HTTP1RawClient(loop, t.server)
        d.send(Self.bodyRequest(1001, chunked: chunked))
        let over = d.run { $0.contains("\r\n\r\n") && $0.hasSuffix("\n") }
        #expect(over.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n"), "\(over)")
        #expect(over.contains("Connection: close\r\n"))
        #expect(over.hasSuffix("Payload Too Large: the request body is over 1000 bytes\n"))
        #expect(t.requests.count == 1)
        #expect(t.limits == [.requestBodySize])
        d.end.close()
        #expect(loop.run(until: { t.closed == 1 }, timeoutNanoseconds: 5 * seconds))
    }

    @Test func http2AndHTTP1KeepTheSameBodyBound() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop) { $0.maxRequestBodySize = 1000 }
        // HTTP/2 on the same server: 1000 bytes answered, 1001 reset.
        let a = rawClient(loop, t.server)
        a.send(RawFrames.hello + RawFrames.headers(1, endStream: false) + RawFrames.data(1, [UInt8](repeating: 1, count: 1000), endStream: true)
               + RawFrames.headers(3, endStream: false) + RawFrames.data(3, [UInt8](repeating: 1, count: 1001), endStream: true))
        #expect(loop.run(until: { t.http2Requests == 1 && a.resets()[3] != nil }, timeoutNanoseconds: 5 * seconds))
        #expect(a.resets() == [3: NGHTTP2_CANCEL.rawValue])
        // HTTP/1.1: the same bound.
        var c = HTTP1RawClient(loop, t.server)
        c.send(Self.bodyRequest(1001, chunked: false))
        #expect(c.run { $0.contains("413 ") }.hasPrefix("HTTP/1.1 413 "))
        #expect(t.limits == [.requestBodySize, .requestBodySize])
    }

    @Test func contentLengthShorterThanTheBodyMakesTheRestABadRequest() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        var c = HTTP1RawClient(loop, t.server)
        c.send("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{\"a\":1}")
        let text = c.run { $0.contains("400 Bad Request") && $0.hasSuffix("\n") }
        #expect(t.requests.map(\.body) == ["{\""])
        #expect(HTTP1RawClient.count(200, in: text) == 1)
        #expect(text.contains("Connection: close"))
    }

    @Test func unfinishedRequestTimesOutWith408() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop) { $0.http1RequestTimeoutMilliseconds = 100 }
        var c = HTTP1RawClient(loop, t.server)
        c.send("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        let text = c.run { $0.contains("408 Request Timeout") && $0.hasSuffix("\n") }
        #expect(text.contains("Connection: close"))
        #expect(t.requests.isEmpty)
    }

    @Test func refusalAsAnHTTP2OnlyServerIsSettingsThenGoAway() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        t.holdAnswers = true
        var c = HTTP1RawClient(loop, t.server)
        c.send("POST /3/device/ab HTTP/1.1\r\nHost: x\r\n\r\n")
        loop.run(until: { t.held.count == 1 }, timeoutNanoseconds: 5 * seconds)
        let debug = Array("Unexpected HTTP/1.x request: POST /3/device/ab ".utf8)
        debug.withUnsafeBytes { d in
            #expect(t.held[0].0.refuseAsHTTP2Only(t.held[0].1, settings: [(0x3, 1000)], debugData: d))
        }
        _ = c.run { $0.hasSuffix("ab ") }
        let settings: [UInt8] = [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0x03, 0xE8]
        let goaway: [UInt8] = [0, 0, UInt8(8 + debug.count), 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        #expect(c.received == settings + goaway + debug)
        c.end.close()
        #expect(loop.run(until: { t.closed == 1 }, timeoutNanoseconds: 5 * seconds))
    }

    @Test func firstBytesChooseTheProtocolOnOnePort() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        try t.server.listen(host: "127.0.0.1", port: 0)
        // HTTP/2 with prior knowledge on the same server (its preface), over a socket.
        let d = TestClient()
        let h2 = connectClient(loop, port: t.server.port, d)
        #expect(d.connected)
        let block = try makeBlock(path: "/h2")  // nghttp2 reads it when the HEADERS go out, after submit
        try h2.submit(block, context: 1) { w in w.setValue(0, "x") }
        #expect(loop.run(until: { d.responses == 1 }, timeoutNanoseconds: 5 * seconds))
        #expect(t.http2Requests == 1 && t.requests.isEmpty)
        // HTTP/1.1 on another connection of the same server.
        var c = HTTP1RawClient(loop, t.server)
        c.send(Self.post)
        c.run { HTTP1RawClient.count(200, in: $0) == 1 }
        #expect(t.requests.count == 1)
        #expect(t.server.connectionsOpen == 2)
        h2.close()
    }

    @Test func prefaceSplitAcrossReadsStillChoosesHTTP2() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        let d = TestClient()
        let c = connectInMemory(loop, to: t.server, d) { clientEnd, serverEnd in serverEnd.readLimit = 5 }
        #expect(d.connected)
        let block = try makeBlock(path: "/h2")
        try c.submit(block, context: 1) { w in w.setValue(0, "x") }
        #expect(loop.run(until: { d.responses == 1 }, timeoutNanoseconds: 5 * seconds))
        #expect(t.http2Requests == 1)
    }

    @Test func gracefulShutdownClosesIdleHTTP1AndAnswersWaitingOnesWithClose() throws {
        let loop = try EventLoop()
        let t = HTTP1TestServer(loop: loop)
        t.holdAnswers = true
        var idle = HTTP1RawClient(loop, t.server)
        idle.send("GET /warm HTTP/1.1\r\nHost: x\r\n\r\n")
        loop.run(until: { t.held.count == 1 }, timeoutNanoseconds: 5 * seconds)
        t.answer(t.held[0].0, t.held[0].1, "warm")
        idle.run { HTTP1RawClient.count(200, in: $0) == 1 }
        var busy = HTTP1RawClient(loop, t.server)
        busy.send("GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
        loop.run(until: { t.held.count == 2 }, timeoutNanoseconds: 5 * seconds)
        var done = false
        t.server.shutdownGracefully { done = true }
        loop.run(until: { t.closed == 1 }, timeoutNanoseconds: 5 * seconds)
        #expect(t.closed == 1 && !done)
        t.answer(t.held[1].0, t.held[1].1, "busy")
        let text = busy.run { HTTP1RawClient.count(200, in: $0) == 1 }
        #expect(text.contains("Connection: close"))
        busy.end.close()
        #expect(loop.run(until: { done }, timeoutNanoseconds: 5 * seconds))
    }
}
