import PushPayload
import PushTransport

/// One driver thread's HTTP/1.1 connections to the target (`--http1`, FCM only): keep-alive connections
/// with one request in flight each, so `--connections` is the concurrency. A request goes on the
/// connection that just answered if it is free, else on the next idle one (round robin). A connection
/// closed by the peer (`Connection: close`, a drop) is replaced; the request it cut off comes back as a
/// failure the driver retries (`--retry`) or counts. The body is encoded straight into the connection's
/// buffer and goes out with the prebuilt head in one write.
final class HTTP1ConnectionPool: DriverPool, HTTP1ClientDelegate {
    private let loop: EventLoop
    private let config: LoadConfiguration
    private unowned(unsafe) let core: DriverCore
    private let onChange: () -> Void
    /// Called after each response: the `onResponse` given at init, else the change callback.
    // A non-optional constant: an optional or var closure is copied (its context retained and
    // released) on every call.
    private let onResponse: () -> Void
    private let encoder: any PayloadEncoder
    private let clientConfig: HTTP1ClientConfiguration
    private let path: String
    /// The request head, rebuilt when the access token changes (a connection holds the one its request
    /// in flight was written with).
    private var head: HTTP1RequestHead
    private var headGeneration: UInt64 = 0

    /// The connections, their replacement, counters and pruned tokens (shared with the HTTP/2 pool).
    let connections: PooledConnections<HTTP1ClientConnection>

    /// Connections connected now.
    var connectedCount: Int { connections.connectedCount }
    private unowned(unsafe) var preferred: HTTP1ClientConnection?

    var initialConnected: Int { connections.initialConnected }
    var initialFailed: Int { connections.initialFailed }
    var firstError: String? { connections.firstError }
    var stats: ConnectionStats { connections.stats }
    var pruned: TokenSet { connections.pruned }
    var tokensExhausted: Bool { connections.tokensExhausted }

    init(loop: EventLoop, config: LoadConfiguration, core: DriverCore, thread: Int, onResponse: (() -> Void)? = nil,
         onChange: @escaping () -> Void) throws {
        self.loop = loop
        self.config = config
        self.core = core
        self.onChange = onChange
        self.onResponse = onResponse ?? onChange
        var cc = HTTP1ClientConfiguration()
        cc.bodyCapacity = max(1024, (config.template.maxLength + 4095) / 4096 * 4096)
        cc.connectTimeoutMilliseconds = config.connectTimeoutMilliseconds
        cc.keepsResponseHeaders = false
        clientConfig = cc
        encoder = config.encoderFactory?(config.encoder, config.template) ?? makePayloadEncoder(config.encoder, template: config.template)
        connections = PooledConnections(config: config, driver: core, slots: config.connections * max(config.streams, 1))
        path = config.frontDoor?.path ?? "/v1/projects/\(config.project)/messages:send"
        let (token, generation) = config.accessTokens?.current() ?? ("pushbench", 0)
        head = try Self.makeHead(config, path: path, token: token)
        headGeneration = generation
    }

    private static func makeHead(_ config: LoadConfiguration, path: String, token: String) throws -> HTTP1RequestHead {
        if let door = config.frontDoor {
            return try HTTP1RequestHead(method: door.method, path: path, host: config.authority, headers: door.headers.map { ($0.name, $0.value) })
        }
        return try HTTP1RequestHead(path: path, host: config.authority,
                             headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")])
    }

    func connectAll() {
        connections.connectAll(loop: loop, open: open) { [unowned self] in self.connections.reconnect(open: self.open) }
    }

    private func open() -> HTTP1ClientConnection {
        HTTP1ClientConnection(loop: loop, configuration: clientConfig, delegate: self)
    }

    /// A new access token since the head was built: build it again (once per refresh, off the request path's
    /// steady state).
    @inline(__always) private func refreshHead() {
        guard let source = config.accessTokens, source.generation != headGeneration else { return }
        let (token, generation) = source.current()
        guard let h = try? Self.makeHead(config, path: path, token: token) else { return }
        head = h
        headGeneration = generation
    }

    // MARK: RequestPort

    func startRequest(slot: Int32, sequence: Int64, at now: UInt64) -> StartResult {
        var c: HTTP1ClientConnection?
        if let p = preferred, p.isIdle { c = p }
        else { c = connections.next(where: { $0.isIdle }) }
        guard let c else { return .noStream }
        guard let tokenIndex = connections.token(sequence: sequence, slot: slot) else { return .noStream }
        let ctx = config.requestContext(sequence: sequence, tokenIndex: tokenIndex)
        let length = config.template.encodedLength(ctx)
        connections.sent(slot: slot, bytes: length)
        if length > clientConfig.bodyCapacity || (!config.sendOversize && length > config.payloadLimit) { return .oversize }
        refreshHead()
        let encoder = self.encoder
        do {
            try c.submit(head, context: UInt64(slot), submittedAt: now) { body in encoder.encode(ctx, into: body) ?? -1 }
        } catch {
            switch error {
            case .busy: return .noStream
            case .bodyTooLarge: return .failed(.encodeFailed)
            }
        }
        return .started
    }

    @inline(__always) func endBatch() {}

    /// Provider tokens are APNs's; FCM over HTTP/1.1 carries an access token.
    var providerTokenRefreshes: Int { 0 }

    // MARK: HTTP1ClientDelegate

    func connectionDidConnect(_ connection: HTTP1ClientConnection) {
        connections.connected(connection)
        connections.stats.peerMaxStreams = 1
        onChange()
    }

    func connection(_ connection: HTTP1ClientConnection, didFailToConnect error: TransportError) {
        connections.failedToConnect(connection, error)
    }

    func connection(_ connection: HTTP1ClientConnection, didReceive response: HTTP1Response) {
        let reason = response.status >= 300 && response.body.count > 0 ? Reasons.index(inBody: response.body) : 0
        let slot = Int32(truncatingIfNeeded: response.context)
        connections.answered(slot: slot, status: response.status, reason: reason)
        if core.requestLog != nil {
            core.responded(slot: slot, status: response.status, reason: reason, at: response.completedAt,
                           detail: connections.detail(slot: slot, connection: connection, responseBytes: response.body.count,
                                                      status: response.status, body: response.body))
        } else {
            core.responded(slot: slot, status: response.status, reason: reason, at: response.completedAt)
        }
        preferred = connection
        onResponse()
        preferred = nil
    }

    func connection(_ connection: HTTP1ClientConnection, requestDidFail context: UInt64, error: TransportError) {
        core.failed(slot: Int32(truncatingIfNeeded: context), cause: .connectionLost)
        onChange()
    }

    func connectionDidClose(_ connection: HTTP1ClientConnection, error: TransportError) {
        connections.didClose(connection, error)
    }

    func release() { connections.release() }

    func closeAll() { connections.closeAll() }
}
