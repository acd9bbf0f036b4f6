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
    var onResponse: (() -> Void)?
    private let encoder: any PayloadEncoder
    private let clientConfig: HTTP1ClientConfiguration
    private let path: String
    /// The request head, rebuilt when the access token changes (a connection holds the one its request
    /// in flight was written with).
    private var head: HTTP1RequestHead
    private var headGeneration: UInt64 = 0

    private(set) var active: [HTTP1ClientConnection] = []
    private var retired: [HTTP1ClientConnection] = []
    private var cursor = 0
    private unowned(unsafe) var preferred: HTTP1ClientConnection?
    private var reconnectTimer: LoopTimer?
    private var needsReconnect = false
    private var closing = false
    private var dead: Set<ObjectIdentifier> = []

    private(set) var initialConnected = 0
    private(set) var initialFailed = 0
    private(set) var firstError: String?
    private(set) var stats = ConnectionStats()
    private(set) var pruned: TokenSet
    private(set) var tokensExhausted = false
    private let slotToken: UnsafeMutablePointer<Int32>
    // Body bytes of the request in each slot, and each connection's number (in the order opened), for `--log`.
    private let slotBytes: UnsafeMutablePointer<Int32>
    private var connectionNumbers: [ObjectIdentifier: Int32] = [:]

    init(loop: EventLoop, config: LoadConfiguration, core: DriverCore, thread: Int, onChange: @escaping () -> Void) throws {
        self.loop = loop
        self.config = config
        self.core = core
        self.onChange = onChange
        var cc = HTTP1ClientConfiguration()
        cc.bodyCapacity = max(1024, (config.template.maxLength + 4095) / 4096 * 4096)
        cc.connectTimeoutMilliseconds = config.connectTimeoutMilliseconds
        cc.keepsResponseHeaders = false
        clientConfig = cc
        encoder = config.encoderFactory?(config.encoder, config.template) ?? makePayloadEncoder(config.encoder, template: config.template)
        pruned = TokenSet(capacity: config.pruneGoneTokens ? config.tokens.count : 0)
        slotToken = .allocate(capacity: config.connections * max(config.streams, 1))
        slotToken.initialize(repeating: 0, count: config.connections * max(config.streams, 1))
        slotBytes = .allocate(capacity: config.connections * max(config.streams, 1))
        slotBytes.initialize(repeating: 0, count: config.connections * max(config.streams, 1))
        path = config.frontDoor?.path ?? "/v1/projects/\(config.project)/messages:send"
        let (token, generation) = config.accessTokens?.current() ?? ("pushbench", 0)
        head = try Self.makeHead(config, path: path, token: token)
        headGeneration = generation
    }

    deinit {
        slotToken.deallocate()
        slotBytes.deallocate()
    }

    private static func makeHead(_ config: LoadConfiguration, path: String, token: String) throws -> HTTP1RequestHead {
        if let door = config.frontDoor {
            return try HTTP1RequestHead(method: door.method, path: path, host: config.authority, headers: door.headers.map { ($0.name, $0.value) })
        }
        return try HTTP1RequestHead(path: path, host: config.authority,
                             headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")])
    }

    func connectAll() {
        for _ in 0..<config.connections { active.append(open()) }
        reconnectTimer = LoopTimer(loop: loop) { [unowned self] in self.reconnect() }
    }

    private func open() -> HTTP1ClientConnection {
        let c = HTTP1ClientConnection(loop: loop, configuration: clientConfig, delegate: self)
        config.connect(c)
        stats.opened += 1
        if config.requestLog != nil { connectionNumbers[ObjectIdentifier(c)] = Int32(truncatingIfNeeded: stats.opened) }
        return c
    }

    private func reconnect() {
        guard !closing else { return }
        needsReconnect = false
        for i in active.indices where dead.contains(ObjectIdentifier(active[i])) {
            dead.remove(ObjectIdentifier(active[i]))
            retired.append(active[i])
            active[i] = open()
        }
        // Closed connections report nothing more; keep the last few only until the loop has moved on.
        if retired.count > 64 {
            for c in retired.prefix(retired.count - 64) { connectionNumbers[ObjectIdentifier(c)] = nil }
            retired.removeFirst(retired.count - 64)
        }
    }

    private func scheduleReconnect(afterMilliseconds ms: UInt64) {
        guard !closing, !needsReconnect, let reconnectTimer else { return }
        needsReconnect = true
        reconnectTimer.start(afterMilliseconds: ms)
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
        if c == nil {
            let n = active.count
            for _ in 0..<n {
                let candidate = active[cursor]
                cursor += 1
                if cursor == n { cursor = 0 }
                if candidate.isIdle { c = candidate; break }
            }
        }
        guard let c else { return .noStream }
        var tokenIndex = config.tokenIndex(sequence: sequence)
        if pruned.count > 0 {
            guard !pruned.isFull else { return .noStream }
            tokenIndex = pruned.nextAbsent(from: tokenIndex)
        }
        slotToken[Int(slot)] = Int32(truncatingIfNeeded: tokenIndex)
        let ctx = config.requestContext(sequence: sequence, tokenIndex: tokenIndex)
        let length = config.template.encodedLength(ctx)
        slotBytes[Int(slot)] = Int32(truncatingIfNeeded: length)
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
        if stats.opened <= config.connections { initialConnected += 1 }
        if let t = connection.tls { stats.recordHandshake(t) }
        stats.peerMaxStreams = 1
        onChange()
    }

    func connection(_ connection: HTTP1ClientConnection, didFailToConnect error: TransportError) {
        stats.connectFailures += 1
        dead.insert(ObjectIdentifier(connection))
        if stats.opened <= config.connections && initialConnected + initialFailed < config.connections {
            initialFailed += 1
            if firstError == nil { firstError = config.describeConnectFailure(error) }
        }
        scheduleReconnect(afterMilliseconds: 100)
    }

    func connection(_ connection: HTTP1ClientConnection, didReceive response: HTTP1Response) {
        let reason = response.status >= 300 && response.body.count > 0 ? Reasons.index(inBody: response.body) : 0
        let slot = Int32(truncatingIfNeeded: response.context)
        if pruned.capacity > 0 && Reasons.meansTokenGone(status: response.status, reason: reason) {
            pruneToken(Int(slotToken[Int(slot)]))
        }
        if core.requestLog != nil {
            core.responded(slot: slot, status: response.status, reason: reason, at: response.completedAt,
                           detail: ResponseDetail(connection: connectionNumbers[ObjectIdentifier(connection)] ?? 0,
                                                  tokenIndex: slotToken[Int(slot)], requestBytes: slotBytes[Int(slot)],
                                                  responseBytes: Int32(truncatingIfNeeded: response.body.count)))
        } else {
            core.responded(slot: slot, status: response.status, reason: reason, at: response.completedAt)
        }
        preferred = connection
        if let onResponse { onResponse() } else { onChange() }
        preferred = nil
    }

    func connection(_ connection: HTTP1ClientConnection, requestDidFail context: UInt64, error: TransportError) {
        core.failed(slot: Int32(truncatingIfNeeded: context), cause: .connectionLost)
        onChange()
    }

    func connectionDidClose(_ connection: HTTP1ClientConnection, error: TransportError) {
        if error.kind != .closedLocally { stats.lost += 1 }
        dead.insert(ObjectIdentifier(connection))
        scheduleReconnect(afterMilliseconds: 1)
    }

    private func pruneToken(_ index: Int) {
        guard pruned.insert(index) else { return }
        if pruned.isFull && !tokensExhausted {
            tokensExhausted = true
            core.stop()
        }
    }

    func release() {
        closeAll()
        active.removeAll()
        retired.removeAll()
        reconnectTimer = nil
    }

    func closeAll() {
        closing = true
        reconnectTimer?.stop()
        for c in active + retired {
            c.delegate = nil
            c.close()
        }
    }
}
