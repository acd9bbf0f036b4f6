import CNGHTTP2
import CUV

/// An h2c (prior knowledge) HTTP/2 server on one `EventLoop`.
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
    /// Receives requests and connection events; held weakly.
    public weak var delegate: HTTP2ServerDelegate?
    private var listener: UnsafeMutablePointer<uv_tcp_t>?
    private var connections: [UInt64: HTTP2ServerConnection] = [:]
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
    /// Connections open now.
    public var connectionsOpen: Int { connections.count }
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to new connections (see `updateSettings`).
    public private(set) var currentMaxConcurrentStreams: Int

    /// Creates a server (not yet listening).
    public init(loop: EventLoop, configuration: HTTP2ServerConfiguration = HTTP2ServerConfiguration(),
                delegate: HTTP2ServerDelegate?) {
        self.loop = loop
        self.configuration = configuration
        self.delegate = delegate
        currentMaxConcurrentStreams = configuration.maxConcurrentStreams
    }

    deinit {
        closeListener()
        for c in connections.values {
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
            guard let s, let data = s.pointee.data, status == 0 else { return }
            Unmanaged<HTTP2Server>.fromOpaque(data).takeUnretainedValue().accept()
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

    /// Serves `transport`, one end of an in-memory pair, as a connection accepted like any other
    /// (the other end goes to `HTTP2ClientConnection.connect(over:)` or is driven by hand).
    /// Returns the connection, or nil when its session could not start.
    @discardableResult
    public func accept(_ transport: InMemoryTransport) -> HTTP2ServerConnection? { serve(transport) }

    @discardableResult
    private func serve(_ t: ByteTransport) -> HTTP2ServerConnection? {
        nextID += 1
        connectionsTotal += 1
        let c = HTTP2ServerConnection(server: self, id: nextID, transport: t)
        connections[c.id] = c
        if !c.start() {
            c.close()
            return nil
        }
        delegate?.server(self, connectionDidOpen: c)
        return c
    }

    func connectionClosed(_ c: HTTP2ServerConnection, _ error: TransportError) {
        guard connections.removeValue(forKey: c.id) != nil else { return }
        delegate?.server(self, connectionDidClose: c, error: error)
        if shuttingDown && connections.isEmpty, let done = shutdownDone {
            shutdownDone = nil
            done()
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
        shuttingDown = true
        shutdownDone = done
        if connections.isEmpty {
            shutdownDone = nil
            done?()
            return
        }
        for c in connections.values { c.shutdownGracefully() }
    }

    /// Abrupt close: stop accepting and close every connection now.
    public func close() {
        closeListener()
        for c in Array(connections.values) { c.close() }
    }
}

@available(*, unavailable) extension HTTP2Server: Sendable {}
