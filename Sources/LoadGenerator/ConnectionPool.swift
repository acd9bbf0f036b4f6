import PushPayload
import PushTransport

/// One driver thread's connections to the target, seen by the driver as a ``RequestPort``: a request
/// goes on the next connection (round robin) with a free stream, streams capped by
/// min(--streams, the peer's SETTINGS_MAX_CONCURRENT_STREAMS) as it changes. A connection that gets
/// GOAWAY or drops is replaced by a new one; the streams it cut off come back as failures, which the
/// driver retries (`--retry`) or counts as transport errors. `Builder` makes the requests of the run's
/// protocol.
final class ConnectionPool<Builder: RequestBuilder>: DriverPool, HTTP2ClientDelegate {
    private let loop: EventLoop
    private let config: LoadConfiguration
    private unowned(unsafe) let core: DriverCore
    private let onChange: () -> Void
    /// Called after each response instead of the change callback when set: the open-loop driver uses it
    /// to send only when a request is waiting for a stream (the pacing timer sends the rest in batches).
    var onResponse: (() -> Void)?
    private let builder: Builder
    private let encoder: any PayloadEncoder
    private let inPlace: Bool
    private let clientConfig: HTTP2ClientConfiguration

    private(set) var active: [HTTP2ClientConnection] = []
    private var retired: [HTTP2ClientConnection] = []
    private var cursor = 0
    private unowned(unsafe) var preferred: HTTP2ClientConnection?
    // The connection taking the paced sends of the current pump (one pacer wakeup): every request due
    // at once goes on it while it has free streams, so they share one writev here and one read + one
    // writev at the target, instead of one each per connection. ``endBatch()`` moves on to the next
    // connection for the next wakeup, so the load still spreads evenly over the connections.
    private unowned(unsafe) var batch: HTTP2ClientConnection?
    private var reconnectTimer: LoopTimer?
    private var needsReconnect = false
    private var closing = false
    // Connections that will take no more requests (GOAWAY, closed, failed to connect): replaced by the
    // reconnect timer.
    private var dead: Set<ObjectIdentifier> = []
    // Retired connections that have closed and can be released.
    private var closed: Set<ObjectIdentifier> = []

    /// Connections that connected at the first attempt, and those that could not.
    private(set) var initialConnected = 0
    private(set) var initialFailed = 0
    private(set) var firstError: String?
    /// Connections opened, GOAWAYs, losses, failed connects, the peer's lowest stream limit.
    private(set) var stats = ConnectionStats()

    // Token pruning (`LoadConfiguration.pruneGoneTokens`): a token is added when an answer says it is gone
    // (APNs 410 Unregistered/ExpiredToken, FCM 404 UNREGISTERED) and skipped when picked. Per thread, so no
    // synchronisation; both tables are allocated once here.
    /// Tokens this thread has pruned (capacity 0 when pruning is off).
    private(set) var pruned: TokenSet
    /// Whether every token was pruned (the thread stopped sending).
    private(set) var tokensExhausted = false
    // Token index of the request in each slot (the pick may skip pruned tokens, so it is not seq mod count).
    private let slotToken: UnsafeMutablePointer<Int32>
    // Body bytes of the request in each slot, and each connection's number (in the order opened), for `--log`.
    private let slotBytes: UnsafeMutablePointer<Int32>
    private var connectionNumbers: [ObjectIdentifier: Int32] = [:]

    init(loop: EventLoop, config: LoadConfiguration, core: DriverCore, thread: Int,
         onChange: @escaping () -> Void) throws(HTTP2HeaderBlock.InvalidBlock) {
        self.loop = loop
        self.config = config
        self.core = core
        self.onChange = onChange
        builder = try Builder(config: config)
        var cc = HTTP2ClientConfiguration()
        cc.maxConcurrentStreams = config.streams
        // Each stream slot holds one whole payload; round the template's worst case up to a page.
        cc.slotBodyCapacity = max(1024, (config.template.maxLength + 4095) / 4096 * 4096)
        cc.connectTimeoutMilliseconds = config.connectTimeoutMilliseconds
        // The run needs the status and the body (the reason); not the header fields. Of the body, the
        // first bytes: an error body is a small JSON object, and a peer sending megabytes must not make
        // the client hold them.
        cc.keepsResponseHeaders = false
        cc.responseBodyLimit = ConnectionPool.responseBodyPrefix
        clientConfig = cc
        encoder = config.encoderFactory?(config.encoder, config.template) ?? makePayloadEncoder(config.encoder, template: config.template)
        inPlace = config.encoder.writesInPlace
        pruned = TokenSet(capacity: config.pruneGoneTokens ? config.tokens.count : 0)
        slotToken = .allocate(capacity: config.connections * config.streams)
        slotToken.initialize(repeating: 0, count: config.connections * config.streams)
        slotBytes = .allocate(capacity: config.connections * config.streams)
        slotBytes.initialize(repeating: 0, count: config.connections * config.streams)
    }

    deinit {
        slotToken.deallocate()
        slotBytes.deallocate()
    }

    /// Opens every connection.
    func connectAll() {
        for _ in 0..<config.connections { active.append(open()) }
        let timer = LoopTimer(loop: loop) { [unowned self] in self.reconnect() }
        reconnectTimer = timer
    }

    private func open() -> HTTP2ClientConnection {
        let c = HTTP2ClientConnection(loop: loop, configuration: clientConfig, delegate: self)
        config.connect(c)
        stats.opened += 1
        if config.requestLog != nil { connectionNumbers[ObjectIdentifier(c)] = Int32(truncatingIfNeeded: stats.opened) }
        return c
    }

    /// Replaces dead or GOAWAY'd connections (on a timer, so a target that refuses connections is not
    /// hammered in a tight loop).
    private func reconnect() {
        guard !closing else { return }
        needsReconnect = false
        // A replaced connection may be released below: never keep sending on it.
        batch = nil
        for i in active.indices where dead.contains(ObjectIdentifier(active[i])) {
            retired.append(active[i])
            active[i] = open()
        }
        retired.removeAll { c in
            let id = ObjectIdentifier(c)
            guard closed.contains(id) else { return false }
            dead.remove(id)
            closed.remove(id)
            connectionNumbers[id] = nil
            return true
        }
    }

    private func scheduleReconnect(afterMilliseconds ms: UInt64) {
        guard !closing, !needsReconnect, let reconnectTimer else { return }
        needsReconnect = true
        reconnectTimer.start(afterMilliseconds: ms)
    }

    /// Provider tokens this pool's builder signed after the first.
    var providerTokenRefreshes: Int { builder.providerTokenRefreshes }

    /// Connections that are connected now.
    var connectedCount: Int { active.reduce(0) { $0 + ($1.isConnected ? 1 : 0) } }

    // MARK: RequestPort

    func startRequest(slot: Int32, sequence: Int64, at now: UInt64) -> StartResult {
        let n = active.count
        var c: HTTP2ClientConnection?
        // A stream freed by a response is refilled on the same connection, as h2load does: the new
        // request joins the write batch of the connection being read, one writev instead of several.
        if let p = preferred, p.availableStreams > 0 { c = p }
        else if let b = batch, b.availableStreams > 0 { c = b }
        if c == nil { for _ in 0..<n {
            let candidate = active[cursor]
            cursor += 1
            if cursor == n { cursor = 0 }
            if candidate.availableStreams > 0 { c = candidate; batch = candidate; break }
        } }
        guard let c else { return .noStream }
        var tokenIndex = config.tokenIndex(sequence: sequence)
        if pruned.count > 0 {
            // Every token gone: the core was stopped when the last one was pruned; nothing to send to.
            guard !pruned.isFull else { return .noStream }
            tokenIndex = pruned.nextAbsent(from: tokenIndex)
        }
        slotToken[Int(slot)] = Int32(truncatingIfNeeded: tokenIndex)
        let ctx = config.requestContext(sequence: sequence, tokenIndex: tokenIndex)
        let length = config.template.encodedLength(ctx)
        slotBytes[Int(slot)] = Int32(truncatingIfNeeded: length)
        if length > clientConfig.slotBodyCapacity || (!config.sendOversize && length > config.payloadLimit) {
            return .oversize
        }
        builder.willBuild(at: now)
        do {
            // The closure reads self's constant properties in place: a local copy of the builder (a struct
            // of references) would retain and release each of them per request.
            try c.submit(builder.block, context: UInt64(slot), submittedAt: now) { req in
                self.builder.fill(&req, tokenIndex: tokenIndex, context: ctx, encoder: self.encoder, inPlace: self.inPlace)
            }
        } catch {
            switch error {
            case .noStreamAvailable, .notConnected: return .noStream
            // The length was checked above, so the slot was big enough: the encoder failed to write.
            case .bodyTooLarge: return .failed(.encodeFailed)
            case .missingValue, .nghttp2: return .failed(.submitFailed)
            }
        }
        return .started
    }

    /// Ends the current send batch: the next paced sends start on the next connection (round robin).
    @inline(__always)
    func endBatch() { batch = nil }

    // MARK: HTTP2ClientDelegate

    func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings) {
        if stats.opened <= config.connections { initialConnected += 1 }
        if let t = connection.tls {
            stats.recordHandshake(t)
        }
        notePeer(peerSettings)
        onChange()
    }

    func connection(_ connection: HTTP2ClientConnection, didFailToConnect error: TransportError) {
        stats.connectFailures += 1
        dead.insert(ObjectIdentifier(connection))
        closed.insert(ObjectIdentifier(connection))
        if stats.opened <= config.connections && initialConnected + initialFailed < config.connections {
            initialFailed += 1
            if firstError == nil { firstError = config.describeConnectFailure(error) }
        }
        scheduleReconnect(afterMilliseconds: 100)
    }

    func connection(_ connection: HTTP2ClientConnection, didUpdatePeerSettings settings: HTTP2Settings) {
        notePeer(settings)
        onChange()
    }

    func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway goAway: HTTP2GoAway) {
        stats.goaways += 1
        dead.insert(ObjectIdentifier(connection))
        scheduleReconnect(afterMilliseconds: 1)
    }

    /// Response body bytes kept per stream.
    static var responseBodyPrefix: Int { 4096 }

    func connection(_ connection: HTTP2ClientConnection, didReceive response: HTTP2Response) {
        let whole = response.bodyLength == response.body.count
        if !whole { stats.truncatedBodies += 1 }
        let reason = response.status >= 300 && response.body.count > 0 ? Reasons.index(inBody: response.body, complete: whole) : 0
        let slot = Int32(truncatingIfNeeded: response.context)
        if pruned.capacity > 0 && Reasons.meansTokenGone(status: response.status, reason: reason) {
            pruneToken(Int(slotToken[Int(slot)]))
        }
        if core.requestLog != nil {
            core.responded(slot: slot, status: response.status, reason: reason, at: response.timing.completed,
                           detail: ResponseDetail(connection: connectionNumbers[ObjectIdentifier(connection)] ?? 0, stream: response.streamID,
                                                  tokenIndex: slotToken[Int(slot)], requestBytes: slotBytes[Int(slot)],
                                                  responseBytes: Int32(truncatingIfNeeded: response.bodyLength)))
        } else {
            core.responded(slot: slot, status: response.status, reason: reason, at: response.timing.completed)
        }
        preferred = connection
        if let onResponse { onResponse() } else { onChange() }
        preferred = nil
    }

    func connection(_ connection: HTTP2ClientConnection, streamDidFail failure: HTTP2StreamFailure) {
        let cause: TransportErrorCause
        switch failure.reason {
        case .reset(let code): cause = .reset(code: code)
        case .refused: cause = .refused
        case .goAway: cause = .goAway
        case .connectionLost: cause = .connectionLost
        case .protocolError: cause = .protocolError
        case .notSent: cause = .notSent
        }
        core.failed(slot: Int32(truncatingIfNeeded: failure.context), cause: cause)
        onChange()
    }

    func connectionDidClose(_ connection: HTTP2ClientConnection, error: TransportError) {
        if error.kind != .closedLocally { stats.lost += 1 }
        dead.insert(ObjectIdentifier(connection))
        closed.insert(ObjectIdentifier(connection))
        scheduleReconnect(afterMilliseconds: 1)
    }

    /// Marks token `index` gone; when it was the last one, stops the core (the run ends, results kept).
    private func pruneToken(_ index: Int) {
        guard pruned.insert(index) else { return }
        if pruned.isFull && !tokensExhausted {
            tokensExhausted = true
            core.stop()
        }
    }

    private func notePeer(_ s: HTTP2Settings) {
        stats.peerMaxStreams = s.maxConcurrentStreams
    }

    /// ``stats`` with the peer stream limit in force now: the lowest of the connected connections'.
    var finalStats: ConnectionStats {
        var s = stats
        if let limit = active.lazy.filter(\.isConnected).map(\.peerMaxConcurrentStreams).min() { s.peerMaxStreams = limit }
        return s
    }

    /// Drops the connections and the timer (after ``closeAll()``), so they are gone before the loop closes.
    func release() {
        closeAll()
        active.removeAll()
        retired.removeAll()
        reconnectTimer = nil
    }

    /// Closes every connection without reporting anything more to the driver (its books are closed).
    func closeAll() {
        closing = true
        reconnectTimer?.stop()
        for c in active + retired {
            c.delegate = nil
            c.close()
        }
    }
}
