import CHTTPParser
import CUV

/// An HTTP/1.1 connection accepted by an `HTTP2Server` that serves both protocols on one port
/// (`HTTP2ServerConfiguration.servesHTTP1`). Requests are parsed by libhttp-parser and delivered one at a
/// time: the next request is not read until the current one is answered, so a pipelining client gets its
/// answers in order and nothing it sent early is lost or mixed up (the bytes wait, parsed later).
///
/// Keep-alive, `Content-Length` and chunked bodies, `Expect: 100-continue`. A request the parser rejects
/// (bad request line, a header without a colon, an invalid or contradictory `Content-Length`) is answered
/// 400, a body over `maxRequestBodySize` 413, headers over 80 KiB 431, an unfinished request after
/// `http1RequestTimeoutMilliseconds` 408; each with `Connection: close`, after which the connection reads
/// and drops what the client still sends for a moment (so its unread bytes do not reset the answer
/// away) and closes.
///
/// The server's `ServerLimits` hold it as they hold an HTTP/2 connection: while more than
/// `outputLimit` bytes of answers wait to be written, nothing more is read or parsed (`outbound_queue`);
/// a write the client does not take within `writeTimeoutNanos` closes the connection (`write_timeout`,
/// checked by the server's sweep); request bodies count against the server's `maxBodyMemory`, and a
/// body that would pass it is answered 503 with `Retry-After` and `Connection: close` (`body_memory`).
public final class HTTP1ServerConnection: ByteTransportOwner, LoopFlushable {
    // unowned(unsafe), as in HTTP2ServerConnection: the server detaches its connections before it goes.
    unowned(unsafe) let owner: HTTP2Server
    var detached = false
    let loop: EventLoop
    /// A number unique within the server (shared with its HTTP/2 connections).
    public let id: UInt64
    /// Whatever the server's delegate keeps for this connection (its per-connection state), so a request
    /// finds it without a lookup. The transport never reads it.
    public var context: AnyObject?
    /// The server that accepted it (nil once the server is gone).
    public var server: HTTP2Server? { detached ? nil : owner }
    var transport: ByteTransport?
    final var flushScheduled = false
    var parser: HTTP1Parser!
    let maxBodySize: Int
    let requestTimeoutMs: UInt64
    let maxBodyMemory: Int
    let writeTimeoutNanos: UInt64
    /// Body bytes of the current request counted in the server's `bodyBytesHeld`.
    var bodyBytesCounted = 0
    let dates: HTTPDateCache

    // The request being read: its target and header fields in one store, the body in another.
    var fields = HTTP1HeaderCollector()
    var body = ByteStore(capacity: 1024)
    var urlOffset = 0
    var urlLength = 0
    var inMessage = false
    var messageComplete = false
    var expectsContinue = false
    var rejectStatus = 0
    var keepAlive = true
    /// Requests begun on this connection.
    var sequence: UInt64 = 0
    /// The request waiting for its answer (0: none).
    var awaiting: UInt64 = 0
    /// Inside the delegate's `didReceive`: an answer given there must not re-enter the parser.
    var delivering = false
    /// Bytes received while a request waits for its answer (a pipelining client), parsed afterwards.
    var pending = ByteQueue()

    // Output: buffers[0] is what the transport writes (or will at the end of the turn); answers given
    // while a write is pending go to buffers[1]. Manually allocated, so `output` is a plain pointer.
    let buffers: UnsafeMutablePointer<ByteStore>
    let iov: UnsafeMutablePointer<uv_buf_t>
    var writePending = false
    /// When the pending write began (monotonic ns), for the write timeout.
    var writePendingSince: UInt64 = 0
    /// Reading and parsing stopped: more than `outputLimit` bytes of answers wait to be written.
    var outputPaused = false
    /// Close once the output is written (`Connection: close` was sent, or a protocol refusal).
    var closeAfterWrite = false
    /// The output is written and the connection only drops input until it closes.
    var lingering = false
    /// Answer the current request with `Connection: close` (graceful shutdown).
    var closeRequested = false
    var timer: LoopTimer?
    private(set) var isClosed = false

    /// Input kept while a request waits for its answer, at most: past it the client is not reading what it
    /// asked for, and the connection closes.
    static let pendingLimit = 16 << 20
    /// Bytes of answers waiting to be written past which the connection reads and parses nothing more
    /// (a pipelining client that does not read what it asked for); it reads again once they are down
    /// to half. An answer is never cut, so the output holds at most this plus one answer.
    static let outputLimit = 256 << 10
    /// How long a closing connection keeps reading (and dropping) input after its last answer.
    static let lingerMilliseconds: UInt64 = 2_000

    init(server: HTTP2Server, id: UInt64, transport: ByteTransport) {
        owner = server
        self.id = id
        loop = server.loop
        maxBodySize = server.configuration.maxRequestBodySize
        requestTimeoutMs = server.configuration.http1RequestTimeoutMilliseconds
        maxBodyMemory = server.configuration.limits.maxBodyMemory
        writeTimeoutNanos = server.configuration.limits.writeTimeoutNanos
        dates = server.loop.local(HTTPDateCache.self) { HTTPDateCache() }
        iov = .allocate(capacity: 1)
        buffers = .allocate(capacity: 2)
        buffers.initialize(to: ByteStore(capacity: 4096))
        (buffers + 1).initialize(to: ByteStore(capacity: 256))
        self.transport = transport
        parser = HTTP1Parser(type: HTTP_REQUEST, owner: Unmanaged.passUnretained(self).toOpaque())
        transport.owner = self
    }

    deinit {
        transport?.owner = nil
        transport?.close(nil, notify: false)
        parser.free()
        fields.free()
        body.free()
        buffers[0].free()
        buffers[1].free()
        buffers.deinitialize(count: 2)
        buffers.deallocate()
        pending.free()
        iov.deallocate()
    }

    /// Starts reading (the bytes read while the protocol was chosen are then given to `transportDidRead`).
    func start() { transport?.startReading() }

    // MARK: parser callbacks

    @inline(__always)
    static func with<R>(_ p: UnsafeMutablePointer<http_parser>?, _ body: (HTTP1ServerConnection) -> R) -> R {
        Unmanaged<HTTP1ServerConnection>.fromOpaque(pb_hp_data(p!)!)._withUnsafeGuaranteedRef(body)
    }

    // Written once here and only read after: nonisolated(unsafe) is safe.
    nonisolated(unsafe) static let settings: UnsafeMutablePointer<http_parser_settings> = {
        let s = UnsafeMutablePointer<http_parser_settings>.allocate(capacity: 1)
        http_parser_settings_init(s)
        s.pointee.on_message_begin = { p in with(p) { $0.messageBegan() } }
        s.pointee.on_url = { p, at, n in with(p) { $0.urlBytes(at!, n) } }
        s.pointee.on_header_field = { p, at, n in with(p) { $0.fieldBytes(at!, n) } }
        s.pointee.on_header_value = { p, at, n in with(p) { $0.valueBytes(at!, n) } }
        s.pointee.on_headers_complete = { p in with(p) { $0.headersComplete() } }
        s.pointee.on_body = { p, at, n in with(p) { $0.bodyBytes(at!, n) } }
        s.pointee.on_message_complete = { p in with(p) { $0.messageDone() } }
        return s
    }()

    func messageBegan() -> Int32 {
        fields.reset()
        releaseBody()
        urlOffset = 0
        urlLength = 0
        expectsContinue = false
        inMessage = true
        sequence &+= 1
        return 0
    }

    func urlBytes(_ at: UnsafePointer<CChar>, _ n: Int) -> Int32 {
        // The target goes in the fields' store, before the first field.
        if urlLength == 0 { urlOffset = fields.store.count }
        fields.store.append(at, n)
        urlLength += n
        return 0
    }

    func fieldBytes(_ at: UnsafePointer<CChar>, _ n: Int) -> Int32 {
        fields.name(at, n)
        return 0
    }

    func valueBytes(_ at: UnsafePointer<CChar>, _ n: Int) -> Int32 {
        fields.value(at, n)
        return 0
    }

    func headersComplete() -> Int32 {
        let p = parser.parser
        let hasBody = pb_hp_is_chunked(p) != 0 || (pb_hp_has_content_length(p) != 0 && pb_hp_content_length(p) > 0)
        if pb_hp_has_content_length(p) != 0 && pb_hp_content_length(p) > UInt64(maxBodySize) {
            return bodyTooLarge()
        }
        if let expect = headers.first(named: "expect") {
            // Only 100-continue is defined (RFC 9110 §10.1.1); any other expectation cannot be met.
            guard expect.count == 12, asciiLowercaseEquals(expect, "100-continue") else { return reject(417) }
            if hasBody && pb_hp_http_minor(p) >= 1 {
                HTTP1Wire.append(&output.pointee, "HTTP/1.1 100 Continue\r\n\r\n")
                scheduleFlush()
            }
        }
        return 0
    }

    func bodyBytes(_ at: UnsafePointer<CChar>, _ n: Int) -> Int32 {
        if body.count + n > maxBodySize { return bodyTooLarge() }
        if !detached {
            if owner.bodyBytesHeld + n > maxBodyMemory {
                owner.delegate?.server(owner, connection: nil, didEnforce: .bodyMemory)
                return reject(503)
            }
            owner.bodyBytesHeld += n
            bodyBytesCounted += n
        }
        body.append(at, n)
        return 0
    }

    /// Empties the body store: its bytes leave the server's `bodyBytesHeld`, and a store an unusually
    /// large body grew is given back (an idle keep-alive connection keeps no 64 KiB for good).
    func releaseBody() {
        if bodyBytesCounted > 0 {
            if !detached { owner.bodyBytesHeld -= bodyBytesCounted }
            bodyBytesCounted = 0
        }
        body.count = 0
        body.shrink(above: Self.keptBodyBytes, to: 1024)
    }

    /// Body store capacity kept between requests.
    static let keptBodyBytes = 16 * 1024

    func messageDone() -> Int32 {
        inMessage = false
        messageComplete = true
        keepAlive = http_should_keep_alive(parser.parser) != 0
        http_parser_pause(parser.parser, 1)
        return 0
    }

    /// The body passes the server's `maxRequestBodySize`, the bound HTTP/2 bodies have too: answered 413
    /// (HTTP/1.1 has no stream to reset) and reported as that bound.
    func bodyTooLarge() -> Int32 {
        if !detached { owner.delegate?.server(owner, connection: nil, didEnforce: .requestBodySize) }
        return reject(413)
    }

    /// Stops the parser with `status` to answer (the request cannot be served).
    func reject(_ status: Int) -> Int32 {
        rejectStatus = status
        http_parser_pause(parser.parser, 1)
        return 0
    }

    var headers: HTTP2HeaderList { fields.list }

    // MARK: input

    /// Parses `n` bytes at `p` until a request waits for its answer or the connection is closing; returns
    /// how many were consumed.
    func drive(_ p: UnsafeRawPointer, _ n: Int) -> Int {
        var off = 0
        while off < n && awaiting == 0 && !outputPaused && !closeAfterWrite && !isClosed {
            let parsed = http_parser_execute(parser.parser, HTTP1ServerConnection.settings,
                                             (p + off).assumingMemoryBound(to: CChar.self), n - off)
            off += parsed
            if rejectStatus != 0 {
                let status = rejectStatus
                rejectStatus = 0
                fail(status: status, error: nil)
                return n
            }
            if messageComplete {
                messageComplete = false
                http_parser_pause(parser.parser, 0)
                deliver()
                continue
            }
            let errno = parser.errno
            if errno != HPE_OK.rawValue {
                fail(status: errno == HPE_HEADER_OVERFLOW.rawValue ? 431 : 400, error: errno)
                return n
            }
            if parsed == 0 { break }
        }
        return off
    }

    func deliver() {
        stopTimer()
        awaiting = sequence
        owner.requestsReceived &+= 1
        let methodName = http_method_str(http_method(UInt32(pb_hp_method(parser.parser))))!
        let base = UnsafeRawPointer(fields.store.base)
        let request = HTTP1ServerRequest(
            connection: self, sequence: sequence,
            method: UnsafeRawBufferPointer(start: methodName, count: strlen(methodName)),
            path: UnsafeRawBufferPointer(start: base + urlOffset, count: urlLength),
            headers: headers, body: body.bytes, receivedAt: loop.now, keepAlive: keepAlive)
        delivering = true
        owner.delegate?.server(owner, didReceive: request)
        delivering = false
    }

    func transportDidConnect() {}
    func transportDidFailToConnect(_ error: TransportError) {}

    func transportDidRead(_ bytes: UnsafeRawBufferPointer) {
        if isClosed { return }
        owner.bytesIn &+= UInt64(bytes.count)
        // Closing: what the client still sends is dropped (it may be a body it keeps sending after a 413).
        if closeAfterWrite || lingering { return }
        if awaiting != 0 || outputPaused || pending.count > 0 {
            pending.append(bytes)
            if pending.count > Self.pendingLimit {
                close(TransportError(kind: .http1, code: Int32(HPE_UNKNOWN.rawValue), function: "pipelined input over the limit"))
                return
            }
            if awaiting == 0 && !outputPaused { resumeInput() }
            return
        }
        let used = drive(bytes.baseAddress!, bytes.count)
        if used < bytes.count && !closeAfterWrite && !isClosed {
            pending.append(UnsafeRawBufferPointer(rebasing: bytes[used...]))
        }
        armTimerIfMidRequest()
    }

    /// Parses input held while a request waited for its answer.
    func resumeInput() {
        while pending.count > 0 && awaiting == 0 && !outputPaused && !closeAfterWrite && !isClosed {
            let held = pending.bytes
            let used = drive(held.baseAddress!, held.count)
            if isClosed { return }
            if closeAfterWrite { pending.removeAll(); break }
            pending.removeFirst(used)
            if used == 0 { break }
        }
        armTimerIfMidRequest()
    }

    func transportWriteDidComplete() {
        writePending = false
        wrote()
    }

    /// buffers[0] went out: what waits in buffers[1] goes next.
    func wrote() {
        buffers[0].count = 0
        if buffers[1].count > 0 {
            swap(&buffers[0], &buffers[1])
            scheduleFlush()
            if outputPaused && buffers[0].count <= Self.outputLimit / 2 { resumeAfterOutput() }
            return
        }
        if outputPaused { resumeAfterOutput() }
        afterOutputWritten()
    }

    /// Answers waiting to be written, in bytes.
    var unsentBytes: Int { buffers[0].count + buffers[1].count }

    /// Back-pressure: the client asks faster than it reads its answers (or reads none), so nothing more
    /// is read or parsed until they drain; the write timeout closes a client that never reads.
    func pauseIfOutputFull() {
        guard !outputPaused, !isClosed, unsentBytes > Self.outputLimit else { return }
        outputPaused = true
        transport?.stopReading()
        if !detached { owner.delegate?.server(owner, connection: nil, didEnforce: .outboundQueue) }
    }

    func resumeAfterOutput() {
        guard outputPaused, !isClosed else { return }
        outputPaused = false
        transport?.startReading()
        if awaiting == 0 && !delivering && !closeAfterWrite { resumeInput() }
    }

    /// The write timeout, checked by the server's sweep: a write the client has not taken for
    /// `writeTimeoutNanos` closes the connection (nothing more can reach a client that reads nothing).
    func sweep(now: UInt64) {
        guard writePending, writeTimeoutNanos > 0, !isClosed, now &- writePendingSince > writeTimeoutNanos else { return }
        if !detached { owner.delegate?.server(owner, connection: nil, didEnforce: .writeTimeout) }
        close(TransportError(kind: .closedLocally, code: 0, function: "write timeout"))
    }

    func transportDidClose(_ error: TransportError?) {
        if isClosed { return }
        isClosed = true
        transport = nil
        didClose(error ?? TransportError(kind: .connectionLost, code: 0, function: "uv_read"))
    }

    // MARK: timers

    func armTimerIfMidRequest() {
        guard inMessage, requestTimeoutMs > 0, !isClosed, !closeAfterWrite else { return }
        let t = timer ?? makeTimer()
        if !t.isActive { t.start(afterMilliseconds: requestTimeoutMs) }
    }

    @inline(__always) func stopTimer() {
        if let timer, timer.isActive { timer.stop() }
    }

    func makeTimer() -> LoopTimer {
        let t = LoopTimer(loop: loop) { [unowned self] in self.timerFired() }
        timer = t
        return t
    }

    func timerFired() {
        if lingering {
            close(TransportError(kind: .closedLocally, code: 0, function: "close after answer"))
        } else if inMessage && awaiting == 0 && !closeAfterWrite {
            fail(status: 408, error: nil)
        }
    }

    // MARK: closing

    /// Graceful close: at once when no request is being read or answered, else after the answer
    /// (sent with `Connection: close`).
    public func shutdownGracefully() {
        if isClosed { return }
        closeRequested = true
        if awaiting == 0 && !inMessage && !writePending && buffers[0].count == 0 && !closeAfterWrite {
            close(TransportError(kind: .closedLocally, code: 0, function: "shutdown"))
        }
    }

    /// Closes the socket now (abrupt: an unanswered request is dropped).
    public func close() {
        close(TransportError(kind: .closedLocally, code: 0, function: "close"))
    }

    func close(_ error: TransportError) {
        if isClosed { return }
        isClosed = true
        let t = transport
        transport = nil
        t?.owner = nil
        t?.close(error, notify: false)
        didClose(error)
    }

    func didClose(_ error: TransportError) {
        timer = nil
        awaiting = 0
        writePending = false
        releaseBody()
        if !detached { owner.http1ConnectionClosed(self, error) }
    }
}

@available(*, unavailable) extension HTTP1ServerConnection: Sendable {}
