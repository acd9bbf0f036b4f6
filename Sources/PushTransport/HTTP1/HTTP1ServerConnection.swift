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
    private var parser: HTTP1Parser!
    private let maxBodySize: Int
    private let requestTimeoutMs: UInt64
    private let maxBodyMemory: Int
    private let writeTimeoutNanos: UInt64
    /// Body bytes of the current request counted in the server's `bodyBytesHeld`.
    private var bodyBytesCounted = 0
    private let dates: HTTPDateCache

    // The request being read: its target and header fields in one store, the body in another.
    private var fields = HTTP1HeaderCollector()
    private var body = ByteStore(capacity: 1024)
    private var urlOffset = 0
    private var urlLength = 0
    private var inMessage = false
    private var messageComplete = false
    private var expectsContinue = false
    private var rejectStatus = 0
    private var keepAlive = true
    /// Requests begun on this connection.
    private var sequence: UInt64 = 0
    /// The request waiting for its answer (0: none).
    private var awaiting: UInt64 = 0
    /// Inside the delegate's `didReceive`: an answer given there must not re-enter the parser.
    private var delivering = false
    /// Bytes received while a request waits for its answer (a pipelining client), parsed afterwards.
    private var pending = ByteQueue()

    // Output: buffers[0] is what the transport writes (or will at the end of the turn); answers given
    // while a write is pending go to buffers[1]. Manually allocated, so `output` is a plain pointer.
    private let buffers: UnsafeMutablePointer<ByteStore>
    private let iov: UnsafeMutablePointer<uv_buf_t>
    private var writePending = false
    /// When the pending write began (monotonic ns), for the write timeout.
    private var writePendingSince: UInt64 = 0
    /// Reading and parsing stopped: more than `outputLimit` bytes of answers wait to be written.
    private var outputPaused = false
    /// Close once the output is written (`Connection: close` was sent, or a protocol refusal).
    private var closeAfterWrite = false
    /// The output is written and the connection only drops input until it closes.
    private var lingering = false
    /// Answer the current request with `Connection: close` (graceful shutdown).
    private var closeRequested = false
    private var timer: LoopTimer?
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
    private static func with<R>(_ p: UnsafeMutablePointer<http_parser>?, _ body: (HTTP1ServerConnection) -> R) -> R {
        Unmanaged<HTTP1ServerConnection>.fromOpaque(pb_hp_data(p!)!)._withUnsafeGuaranteedRef(body)
    }

    // Written once here and only read after: nonisolated(unsafe) is safe.
    nonisolated(unsafe) private static let settings: UnsafeMutablePointer<http_parser_settings> = {
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

    private func messageBegan() -> Int32 {
        fields.reset()
        releaseBody()
        urlOffset = 0
        urlLength = 0
        expectsContinue = false
        inMessage = true
        sequence &+= 1
        return 0
    }

    private func urlBytes(_ at: UnsafePointer<CChar>, _ n: Int) -> Int32 {
        // The target goes in the fields' store, before the first field.
        if urlLength == 0 { urlOffset = fields.store.count }
        fields.store.append(at, n)
        urlLength += n
        return 0
    }

    private func fieldBytes(_ at: UnsafePointer<CChar>, _ n: Int) -> Int32 {
        fields.name(at, n)
        return 0
    }

    private func valueBytes(_ at: UnsafePointer<CChar>, _ n: Int) -> Int32 {
        fields.value(at, n)
        return 0
    }

    private func headersComplete() -> Int32 {
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

    private func bodyBytes(_ at: UnsafePointer<CChar>, _ n: Int) -> Int32 {
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
    private func releaseBody() {
        if bodyBytesCounted > 0 {
            if !detached { owner.bodyBytesHeld -= bodyBytesCounted }
            bodyBytesCounted = 0
        }
        body.count = 0
        body.shrink(above: Self.keptBodyBytes, to: 1024)
    }

    /// Body store capacity kept between requests.
    static let keptBodyBytes = 16 * 1024

    private func messageDone() -> Int32 {
        inMessage = false
        messageComplete = true
        keepAlive = http_should_keep_alive(parser.parser) != 0
        http_parser_pause(parser.parser, 1)
        return 0
    }

    /// The body passes the server's `maxRequestBodySize`, the bound HTTP/2 bodies have too: answered 413
    /// (HTTP/1.1 has no stream to reset) and reported as that bound.
    private func bodyTooLarge() -> Int32 {
        if !detached { owner.delegate?.server(owner, connection: nil, didEnforce: .requestBodySize) }
        return reject(413)
    }

    /// Stops the parser with `status` to answer (the request cannot be served).
    private func reject(_ status: Int) -> Int32 {
        rejectStatus = status
        http_parser_pause(parser.parser, 1)
        return 0
    }

    private var headers: HTTP2HeaderList { fields.list }

    // MARK: input

    /// Parses `n` bytes at `p` until a request waits for its answer or the connection is closing; returns
    /// how many were consumed.
    private func drive(_ p: UnsafeRawPointer, _ n: Int) -> Int {
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

    private func deliver() {
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

    public func transportDidConnect() {}
    public func transportDidFailToConnect(_ error: TransportError) {}

    public func transportDidRead(_ bytes: UnsafeRawBufferPointer) {
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
    private func resumeInput() {
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

    public func transportWriteDidComplete() {
        writePending = false
        wrote()
    }

    /// buffers[0] went out: what waits in buffers[1] goes next.
    private func wrote() {
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
    private var unsentBytes: Int { buffers[0].count + buffers[1].count }

    /// Back-pressure: the client asks faster than it reads its answers (or reads none), so nothing more
    /// is read or parsed until they drain; the write timeout closes a client that never reads.
    private func pauseIfOutputFull() {
        guard !outputPaused, !isClosed, unsentBytes > Self.outputLimit else { return }
        outputPaused = true
        transport?.stopReading()
        if !detached { owner.delegate?.server(owner, connection: nil, didEnforce: .outboundQueue) }
    }

    private func resumeAfterOutput() {
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

    public func transportDidClose(_ error: TransportError?) {
        if isClosed { return }
        isClosed = true
        transport = nil
        didClose(error ?? TransportError(kind: .connectionLost, code: 0, function: "uv_read"))
    }

    // MARK: timers

    private func armTimerIfMidRequest() {
        guard inMessage, requestTimeoutMs > 0, !isClosed, !closeAfterWrite else { return }
        let t = timer ?? makeTimer()
        if !t.isActive { t.start(afterMilliseconds: requestTimeoutMs) }
    }

    @inline(__always) private func stopTimer() {
        if let timer, timer.isActive { timer.stop() }
    }

    private func makeTimer() -> LoopTimer {
        let t = LoopTimer(loop: loop) { [unowned self] in self.timerFired() }
        timer = t
        return t
    }

    private func timerFired() {
        if lingering {
            close(TransportError(kind: .closedLocally, code: 0, function: "close after answer"))
        } else if inMessage && awaiting == 0 && !closeAfterWrite {
            fail(status: 408, error: nil)
        }
    }

    // MARK: output

    /// Where output goes now: the buffer the next write takes, or the one after it while a write is pending.
    private var output: UnsafeMutablePointer<ByteStore> { writePending ? buffers + 1 : buffers }

    /// Appends `name: value\r\n` to the response being written.
    func appendField(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        HTTP1Wire.appendField(&output.pointee, name, value)
    }

    /// Answers request `sequence`: `status`, header fields added by `headers`, and `body` (copied).
    ///
    /// Returns false when the connection closed or that request is not the one waiting (already answered).
    @discardableResult
    public func respond(to sequence: UInt64, status: Int, body: UnsafeRawBufferPointer? = nil,
                        headers: (inout HTTP1ResponseHeaders) -> Void = { _ in }) -> Bool {
        guard !isClosed, sequence == awaiting, sequence != 0 else { return false }
        precondition(status >= 200 && status <= 999, "status \(status) is not a final 3-digit HTTP status")
        let close = !keepAlive || closeRequested
        writeHead(status, close: close)
        var h = HTTP1ResponseHeaders(connection: self)
        headers(&h)
        Self.finishHead(&output.pointee, body?.count ?? 0, body)
        awaiting = 0
        releaseBody()
        if close { closeAfterWrite = true }
        scheduleFlush()
        pauseIfOutputFull()
        if !delivering && !closeAfterWrite { resumeInput() }
        return true
    }

    /// Like `respond(to:status:body:headers:)`; the body is copied as well (HTTP/1.1 answers go out as
    /// one buffer), the name says the caller's bytes may be static.
    @discardableResult
    public func respond(to sequence: UInt64, status: Int, borrowingBody body: UnsafeRawBufferPointer,
                        headers: (inout HTTP1ResponseHeaders) -> Void = { _ in }) -> Bool {
        respond(to: sequence, status: status, body: body, headers: headers)
    }

    /// Answers request `sequence` as an HTTP/2-only server answers HTTP/1.1 (APNs does this): its SETTINGS
    /// frame, then GOAWAY(PROTOCOL_ERROR, last stream 0, `debugData`), then the connection closes. An
    /// HTTP/1.1 client reads binary frames where it expected a status line.
    @discardableResult
    public func refuseAsHTTP2Only(_ sequence: UInt64, settings: [(id: UInt16, value: UInt32)],
                                  debugData: UnsafeRawBufferPointer) -> Bool {
        guard !isClosed, sequence == awaiting, sequence != 0 else { return false }
        HTTP1Wire.appendHTTP2Refusal(&output.pointee, settings: settings, debugData: debugData)
        awaiting = 0
        releaseBody()
        closeAfterWrite = true
        scheduleFlush()
        return true
    }

    private func writeHead(_ status: Int, close: Bool) {
        let o = output
        HTTP1Wire.appendStatusLine(&o.pointee, status)
        HTTP1Wire.append(&o.pointee, "Date: ")
        let d = dates.current()
        o.pointee.append(d.baseAddress, d.count)
        HTTP1Wire.append(&o.pointee, "\r\n")
        if close { HTTP1Wire.append(&o.pointee, "Connection: close\r\n") }
    }

    private static func finishHead(_ o: inout ByteStore, _ count: Int, _ body: UnsafeRawBufferPointer?) {
        HTTP1Wire.append(&o, "Content-Length: ")
        HTTP1Wire.appendDecimal(&o, count)
        HTTP1Wire.append(&o, "\r\n\r\n")
        if count > 0, let body { o.append(body.baseAddress, count) }
    }

    /// Answers the request being read with `status` and a short text body, then closes (after lingering).
    private func fail(status: Int, error: UInt32?) {
        stopTimer()
        inMessage = false
        awaiting = 0
        pending.removeAll()
        releaseBody()
        writeHead(status, close: true)
        let what: String
        if let error { what = String(cString: http_errno_description(http_errno(error))) } else {
            switch status {
            case 408: what = "the request was not received in time"
            case 413: what = "the request body is over \(maxBodySize) bytes"
            case 417: what = "only 'Expect: 100-continue' is supported"
            case 503: what = "the server holds as many request bodies as it may; try again later"
            default: what = "malformed request"
            }
        }
        let text = "\(String(cString: http_status_str(http_status(UInt32(status)))!)): \(what)\n"
        var t = text
        let o = output
        if status == 503 { HTTP1Wire.append(&o.pointee, "Retry-After: 1\r\n") }
        HTTP1Wire.append(&o.pointee, "Content-Type: text/plain\r\n")
        t.withUTF8 { b in Self.finishHead(&o.pointee, b.count, UnsafeRawBufferPointer(b)) }
        closeAfterWrite = true
        scheduleFlush()
    }

    @inline(__always) func scheduleFlush() {
        if !isClosed { loop.scheduleFlush(self) }
    }

    func flush() {
        guard !writePending, !isClosed, let transport else { return }
        if buffers[0].count == 0 {
            afterOutputWritten()
            return
        }
        iov.pointee = uv_buf_t(base: buffers[0].base.assumingMemoryBound(to: CChar.self), len: buffers[0].count)
        switch transport.write(iov, count: 1) {
        case .complete:
            wrote()
        case .pending:
            writePending = true
            writePendingSince = loop.now
        case .failed:
            break
        }
    }

    private func afterOutputWritten() {
        guard closeAfterWrite, !lingering, !isClosed else { return }
        lingering = true
        transport?.shutdownWrite()
        let t = timer ?? makeTimer()
        t.start(afterMilliseconds: Self.lingerMilliseconds)
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

    private func close(_ error: TransportError) {
        if isClosed { return }
        isClosed = true
        let t = transport
        transport = nil
        t?.owner = nil
        t?.close(error, notify: false)
        didClose(error)
    }

    private func didClose(_ error: TransportError) {
        timer = nil
        awaiting = 0
        writePending = false
        releaseBody()
        if !detached { owner.http1ConnectionClosed(self, error) }
    }
}

@available(*, unavailable) extension HTTP1ServerConnection: Sendable {}
