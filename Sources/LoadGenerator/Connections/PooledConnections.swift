import PushTransport

/// A client connection a pool keeps: HTTP/2 or HTTP/1.1, whose reports the pool can stop before it
/// closes it.
protocol PoolConnection: TargetConnection {
    /// What the TLS handshake settled, once connected over TLS.
    var tls: TLSConnectionInfo? { get }
    /// Whether the connection is connected now.
    var isConnected: Bool { get }
    /// Closes the connection without reporting anything more to its delegate.
    func closeSilently()
}

extension HTTP2ClientConnection: PoolConnection {
    func closeSilently() {
        delegate = nil
        close()
    }
}

extension HTTP1ClientConnection: PoolConnection {
    func closeSilently() {
        delegate = nil
        close()
    }
}

/// The bookkeeping both connection pools share, whatever protocol their connections speak: the
/// connections in use and the cursor that takes them in turn, the ones retired and not yet closed,
/// the timer that replaces dead ones, the first attempt's outcome, the counters, and the tokens pruned
/// as gone. A pool holds one and adds what its protocol needs: how to open a connection, which one is
/// free, how a request is written. A class, not a struct in the pool, because a connection may report
/// back (a failed connect) while the pool is opening it.
///
/// Replacing: a connection that takes no more requests (GOAWAY, closed, failed to connect) is marked
/// dead and replaced when the reconnect timer fires (never in a tight loop against a target that
/// refuses). The replaced connection is retired; it is released once it has closed, so a connection
/// finishing its streams after GOAWAY stays alive until it is done, and a closed one is never kept.
final class PooledConnections<Connection: PoolConnection> {
    let config: LoadConfiguration
    private unowned(unsafe) let driver: DriverCore

    /// The connections requests go on, `config.connections` of them.
    private(set) var active: [Connection] = []

    /// Connections connected now.
    var connectedCount: Int { active.reduce(0) { $0 + ($1.isConnected ? 1 : 0) } }
    /// Replaced connections that have not closed yet.
    private var retired: [Connection] = []
    /// How many replaced connections are kept because they have not closed.
    var retiredCount: Int { retired.count }
    private var cursor = 0
    private var reconnectTimer: LoopTimer?
    private var needsReconnect = false
    private(set) var closing = false
    /// Connections that will take no more requests: replaced by the reconnect timer.
    private var dead: Set<ObjectIdentifier> = []
    /// Connections that have closed: released once replaced.
    private var closed: Set<ObjectIdentifier> = []

    /// Connections that connected at the first attempt, those that could not, and the first error.
    private(set) var initialConnected = 0
    private(set) var initialFailed = 0
    private(set) var firstError: String?
    /// Connections opened, GOAWAYs, losses, failed connects, the peer's lowest stream limit.
    var stats = ConnectionStats()

    // Token pruning (`LoadConfiguration.pruneGoneTokens`): a token is added when an answer says it is gone
    // (APNs 410 Unregistered/ExpiredToken, FCM 404 UNREGISTERED) and skipped when picked. Per thread, so no
    // synchronisation; both tables are allocated once here.
    /// Tokens this thread has pruned (capacity 0 when pruning is off).
    private(set) var pruned: TokenSet
    /// Whether every token was pruned (the thread stopped sending).
    private(set) var tokensExhausted = false
    // Token index of the request in each slot (the pick may skip pruned tokens, so it is not seq mod count).
    private let slotToken: UnsafeMutablePointer<Int32>
    // For `--log`: body bytes of the request in each slot, and each connection's number (in the order opened).
    private let slotBytes: UnsafeMutablePointer<Int32>
    private var connectionNumbers: [ObjectIdentifier: Int32] = [:]

    init(config: LoadConfiguration, driver: DriverCore, slots: Int) {
        self.config = config
        self.driver = driver
        pruned = TokenSet(capacity: config.pruneGoneTokens ? config.tokens.count : 0)
        slotToken = .allocate(capacity: slots)
        slotToken.initialize(repeating: 0, count: slots)
        slotBytes = .allocate(capacity: slots)
        slotBytes.initialize(repeating: 0, count: slots)
    }

    deinit {
        slotToken.deallocate()
        slotBytes.deallocate()
    }

    /// Opens every connection with `open`, and makes the reconnect timer, which calls `reconnect`.
    func connectAll(loop: EventLoop, open: () -> Connection, reconnect: @escaping () -> Void) {
        for _ in 0..<config.connections { active.append(opened(open())) }
        reconnectTimer = LoopTimer(loop: loop, reconnect)
    }

    private func opened(_ c: Connection) -> Connection {
        config.connect(c)
        stats.opened += 1
        if config.requestLog != nil { connectionNumbers[ObjectIdentifier(c)] = Int32(truncatingIfNeeded: stats.opened) }
        return c
    }

    /// Replaces the dead connections with new ones from `open`, and releases the retired ones that closed.
    func reconnect(open: () -> Connection) {
        guard !closing else { return }
        needsReconnect = false
        for i in active.indices where dead.contains(ObjectIdentifier(active[i])) {
            retired.append(active[i])
            active[i] = opened(open())
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

    // MARK: the request path

    /// The next connection, in turn, that `isFree` accepts; nil when none is.
    @inline(__always)
    func next(where isFree: (Connection) -> Bool) -> Connection? {
        let n = active.count
        for _ in 0..<n {
            let candidate = active[cursor]
            cursor += 1
            if cursor == n { cursor = 0 }
            if isFree(candidate) { return candidate }
        }
        return nil
    }

    /// The token request `sequence` goes to, skipping pruned ones, remembered for `slot`; nil when every
    /// token is gone (the driver was stopped when the last one was pruned).
    @inline(__always)
    func token(sequence: Int64, slot: Int32) -> Int? {
        var tokenIndex = config.tokenIndex(sequence: sequence)
        if pruned.count > 0 {
            guard !pruned.isFull else { return nil }
            tokenIndex = pruned.nextAbsent(from: tokenIndex)
        }
        slotToken[Int(slot)] = Int32(truncatingIfNeeded: tokenIndex)
        return tokenIndex
    }

    /// Remembers the body length of `slot`'s request, for the request log.
    @inline(__always)
    func sent(slot: Int32, bytes: Int) { slotBytes[Int(slot)] = Int32(truncatingIfNeeded: bytes) }

    /// What the request log keeps of `slot`'s answer on `c`.
    func detail(slot: Int32, connection c: Connection, stream: Int32 = 0, responseBytes: Int) -> ResponseDetail {
        ResponseDetail(connection: connectionNumbers[ObjectIdentifier(c)] ?? 0, stream: stream, tokenIndex: slotToken[Int(slot)],
                       requestBytes: slotBytes[Int(slot)], responseBytes: Int32(truncatingIfNeeded: responseBytes))
    }

    /// Prunes the token of `slot`'s request when its answer says the token is gone; when that was the
    /// last token, stops the driver (the run ends, results kept).
    @inline(__always)
    func answered(slot: Int32, status: Int, reason: Int) {
        guard pruned.capacity > 0 && Reasons.meansTokenGone(status: status, reason: reason) else { return }
        guard pruned.insert(Int(slotToken[Int(slot)])) else { return }
        if pruned.isFull && !tokensExhausted {
            tokensExhausted = true
            driver.stop()
        }
    }

    // MARK: connection events

    /// `c` connected.
    func connected(_ c: Connection) {
        if stats.opened <= config.connections { initialConnected += 1 }
        if let t = c.tls { stats.recordHandshake(t) }
    }

    /// `c` could not connect: replaced after 100 ms; on the first attempt, counted and its error kept.
    func failedToConnect(_ c: Connection, _ error: TransportError) {
        stats.connectFailures += 1
        if error.kind == .certificate {
            stats.certificateFailures += 1
            if stats.certificateProblem == nil { stats.certificateProblem = config.describeCertificateProblem(error) }
        }
        dead.insert(ObjectIdentifier(c))
        closed.insert(ObjectIdentifier(c))
        if stats.opened <= config.connections && initialConnected + initialFailed < config.connections {
            initialFailed += 1
            if firstError == nil { firstError = config.describeConnectFailure(error) }
        }
        scheduleReconnect(afterMilliseconds: 100)
    }

    /// `c` takes no new requests (GOAWAY) but finishes its own: replaced, released once closed.
    func goingAway(_ c: Connection) {
        stats.goaways += 1
        dead.insert(ObjectIdentifier(c))
        scheduleReconnect(afterMilliseconds: 1)
    }

    /// `c` closed; a close the pool did not ask for counts as lost.
    /// `endedByGoAway`: the peer said GOAWAY and answered every stream up to its last one before the
    /// close, which is then an orderly end, not a lost connection.
    func didClose(_ c: Connection, _ error: TransportError, endedByGoAway: Bool = false) {
        if error.kind != .closedLocally && !endedByGoAway { stats.lost += 1 }
        dead.insert(ObjectIdentifier(c))
        closed.insert(ObjectIdentifier(c))
        scheduleReconnect(afterMilliseconds: 1)
    }

    // MARK: the end

    /// Closes every connection without reporting anything more to the driver (its books are closed).
    func closeAll() {
        closing = true
        reconnectTimer?.stop()
        for c in active { c.closeSilently() }
        for c in retired { c.closeSilently() }
    }

    /// Drops the connections and the timer (after ``closeAll()``), so they are gone before the loop closes.
    func release() {
        closeAll()
        active.removeAll()
        retired.removeAll()
        reconnectTimer = nil
    }
}
