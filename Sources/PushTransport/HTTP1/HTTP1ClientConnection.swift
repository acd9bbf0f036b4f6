import CHTTPParser
import CUV

/// An HTTP/1.1 client connection with keep-alive, one request in flight at a time, on one `EventLoop`.
/// The body is written by the caller straight into the connection's buffer and sent with the prebuilt
/// head in one write; responses are parsed by libhttp-parser. No allocation per request in steady state.
public final class HTTP1ClientConnection: ByteTransportOwner, LoopFlushable, ClientConnectStart {
    let loop: EventLoop
    /// The configuration given at init.
    public let configuration: HTTP1ClientConfiguration
    /// Receives events; held unowned: it must outlive the connection, or be set to nil first.
    // Not weak, for the reason HTTP2ClientConnection gives: the load generator's pool, retained and
    // released several times per request, would take the runtime's slow path each time.
    public unowned var delegate: HTTP1ClientDelegate?
    var transport: ByteTransport?
    final var flushScheduled = false
    private var parser: HTTP1Parser!
    private var connectTimer: LoopTimer?
    /// True once connected and until closed or told to close.
    public private(set) var isConnected = false
    /// Whether a request is in flight.
    public private(set) var inFlight = false
    private var closed = false
    private var everConnected = false
    private var body: UnsafeMutableRawBufferPointer
    private var tail = ByteStore(capacity: 32)
    private let iov: UnsafeMutablePointer<uv_buf_t>
    private var iovCount = 0
    private var writePending = false
    private var queued = false
    private var context: UInt64 = 0
    /// The head of the request in flight: the iovec points into it until the write is done.
    private var head: HTTP1RequestHead?
    private var submittedAt: UInt64 = 0
    private var status = 0
    private var keepAlive = true
    private var messageComplete = false
    private var fields = HTTP1HeaderCollector()
    private var responseBody = ByteStore(capacity: 1024)
    private var readTime: UInt64 = 0

    /// Creates an unconnected client on `loop`.
    public init(loop: EventLoop, configuration: HTTP1ClientConfiguration = HTTP1ClientConfiguration(), delegate: HTTP1ClientDelegate?) {
        self.loop = loop
        self.configuration = configuration
        self.delegate = delegate
        body = .allocate(byteCount: max(configuration.bodyCapacity, 1), alignment: 16)
        iov = .allocate(capacity: 3)
        parser = HTTP1Parser(type: HTTP_RESPONSE, owner: Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        transport?.owner = nil
        transport?.close(nil, notify: false)
        parser.free()
        body.deallocate()
        iov.deallocate()
        tail.free()
        fields.free()
        responseBody.free()
    }

    /// Whether a request may be submitted now.
    public var isIdle: Bool { isConnected && !inFlight }

    /// Starts connecting to a numeric IPv4/IPv6 address.
    public func connect(host: String, port: Int) {
        startConnect(host: host, port: port)
    }

    /// Starts connecting over TLS to a numeric address: TCP, the TLS handshake (the certificate checked
    /// against `context`'s trust for `serverName`, default `host`), then HTTP/1.1. Give `context` the
    /// ALPN offer `["http/1.1"]`. A certificate that does not verify is a `didFailToConnect`.
    public func connect(host: String, port: Int, tls context: TLSClientContext, serverName: String? = nil) {
        startConnect(host: host, port: port, tls: context, serverName: serverName)
    }

    /// What the TLS handshake settled, once connected over TLS.
    public private(set) var tls: TLSConnectionInfo?

    /// Connects over `transport`, one end of an in-memory pair.
    public func connect(over transport: InMemoryTransport) {
        attach(transport)
        transportDidConnect()
    }

    func attach(_ t: ByteTransport) {
        precondition(transport == nil && !closed, "connect called twice")
        connectTimer = takeTransport(t, timeoutMilliseconds: configuration.connectTimeoutMilliseconds, what: "HTTP/1.1 connect")
    }

    func failConnect(_ error: TransportError) {
        connectTimer = nil
        if closed || everConnected { return }
        closed = true
        dropTransport(error)
        delegate?.connection(self, didFailToConnect: error)
    }

    func transportDidConnect() {
        tls = (transport as? SecureTransport)?.connectionInfo
        connectTimer = nil
        everConnected = true
        isConnected = true
        transport?.startReading()
        delegate?.connectionDidConnect(self)
    }

    func transportDidFailToConnect(_ error: TransportError) {
        transport = nil
        failConnect(error)
    }

    /// Sends a request: `head`, then the body `fill` writes into the buffer it is given (returning its
    /// length). Throws when a request is in flight, the connection is not up, or the body is too large.
    /// `submittedAt` (monotonic ns, 0: read the clock) is the response's `submittedAt`.
    public func submit(_ head: HTTP1RequestHead, context: UInt64, submittedAt: UInt64 = 0,
                       _ fill: (UnsafeMutableRawBufferPointer) -> Int) throws(HTTP1SubmitError) {
        guard isConnected, !inFlight, transport != nil else { throw .busy }
        let n = fill(body)
        guard n >= 0, n <= body.count else { throw .bodyTooLarge }
        tail.count = 0
        HTTP1Wire.appendDecimal(&tail, n)
        tail.appendByte(0x0D); tail.appendByte(0x0A); tail.appendByte(0x0D); tail.appendByte(0x0A)
        iov[0] = uv_buf_t(base: head.bytes.baseAddress!.assumingMemoryBound(to: CChar.self), len: head.bytes.count)
        iov[1] = uv_buf_t(base: tail.base.assumingMemoryBound(to: CChar.self), len: tail.count)
        iov[2] = uv_buf_t(base: body.baseAddress!.assumingMemoryBound(to: CChar.self), len: n)
        iovCount = n > 0 ? 3 : 2
        self.head = head
        inFlight = true
        queued = true
        self.context = context
        self.submittedAt = submittedAt != 0 ? submittedAt : loop.now
        status = 0
        fields.reset()
        responseBody.count = 0
        loop.scheduleFlush(self)
    }

    func flush() {
        guard queued, !writePending, let transport else { return }
        queued = false
        switch transport.write(iov, count: iovCount) {
        case .complete: break
        case .pending: writePending = true
        case .failed: break
        }
    }

    func transportWriteDidComplete() { writePending = false }

    // MARK: reading

    @inline(__always)
    private static func with<R>(_ p: UnsafeMutablePointer<http_parser>?, _ body: (HTTP1ClientConnection) -> R) -> R {
        Unmanaged<HTTP1ClientConnection>.fromOpaque(pb_hp_data(p!)!)._withUnsafeGuaranteedRef(body)
    }

    // Written once here and only read after: nonisolated(unsafe) is safe.
    nonisolated(unsafe) private static let settings: UnsafeMutablePointer<http_parser_settings> = {
        let s = UnsafeMutablePointer<http_parser_settings>.allocate(capacity: 1)
        http_parser_settings_init(s)
        s.pointee.on_message_begin = { p in with(p) { $0.begin() } }
        s.pointee.on_header_field = { p, at, n in with(p) { $0.field(at!, n) } }
        s.pointee.on_header_value = { p, at, n in with(p) { $0.value(at!, n) } }
        s.pointee.on_headers_complete = { p in with(p) { $0.status = Int(pb_hp_status(p!)); return 0 } }
        s.pointee.on_body = { p, at, n in with(p) { $0.responseBody.append(at!, n); return 0 } }
        s.pointee.on_message_complete = { p in with(p) { $0.complete() } }
        return s
    }()

    private func begin() -> Int32 {
        fields.reset()
        responseBody.count = 0
        return 0
    }

    private func field(_ at: UnsafePointer<CChar>, _ n: Int) -> Int32 {
        if configuration.keepsResponseHeaders { fields.name(at, n) }
        return 0
    }

    private func value(_ at: UnsafePointer<CChar>, _ n: Int) -> Int32 {
        if configuration.keepsResponseHeaders { fields.value(at, n) }
        return 0
    }

    private func complete() -> Int32 {
        // 1xx answers (100 Continue) are not the response.
        if status >= 200 {
            messageComplete = true
            keepAlive = http_should_keep_alive(parser.parser) != 0
            http_parser_pause(parser.parser, 1)
        }
        return 0
    }

    func transportDidRead(_ bytes: UnsafeRawBufferPointer) {
        if closed { return }
        readTime = loop.now
        var off = 0
        while off < bytes.count && !closed {
            let parsed = http_parser_execute(parser.parser, HTTP1ClientConnection.settings,
                                             (bytes.baseAddress! + off).assumingMemoryBound(to: CChar.self), bytes.count - off)
            off += parsed
            if messageComplete {
                messageComplete = false
                http_parser_pause(parser.parser, 0)
                deliver()
                continue
            }
            if parser.errno != HPE_OK.rawValue {
                fail(TransportError(kind: .http1, code: Int32(parser.errno), function: "http_parser_execute"))
                return
            }
            if parsed == 0 { break }
        }
    }

    private func deliver() {
        guard inFlight else {
            // An answer nobody asked for: the peer is not speaking request/response.
            fail(TransportError(kind: .http1, code: Int32(HPE_UNKNOWN.rawValue), function: "unsolicited response"))
            return
        }
        inFlight = false
        let response = HTTP1Response(status: status, headers: fields.list,
                                     body: responseBody.bytes, context: context, submittedAt: submittedAt, completedAt: readTime)
        if !keepAlive { isConnected = false }
        delegate?.connection(self, didReceive: response)
        if !keepAlive { close(TransportError(kind: .closedLocally, code: 0, function: "Connection: close")) }
    }

    func transportDidClose(_ error: TransportError?) {
        transport = nil
        // A response without a length ends at EOF.
        if !closed, inFlight { http_parser_execute(parser.parser, HTTP1ClientConnection.settings, nil, 0) }
        if messageComplete { messageComplete = false; deliver() }
        finish(error ?? TransportError(kind: .connectionLost, code: 0, function: "uv_read"))
    }

    private func fail(_ error: TransportError) {
        let t = transport
        transport = nil
        t?.owner = nil
        t?.close(error, notify: false)
        finish(error)
    }

    private func finish(_ error: TransportError) {
        if closed { return }
        closed = true
        isConnected = false
        connectTimer = nil
        if !everConnected {
            delegate?.connection(self, didFailToConnect: error)
            return
        }
        if inFlight {
            inFlight = false
            delegate?.connection(self, requestDidFail: context, error: error)
        }
        delegate?.connectionDidClose(self, error: error)
    }

    /// Closes the connection now (a request in flight is reported failed).
    public func close() { close(TransportError(kind: .closedLocally, code: 0, function: "close")) }

    private func close(_ error: TransportError) {
        if closed { return }
        fail(error)
    }
}

@available(*, unavailable) extension HTTP1ClientConnection: Sendable {}
