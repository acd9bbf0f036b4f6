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
    /// Unmanaged: the driver thread owns the core, and a strong copy would cost a retain per response.
    private let core: Unmanaged<DriverCore>
    private let onChange: () -> Void
    /// Runs the `onResponse` given at init (else the change callback) once at the end of a loop turn
    /// in which responses came, before the connections write: the streams all of the turn's responses
    /// freed are refilled in one pump (one clock reading, not one per response), and each refill joins
    /// its connection's write of that turn. The open-loop driver's callback sends only when a request
    /// is waiting for a stream (the pacing timer sends the rest in batches).
    private let refill: EndOfTurnWork
    private let builder: Builder
    private let encoder: any PayloadEncoder
    private let inPlace: Bool
    private let clientConfig: HTTP2ClientConfiguration

    /// The connections, their replacement, counters and pruned tokens (shared with the HTTP/1.1 pool).
    let connections: PooledConnections<HTTP2ClientConnection>
    // `batch` and `block` are unmanaged: the pool's connections array and the builder own them, and a
    // strong copy would cost a retain and a release per request.
    // The connection taking the paced sends of the current pump (one pacer wakeup): every request due
    // at once goes on it while it has free streams, so they share one writev here and one read + one
    // writev at the target, instead of one each per connection. ``endBatch()`` moves on to the next
    // connection for the next wakeup, so the load still spreads evenly over the connections.
    private var batch: Unmanaged<HTTP2ClientConnection>?
    private let block: Unmanaged<HTTP2HeaderBlock>

    var active: [HTTP2ClientConnection] { connections.active }
    var initialConnected: Int { connections.initialConnected }
    var initialFailed: Int { connections.initialFailed }
    var firstError: String? { connections.firstError }
    var stats: ConnectionStats { connections.stats }
    var pruned: TokenSet { connections.pruned }
    var tokensExhausted: Bool { connections.tokensExhausted }

    init(loop: EventLoop, config: LoadConfiguration, core: DriverCore, thread: Int, onResponse: (() -> Void)? = nil,
         onChange: @escaping () -> Void) throws(HTTP2HeaderBlock.InvalidBlock) {
        self.loop = loop
        self.config = config
        self.core = .passUnretained(core)
        self.onChange = onChange
        refill = EndOfTurnWork(onResponse ?? onChange)
        builder = try Builder(config: config)
        block = .passUnretained(builder.block)
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
        connections = PooledConnections(config: config, driver: core, slots: config.connections * config.streams)
    }

    /// Opens every connection.
    func connectAll() {
        connections.connectAll(loop: loop, open: open) { [unowned self] in self.reconnect() }
    }

    private func open() -> HTTP2ClientConnection {
        HTTP2ClientConnection(loop: loop, configuration: clientConfig, delegate: self)
    }

    /// Replaces dead or GOAWAY'd connections (on the pool's timer).
    private func reconnect() {
        // A replaced connection may be released: never keep sending on it.
        batch = nil
        connections.reconnect(open: open)
    }

    /// Provider tokens this pool's builder signed after the first.
    var providerTokenRefreshes: Int { builder.providerTokenRefreshes }

    /// Connections that are connected now.
    var connectedCount: Int { connections.connectedCount }

    // MARK: RequestPort

    // Specialized for each builder: the driver calls through `RequestPort`, which would otherwise run
    // the generic body, every builder call a witness call.
    @_specialize(where Builder == APNsRequestBuilder)
    @_specialize(where Builder == FCMRequestBuilder)
    func startRequest(slot: Int32, sequence: Int64, at now: UInt64) -> StartResult {
        let u: Unmanaged<HTTP2ClientConnection>
        // Streams freed by responses are refilled at the end of their loop turn (``refill``), a
        // connection at a time, so each connection's refills join its write of that turn.
        if let b = batch, b._withUnsafeGuaranteedRef({ $0.availableStreams > 0 }) { u = b }
        else if let next = connections.next(where: { $0.availableStreams > 0 }) { u = .passUnretained(next); batch = u }
        else { return .noStream }
        guard let tokenIndex = connections.token(sequence: sequence, slot: slot) else { return .noStream }
        let ctx = config.requestContext(sequence: sequence, tokenIndex: tokenIndex)
        let length = config.template.encodedLength(ctx)
        connections.sent(slot: slot, bytes: length)
        if length > clientConfig.slotBodyCapacity || (!config.sendOversize && length > config.payloadLimit) {
            return .oversize
        }
        builder.willBuild(at: now)
        return u._withUnsafeGuaranteedRef { c in
            block._withUnsafeGuaranteedRef { block in
                do throws(HTTP2SubmitError) {
                    // The closure reads self's constant properties in place: a local copy of the builder (a
                    // struct of references) would retain and release each of them per request.
                    try c.submit(block, context: UInt64(slot), submittedAt: now) { req in
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
        }
    }

    /// Ends the current send batch: the next paced sends start on the next connection (round robin).
    @inline(__always)
    func endBatch() { batch = nil }

    // MARK: HTTP2ClientDelegate

    func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings) {
        connections.connected(connection)
        notePeer(peerSettings)
        onChange()
    }

    func connection(_ connection: HTTP2ClientConnection, didFailToConnect error: TransportError) {
        connections.failedToConnect(connection, error)
    }

    func connection(_ connection: HTTP2ClientConnection, didUpdatePeerSettings settings: HTTP2Settings) {
        notePeer(settings)
        onChange()
    }

    func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway goAway: HTTP2GoAway) {
        connections.goingAway(connection)
    }

    /// Response body bytes kept per stream.
    static var responseBodyPrefix: Int { 4096 }

    @_specialize(where Builder == APNsRequestBuilder)
    @_specialize(where Builder == FCMRequestBuilder)
    func connection(_ connection: HTTP2ClientConnection, didReceive response: HTTP2Response) {
        let whole = response.bodyLength == response.body.count
        if !whole { connections.stats.truncatedBodies += 1 }
        let reason = response.status >= 300 && response.body.count > 0 ? Reasons.index(inBody: response.body, complete: whole) : 0
        let slot = Int32(truncatingIfNeeded: response.context)
        connections.answered(slot: slot, status: response.status, reason: reason)
        core._withUnsafeGuaranteedRef { core in
            if core.requestLog != nil {
                core.responded(slot: slot, status: response.status, reason: reason, at: response.timing.completed,
                               detail: connections.detail(slot: slot, connection: connection, stream: response.streamID,
                                                          responseBytes: response.bodyLength, status: response.status, body: response.body))
            } else {
                core.responded(slot: slot, status: response.status, reason: reason, at: response.timing.completed)
            }
        }
        loop.schedule(refill)
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
        core._withUnsafeGuaranteedRef { $0.failed(slot: Int32(truncatingIfNeeded: failure.context), cause: cause) }
        onChange()
    }

    func connectionDidClose(_ connection: HTTP2ClientConnection, error: TransportError) {
        connections.didClose(connection, error, endedByGoAway: connection.endedByGoAway)
    }

    private func notePeer(_ s: HTTP2Settings) {
        connections.stats.peerMaxStreams = s.maxConcurrentStreams
    }

    /// ``stats`` with the peer stream limit in force now: the lowest of the connected connections'.
    var finalStats: ConnectionStats {
        var s = stats
        if let limit = connections.active.lazy.filter(\.isConnected).map(\.peerMaxConcurrentStreams).min() { s.peerMaxStreams = limit }
        return s
    }

    /// Drops the connections and the timer (after ``closeAll()``), so they are gone before the loop closes.
    func release() { connections.release() }

    /// Closes every connection without reporting anything more to the driver (its books are closed).
    func closeAll() { connections.closeAll() }
}
