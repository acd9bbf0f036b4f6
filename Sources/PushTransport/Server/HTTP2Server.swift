import CNGHTTP2
import CUV
import Glibc

/// An HTTP/2 server on one `EventLoop`: h2c (prior knowledge) on cleartext, HTTP/2 over TLS when the
/// configuration has a `TLSServerContext`; with `servesHTTP1` it serves HTTP/1.1 on the same port too
/// (`HTTP1ServerConnection`).
///
/// Each accepted connection's protocol is chosen before a session starts (`ProtocolSelection`): by
/// ALPN after a TLS handshake, otherwise by the first bytes; on cleartext with HTTP/2 alone the
/// session starts at once. A connection refused there is reported to the delegate with the reason.
///
/// ```swift
/// final class OK: HTTP2ServerDelegate {
///     func server(_ s: HTTP2Server, didReceive r: HTTP2ServerRequest) { r.connection.respond(to: r.streamID, status: 200) }
/// }
/// let server = HTTP2Server(loop: loop, delegate: ok)
/// let port = try server.listen(host: "127.0.0.1", port: 0)
/// ```
public final class HTTP2Server {
    /// The loop it runs on.
    public let loop: EventLoop
    /// The configuration given at init.
    public let configuration: HTTP2ServerConfiguration
    /// Receives requests and connection events; held unowned: it must outlive the server, or be set
    /// to nil first.
    // Not weak: a weak reference gives its object a side table, and every retain and release of it
    // (once per request here) then takes the runtime's slow path.
    public unowned var delegate: HTTP2ServerDelegate? {
        didSet { requestDelegate = delegate }
    }
    /// `delegate` for the per-request call: reading an `unowned` reference checks and takes a strong
    /// reference each time, this one touches no count. The same object, with the same lifetime rule.
    unowned(unsafe) var requestDelegate: HTTP2ServerDelegate?
    private var listener: UnsafeMutablePointer<uv_tcp_t>?
    private var connections: [UInt64: HTTP2ServerConnection] = [:]
    private var http1Connections: [UInt64: HTTP1ServerConnection] = [:]
    /// Accepted connections whose protocol is not chosen yet (TLS handshake, first bytes).
    private var pending: [ObjectIdentifier: PendingServerConnection] = [:]
    /// Where connections that chose HTTP/1.1 go; nil refuses them (HTTP/2 only).
    var http1: ServerSessionStarter?
    /// The same connections in an array the timeout sweep walks by index (no allocation per sweep);
    /// each connection knows its position.
    private var sweepList: [HTTP2ServerConnection] = []
    private var sweepTimer: LoopTimer?
    /// Connections closed since memory was last given back to the system (see `sweep`).
    private var closedSinceTrim = 0
    /// Idle TLS connections whose record buffers were given back since the last trim (see `sweep`).
    var idleBuffersReleased = 0
    private var lastTrim: UInt64 = 0
    /// Request body bytes held by every connection of this server (``ServerLimits/maxBodyMemory``).
    var bodyBytesHeld = 0
    private var nextID: UInt64 = 0
    private var shutdownDone: (() -> Void)?
    private var shuttingDown = false
    /// The port bound by `listen` (0 before).
    public private(set) var port = 0
    /// Bytes received on all connections so far.
    public internal(set) var bytesIn: UInt64 = 0
    /// Requests received (complete) so far.
    public internal(set) var requestsReceived: UInt64 = 0
    /// Connections accepted so far.
    public private(set) var connectionsTotal: UInt64 = 0
    /// Connections open now (HTTP/2 and HTTP/1.1).
    public var connectionsOpen: Int { connections.count + http1Connections.count }
    /// HTTP/1.1 connections open now.
    var http1ConnectionsOpen: Int { http1Connections.count }
    /// Connections refused before a session started (no protocol this server speaks, a failed TLS
    /// handshake, no preface in time).
    private(set) var connectionsRefused: UInt64 = 0
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to new connections (see `updateSettings`).
    private(set) var currentMaxConcurrentStreams: Int

    /// Creates a server (not yet listening).
    public init(loop: EventLoop, configuration: HTTP2ServerConfiguration = HTTP2ServerConfiguration(),
                delegate: HTTP2ServerDelegate?) {
        self.loop = loop
        self.configuration = configuration
        self.delegate = delegate
        requestDelegate = delegate
        currentMaxConcurrentStreams = configuration.maxConcurrentStreams
        sweepList.reserveCapacity(64)
        let interval = configuration.limits.sweepIntervalMilliseconds
        if interval > 0 {
            let timer = LoopTimer(loop: loop) { [unowned self] in self.sweep() }
            timer.setKeepsLoopAlive(false)
            timer.start(afterMilliseconds: interval, repeatMilliseconds: interval)
            sweepTimer = timer
        }
        if configuration.servesHTTP1 { http1 = HTTP1Sessions(server: self) }
    }

    deinit {
        sweepTimer = nil
        closeListener()
        closePending()
        for c in connections.values {
            c.detached = true
            c.close()
        }
        for c in http1Connections.values {
            c.detached = true
            c.close()
        }
    }

    /// Binds and listens on a numeric address; `port` 0 picks a free port. Returns the bound port.
    @discardableResult
    public func listen(host: String, port: Int) throws(TransportError) -> Int {
        precondition(listener == nil, "listen called twice")
        var addr = sockaddr_storage()
        var r = pb_parse_address(host, Int32(port), &addr)
        if r != 0 { throw TransportError(uv: r, "uv_ip4_addr") }
        let l = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        r = uv_tcp_init_ex(loop.uvLoop, l, UInt32(addr.ss_family))
        if r != 0 { l.deallocate(); throw TransportError(uv: r, "uv_tcp_init_ex") }
        l.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        listener = l
        if configuration.reusePort {
            r = pb_tcp_set_reuseport(l)
            if r != 0 { closeListener(); throw TransportError(errno: -r, "setsockopt(SO_REUSEPORT)") }
        }
        r = withUnsafePointer(to: &addr) { uv_tcp_bind(l, pb_sockaddr($0), 0) }
        if r != 0 { closeListener(); throw TransportError(uv: r, "uv_tcp_bind") }
        r = uv_listen(pb_tcp_as_stream(l), configuration.backlog) { s, status in
            guard let s, let data = s.pointee.data else { return }
            let server = Unmanaged<HTTP2Server>.fromOpaque(data).takeUnretainedValue()
            if status == 0 {
                server.accept()
            } else if status == UV_EMFILE.rawValue || status == UV_ENFILE.rawValue {
                // libuv has accepted and closed the connection with its spare descriptor: say so.
                server.delegate?.server(server, connection: nil, didEnforce: .descriptors)
            }
        }
        if r != 0 { closeListener(); throw TransportError(uv: r, "uv_listen") }
        self.port = Int(pb_tcp_bound_port(l))
        return self.port
    }

    private func accept() {
        guard let listener else { return }
        let t = TCPTransport(loop: loop)
        if uv_accept(pb_tcp_as_stream(listener), t.stream) != 0 {
            t.close(nil, notify: false)
            return
        }
        uv_tcp_nodelay(&t.block.pointee.tcp, 1)
        serve(t)
    }

    /// `t` itself on cleartext, or `t` under a server-side TLS layer; nil when TLS could not start.
    private func secured(_ t: ByteTransport) -> ByteTransport? {
        guard let tls = configuration.tls else { return t }
        do throws(TLSError) {
            return try TLSTransport(server: tls, over: t, loop: loop, servesHTTP1: http1 != nil)
        } catch {
            connectionsRefused += 1
            delegate?.server(self, didRefuseConnectionFrom: t.peerName(), reason: "TLS: \(error.message)")
            t.close(nil, notify: false)
            return nil
        }
    }

    /// Whether a new connection may be served; false (and reported) when the cap is reached. The place
    /// taken goes with the accepted transport, which gives it back when it closes.
    private func takeCapPlace(_ t: ByteTransport) -> Bool {
        guard let cap = configuration.connectionCap else { return true }
        guard cap.acquire() else {
            delegate?.server(self, connection: nil, didEnforce: .connections)
            return false
        }
        if let tcp = t as? TCPTransport { tcp.capPlace = cap }
        else if let memory = t as? InMemoryTransport { memory.capPlace = cap }
        else { cap.release() }
        return true
    }

    /// Serves `transport`, one end of an in-memory pair, as a connection accepted like any other
    /// (the other end goes to `HTTP2ClientConnection.connect(over:)` or is driven by hand), over TLS
    /// when the configuration has it. Returns the connection, or nil when its session did not start
    /// now (it could not, or its protocol is chosen later: TLS, first bytes).
    @discardableResult
    public func accept(_ transport: InMemoryTransport) -> HTTP2ServerConnection? { serve(transport) }

    /// How this server chooses each connection's protocol.
    var selection: ProtocolSelection { ProtocolSelection(servesHTTP1: http1 != nil) }

    /// Starts serving an accepted transport: the HTTP/2 session at once when the protocol is known,
    /// otherwise a pending connection that chooses it. Returns the session when it started now.
    @discardableResult
    private func serve(_ plain: ByteTransport) -> HTTP2ServerConnection? {
        // Past the cap the connection is closed at once: the client sees it end instead of waiting in
        // the listen backlog, and the server keeps its descriptors and memory. The place is the
        // transport's (whatever protocol it comes to speak) until it closes.
        guard takeCapPlace(plain) else {
            plain.close(nil, notify: false)
            return nil
        }
        connectionsTotal += 1
        guard let t = secured(plain) else { return nil }
        let isTLS = t is SecureTransport
        if case .serve(.http2) = selection.atStart(tls: isTLS, alpn: nil) {
            return startHTTP2(t, firstBytes: UnsafeRawBufferPointer(start: nil, count: 0))
        }
        let p = PendingServerConnection(server: self, transport: t, isTLS: isTLS)
        pending[ObjectIdentifier(p)] = p
        p.begin()
        return nil
    }

    @discardableResult
    private func startHTTP2(_ t: ByteTransport, firstBytes: UnsafeRawBufferPointer) -> HTTP2ServerConnection? {
        nextID += 1
        let c = HTTP2ServerConnection(server: self, id: nextID, transport: t)
        connections[c.id] = c
        c.sweepIndex = sweepList.count
        sweepList.append(c)
        if !c.start() {
            c.close()
            return nil
        }
        delegate?.server(self, connectionDidOpen: c)
        if firstBytes.count > 0 { c.transportDidRead(firstBytes) }
        return c
    }

    /// A pending connection chose `proto`: its session takes the transport and the bytes read so far.
    func pendingDidChoose(_ p: PendingServerConnection, _ proto: ApplicationProtocol, firstBytes: UnsafeRawBufferPointer) {
        pending.removeValue(forKey: ObjectIdentifier(p))
        switch proto {
        case .http2:
            startHTTP2(p.transport, firstBytes: firstBytes)
        case .http1:
            guard let http1 else {
                // ALPN and the first bytes choose HTTP/1.1 only when it is served.
                preconditionFailure("HTTP/1.1 chosen without an HTTP/1.1 session")
            }
            http1.startSession(on: p.transport, firstBytes: firstBytes, tls: (p.transport as? SecureTransport)?.connectionInfo)
        }
    }

    func pendingWasRefused(_ p: PendingServerConnection, reason: String) {
        connectionsRefused += 1
        delegate?.server(self, didRefuseConnectionFrom: p.peer, reason: reason)
    }

    func pendingDidFinish(_ p: PendingServerConnection) {
        pending.removeValue(forKey: ObjectIdentifier(p))
    }

    private func closePending() {
        let all = pending.values
        pending.removeAll()
        for p in all { p.close() }
    }

    /// An HTTP/1.1 session takes a connection whose protocol was chosen (`HTTP1Sessions`).
    func startHTTP1(_ t: ByteTransport, firstBytes: UnsafeRawBufferPointer) {
        nextID += 1
        let c = HTTP1ServerConnection(server: self, id: nextID, transport: t)
        http1Connections[c.id] = c
        delegate?.server(self, http1ConnectionDidOpen: c)
        c.start()
        if firstBytes.count > 0 && !c.isClosed { c.transportDidRead(firstBytes) }
    }

    func connectionClosed(_ c: HTTP2ServerConnection, _ error: TransportError) {
        guard connections.removeValue(forKey: c.id) != nil else { return }
        removeFromSweep(c)
        closedSinceTrim += 1
        delegate?.server(self, connectionDidClose: c, error: error)
        finishShutdownIfDone()
    }

    func http1ConnectionClosed(_ c: HTTP1ServerConnection, _ error: TransportError) {
        guard http1Connections.removeValue(forKey: c.id) != nil else { return }
        closedSinceTrim += 1
        delegate?.server(self, http1ConnectionDidClose: c, error: error)
        finishShutdownIfDone()
    }

    private func finishShutdownIfDone() {
        if shuttingDown && connections.isEmpty && http1Connections.isEmpty, let done = shutdownDone {
            shutdownDone = nil
            done()
        }
    }

    private func removeFromSweep(_ c: HTTP2ServerConnection) {
        let i = c.sweepIndex
        guard i >= 0, i < sweepList.count, sweepList[i] === c else { return }
        let last = sweepList.count - 1
        if i != last {
            sweepList[i] = sweepList[last]
            sweepList[i].sweepIndex = i
        }
        sweepList.removeLast()
        c.sweepIndex = -1
    }

    /// The timeouts of every connection (ServerLimits), then memory back to the system after many
    /// connections closed, or after many idle TLS connections gave back their record buffers: freed
    /// memory stays in the allocator's free lists otherwise, and a gateway that once held 10,000
    /// connections would keep their memory for good. At most once a second.
    private func sweep() {
        let now = loop.now
        // Backwards: a connection the sweep closes swaps the last one (already visited) into its place.
        var i = sweepList.count - 1
        while i >= 0 {
            if i < sweepList.count { sweepList[i].sweep(now: now) }
            i -= 1
        }
        // A connection the sweep closes leaves the dictionary: the loop walks the values it started with.
        for c in http1Connections.values { c.sweep(now: now) }
        if (closedSinceTrim > 0 && (closedSinceTrim >= 100 || connections.isEmpty) || idleBuffersReleased >= 100)
            && now &- lastTrim >= 1_000_000_000 {
            closedSinceTrim = 0
            idleBuffersReleased = 0
            lastTrim = now
            loop.nghttp2Memory.trimPool()
            malloc_trim(0)
        }
    }

    private func closeListener() {
        guard let l = listener else { return }
        listener = nil
        l.pointee.data = nil
        uv_close(pb_tcp_as_handle(l)) { h in h?.deallocate() }
    }

    /// Sends new SETTINGS (max concurrent streams) on every open connection and announces it to new ones.
    public func updateSettings(maxConcurrentStreams: Int) {
        currentMaxConcurrentStreams = maxConcurrentStreams
        for c in connections.values { c.updateSettings(maxConcurrentStreams: maxConcurrentStreams) }
    }

    /// Graceful shutdown: stop accepting, GOAWAY(NO_ERROR) on every connection, let in-flight streams
    /// finish; `done` runs once every connection has closed.
    public func shutdownGracefully(_ done: (() -> Void)? = nil) {
        closeListener()
        closePending()
        shuttingDown = true
        shutdownDone = done
        if connections.isEmpty && http1Connections.isEmpty {
            shutdownDone = nil
            done?()
            return
        }
        for c in connections.values { c.shutdownGracefully() }
        for c in Array(http1Connections.values) { c.shutdownGracefully() }
    }

    /// Abrupt close: stop accepting and close every connection now.
    public func close() {
        closeListener()
        closePending()
        for c in Array(connections.values) { c.close() }
        for c in Array(http1Connections.values) { c.close() }
    }
}

@available(*, unavailable) extension HTTP2Server: Sendable {}
