import CNGHTTP2
@testable import PushTransport

/// Server delegate for tests: records requests, answers 200 echoing a digest of the body, or defers.
final class TestServer: HTTP2ServerDelegate {
    let server: HTTP2Server
    var requests = 0
    var lastBody: [UInt8] = []
    var recordBodies = false
    var bodies: [[UInt8]] = []
    var deferResponses = false
    var deferred: [(HTTP2ServerConnection, Int32)] = []
    var closedStreams = 0
    var opened = 0
    var closed = 0
    var responseBody: [UInt8] = Array("{\"ok\":true}".utf8)
    /// Each request's fields as "name: value": its pseudo-header fields (sorted), then the rest in order.
    var recordFields = false
    var fieldLists: [[String]] = []

    /// A server on `loop`; it listens on a free loopback port unless `listening` is false (in-memory
    /// connections only, see `connectInMemory`).
    init(loop: EventLoop, configuration: HTTP2ServerConfiguration = HTTP2ServerConfiguration(), listening: Bool = true) throws {
        server = HTTP2Server(loop: loop, configuration: configuration, delegate: nil)
        server.delegate = self
        if listening { try server.listen(host: "127.0.0.1", port: 0) }
    }

    var port: Int { server.port }

    func server(_ server: HTTP2Server, didReceive request: HTTP2ServerRequest) {
        requests += 1
        if recordBodies { bodies.append(Array(request.body)) }
        if recordFields {
            func text(_ b: UnsafeRawBufferPointer) -> String { String(decoding: b, as: UTF8.self) }
            var pseudo: [String] = []
            for (name, value) in [(":method", request.method), (":path", request.path), (":authority", request.authority),
                                  (":scheme", request.scheme)] where value.count > 0 {
                pseudo.append("\(name): \(text(value))")
            }
            var list = pseudo.sorted()
            for i in 0..<request.headers.count { list.append("\(text(request.headers[i].name)): \(text(request.headers[i].value))") }
            fieldLists.append(list)
        }
        if deferResponses {
            deferred.append((request.connection, request.streamID))
            return
        }
        respond(request.connection, request.streamID, bodyLength: request.body.count)
    }

    func respond(_ c: HTTP2ServerConnection, _ id: Int32, bodyLength: Int = 0) {
        responseBody.withUnsafeBytes { b in
            _ = c.respond(to: id, status: 200, body: b) { h in
                h.add("content-type", "application/json")
                h.add("x-body-length", String(bodyLength))
                if let sni = c.tls?.serverName { h.add("x-sni", sni) }
                if let v = c.tls?.version { h.add("x-tls-version", v) }
            }
        }
    }

    /// HTTP/1.1 requests (servers with `servesHTTP1`) get the same answer.
    func server(_ server: HTTP2Server, didReceive request: HTTP1ServerRequest) {
        requests += 1
        responseBody.withUnsafeBytes { b in
            _ = request.connection.respond(to: request.sequence, status: 200, body: b) { h in
                h.add("content-type", "application/json")
                h.add("x-body-length", String(request.body.count))
            }
        }
    }

    func server(_ server: HTTP2Server, connectionDidOpen connection: HTTP2ServerConnection) { opened += 1 }
    func server(_ server: HTTP2Server, connectionDidClose connection: HTTP2ServerConnection, error: TransportError) { closed += 1 }
    func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, streamDidClose streamID: Int32, errorCode: UInt32) {
        closedStreams += 1
    }
    /// Limits the server enforced, in order.
    var limits: [ServerLimit] = []
    func server(_ server: HTTP2Server, connection: HTTP2ServerConnection?, didEnforce limit: ServerLimit) { limits.append(limit) }
}

/// Client delegate for tests: counts events.
final class TestClient: HTTP2ClientDelegate {
    var connected = false
    var connectError: TransportError?
    var closeError: TransportError?
    var closed = false
    var responses = 0
    var statuses: [Int: Int] = [:]
    var failures: [HTTP2StreamFailure] = []
    var goAways: [HTTP2GoAway] = []
    var settingsUpdates: [HTTP2Settings] = []
    var lastBody: [UInt8] = []
    var lastHeaderLength: String?
    var contexts: Set<UInt64> = []
    var onResponse: ((HTTP2ClientConnection, HTTP2Response) -> Void)?

    func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings) { connected = true }
    func connection(_ connection: HTTP2ClientConnection, didFailToConnect error: TransportError) { connectError = error }
    func connection(_ connection: HTTP2ClientConnection, didUpdatePeerSettings settings: HTTP2Settings) {
        settingsUpdates.append(settings)
    }
    func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway goAway: HTTP2GoAway) { goAways.append(goAway) }
    func connection(_ connection: HTTP2ClientConnection, didReceive response: HTTP2Response) {
        responses += 1
        statuses[response.status, default: 0] += 1
        lastBody = Array(response.body)
        lastHeaderLength = response.headers.first(named: "x-body-length")?.pbString
        contexts.insert(response.context)
        onResponse?(connection, response)
    }
    func connection(_ connection: HTTP2ClientConnection, streamDidFail failure: HTTP2StreamFailure) { failures.append(failure) }
    func connectionDidClose(_ connection: HTTP2ClientConnection, error: TransportError) {
        closed = true
        closeError = error
    }
}

let seconds: UInt64 = 1_000_000_000

func makeBlock(path: String? = nil) throws -> HTTP2HeaderBlock {
    try HTTP2HeaderBlock.request(authority: "localhost", path: path, headers: [("content-type", "application/json")],
                                 perRequestHeaders: ["apns-id"])
}

/// Connects a client to `server` over an in-memory pair (no socket) and runs the loop until connected.
/// `tune` may set the ends' `readLimit` and `bufferLimit` first.
func connectInMemory(_ loop: EventLoop, to server: HTTP2Server, _ d: TestClient,
                     configuration: HTTP2ClientConfiguration = HTTP2ClientConfiguration(),
                     tune: (_ clientEnd: InMemoryTransport, _ serverEnd: InMemoryTransport) -> Void = { _, _ in })
    -> HTTP2ClientConnection {
    let (clientEnd, serverEnd) = InMemoryTransport.pair(loop: loop)
    tune(clientEnd, serverEnd)
    server.accept(serverEnd)
    let c = HTTP2ClientConnection(loop: loop, configuration: configuration, delegate: d)
    c.connect(over: clientEnd)
    loop.run(until: { d.connected || d.connectError != nil }, timeoutNanoseconds: 10 * seconds)
    return c
}

/// How a test's client reaches its server.
enum Wire: CaseIterable, Sendable {
    /// An `InMemoryTransport` pair: one thread, no socket.
    case memory
    /// TCP over loopback.
    case tcp
}

/// Connects a client to `server` over `wire` and runs the loop until connected.
func connect(_ loop: EventLoop, to server: TestServer, _ d: TestClient, over wire: Wire,
             configuration: HTTP2ClientConfiguration = HTTP2ClientConfiguration()) -> HTTP2ClientConnection {
    switch wire {
    case .memory: connectInMemory(loop, to: server.server, d, configuration: configuration)
    case .tcp: connectClient(loop, port: server.port, d, configuration: configuration)
    }
}

/// Connects a client to `port` on `loop` and runs the loop until connected (or fails the expectation).
func connectClient(_ loop: EventLoop, port: Int, _ d: TestClient,
                   configuration: HTTP2ClientConfiguration = HTTP2ClientConfiguration()) -> HTTP2ClientConnection {
    let c = HTTP2ClientConnection(loop: loop, configuration: configuration, delegate: d)
    c.connect(host: "127.0.0.1", port: port)
    loop.run(until: { d.connected || d.connectError != nil }, timeoutNanoseconds: 10 * seconds)
    return c
}
