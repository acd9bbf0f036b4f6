import CNGHTTP2
import CUV

/// The base of `HTTP2ClientConnection` and `HTTP2ServerConnection`: what both share (the nghttp2
/// session, batched zero-copy output, the byte transport below, deferred slot release, the SETTINGS
/// they announce). Public only because they are; everything in it is internal.
public class HTTP2Session: ByteTransportOwner, LoopFlushable {
    let loop: EventLoop
    var transport: ByteTransport?
    var session: OpaquePointer?
    let memory: NGHTTP2Memory
    /// Set by EventLoop while this session waits in the end-of-turn flush list.
    final var flushScheduled = false
    /// Monotonic ns read once at the start of each read and each flush: the frames of one read arrived
    /// together and those of one flush leave in one writev, so their stream timestamps share it (one
    /// clock read per batch instead of several per stream).
    var ioTime: UInt64 = 0

    // Output batch: staged copies (control frames, DATA frame headers) and borrowed body ranges. Both
    // buffers start small (an idle connection costs little) and double, between batches, up to their
    // configured size whenever a batch found them full: a busy connection reaches its size in its first
    // batches and never allocates again.
    private var staging: UnsafeMutableRawPointer
    private var stagingCapacity: Int
    private let stagingLimit: Int
    private var stagedUsed = 0
    private var iov: UnsafeMutablePointer<uv_buf_t>
    private var iovCapacity: Int
    private let iovLimit: Int
    private var iovCount = 0
    private var lastIovIsStaging = false
    /// A batch stopped short for want of staging room or iovecs: grow before the next one.
    private var batchWasShort = false
    private(set) var writePending = false
    /// When the pending write began (monotonic ns): a peer that reads nothing shows as a write pending long.
    private(set) var writePendingSince: UInt64 = 0
    /// Slots whose streams closed while their bytes may still sit in the batch; freed once it is written.
    private var deferredReleases: [UnsafeMutableRawPointer] = []
    private(set) var isClosed = false
    /// The last nghttp2 protocol error seen (invalid frame, error callback), reported at close.
    var lastProtocolError: TransportError?
    /// The nghttp2_nv array a submit fills (HEADERS of a request or a response), grown when a block is larger.
    private(set) var scratchNV: UnsafeMutablePointer<nghttp2_nv>
    private var scratchNVCapacity = 16

    /// Initial sizes of the output buffers (they grow to the configured ones under load).
    static let initialStaging = 4 * 1024, initialIovecs = 16

    init(loop: EventLoop, stagingCapacity: Int, iovCapacity: Int) {
        self.loop = loop
        memory = loop.nghttp2Memory
        stagingLimit = max(stagingCapacity, 16 * 1024)
        iovLimit = max(iovCapacity, 16)
        self.stagingCapacity = HTTP2Session.initialStaging
        self.iovCapacity = HTTP2Session.initialIovecs
        staging = .allocate(byteCount: self.stagingCapacity, alignment: 16)
        iov = .allocate(capacity: self.iovCapacity)
        scratchNV = .allocate(capacity: scratchNVCapacity)
        deferredReleases.reserveCapacity(16)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
        transport?.owner = nil
        transport?.close(nil, notify: false)
        staging.deallocate()
        iov.deallocate()
        scratchNV.deallocate()
    }

    /// `scratchNV` with room for `count` fields.
    @inline(__always) func scratchNV(count: Int) -> UnsafeMutablePointer<nghttp2_nv> {
        if count > scratchNVCapacity {
            scratchNV.deallocate()
            scratchNVCapacity = count * 2
            scratchNV = .allocate(capacity: scratchNVCapacity)
        }
        return scratchNV
    }

    // MARK: session start and SETTINGS

    /// Creates the nghttp2 session with the send callbacks and `receiveCallbacks`' own, then queues the
    /// first SETTINGS and the connection-level receive window. Returns nghttp2's error code (0: started).
    func startSession(asServer: Bool, settings: LocalSettings, connectionWindowSize: Int, libraryChecksMessages: Bool = false,
                      receiveCallbacks: (OpaquePointer) -> Void) -> Int32 {
        var cbs: OpaquePointer?
        nghttp2_session_callbacks_new(&cbs)
        defer { nghttp2_session_callbacks_del(cbs) }
        HTTP2Session.installSendCallbacks(cbs!)
        receiveCallbacks(cbs!)
        var opt: OpaquePointer?
        nghttp2_option_new(&opt)
        defer { nghttp2_option_del(opt) }
        // No records of closed streams: they cost a server about a tenth of its time per request, and
        // HTTP2ServerConnection answers late frames on closed streams itself (PeerClosedStreams). A
        // client never keeps them.
        nghttp2_option_set_no_closed_streams(opt, 1)
        // A server judges requests itself (RequestMessageRules), a client the responses it reads
        // (ResponseMessageRules): same verdicts, a fraction of the cost.
        if !libraryChecksMessages { nghttp2_option_set_no_http_messaging(opt, 1) }
        var mem = memory.table
        var s: OpaquePointer?
        let r = asServer ? nghttp2_session_server_new3(&s, cbs, userData, opt, &mem)
                         : nghttp2_session_client_new3(&s, cbs, userData, opt, &mem)
        if r != 0 { return r }
        session = s
        submitSettings(settings)
        if connectionWindowSize > 65535 {
            nghttp2_session_set_local_window_size(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0,
                                                  Int32(min(connectionWindowSize, Int(Int32.max))))
        }
        return 0
    }

    /// Queues a SETTINGS frame with the fields `settings` sets. No allocation: a mid-connection
    /// change (the gateway lowering its stream limit after an error) is on the request path.
    func submitSettings(_ settings: LocalSettings) {
        guard let session else { return }
        let none = nghttp2_settings_entry(settings_id: 0, value: 0)
        var entries = (none, none, none, none)
        var n = 0
        withUnsafeMutableBytes(of: &entries) { raw in
            let iv = raw.bindMemory(to: nghttp2_settings_entry.self)
            if let v = settings.enablePush {
                iv[n] = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: v ? 1 : 0)
                n += 1
            }
            if let v = settings.maxConcurrentStreams {
                iv[n] = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                               value: UInt32(clamping: v))
                n += 1
            }
            if let v = settings.initialWindowSize {
                iv[n] = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                               value: UInt32(min(v, Int(Int32.max))))
                n += 1
            }
            if let v = settings.maxHeaderListSize {
                iv[n] = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                                               value: UInt32(clamping: v))
                n += 1
            }
            nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), iv.baseAddress, n)
        }
    }

    static func from(_ p: UnsafeMutableRawPointer?) -> HTTP2Session {
        Unmanaged<HTTP2Session>.fromOpaque(p!).takeUnretainedValue()
    }

    /// `from(_:)` for hot callbacks: a guaranteed reference, so no retain/release per call.
    @inline(__always)
    static func with<R>(_ ud: UnsafeMutableRawPointer?, _ body: (HTTP2Session) -> R) -> R {
        Unmanaged<HTTP2Session>.fromOpaque(ud!)._withUnsafeGuaranteedRef(body)
    }

    var userData: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// The send callbacks every session uses (output batching, NO_COPY DATA).
    static func installSendCallbacks(_ cbs: OpaquePointer) {
        nghttp2_session_callbacks_set_send_callback(cbs) { _, data, length, _, ud in
            HTTP2Session.with(ud) { $0.stage(data!, length) }
        }
        nghttp2_session_callbacks_set_send_data_callback(cbs) { _, frame, framehd, length, source, ud in
            HTTP2Session.with(ud) { $0.stageData(frame!, framehd!, length, source!) }
        }
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cbs) { _, _, code, ud in
            let s = HTTP2Session.from(ud)
            s.lastProtocolError = TransportError(kind: .protocolError, code: code, function: "nghttp2_session_mem_recv")
            return 0
        }
        nghttp2_session_callbacks_set_error_callback2(cbs) { _, code, _, _, ud in
            let s = HTTP2Session.from(ud)
            if code != 0 {
                s.lastProtocolError = TransportError(kind: .protocolError, code: code, function: "nghttp2_session_mem_recv")
            }
            return 0
        }
    }

    /// DATA bodies up to this many bytes are copied into the staging buffer behind their frame header
    /// rather than borrowed as their own iovec.
    static let inlineBodyLimit = 256

    /// Read callback for bodies sent without copying (frame header staged, body borrowed).
    static let noCopyRead: nghttp2_data_source_read_callback = { _, _, _, length, flags, source, _ in
        let c = source!.pointee.ptr.assumingMemoryBound(to: BodyCursor.self)
        let n = min(c.pointee.count - c.pointee.sent, length)
        var f = UInt32(NGHTTP2_DATA_FLAG_NO_COPY.rawValue)
        if c.pointee.sent + n == c.pointee.count { f |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
        flags!.pointee |= f
        return n
    }

    /// Read callback for bodies copied into nghttp2's frame buffer (one memcpy).
    static let copyRead: nghttp2_data_source_read_callback = { _, _, buf, length, flags, source, _ in
        let c = source!.pointee.ptr.assumingMemoryBound(to: BodyCursor.self)
        let n = min(c.pointee.count - c.pointee.sent, length)
        if n > 0 { buf!.update(from: c.pointee.base!.assumingMemoryBound(to: UInt8.self) + c.pointee.sent, count: n) }
        c.pointee.sent += n
        if c.pointee.sent == c.pointee.count { flags!.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
        return n
    }

    // MARK: output batch

    private func stage(_ data: UnsafePointer<UInt8>, _ length: Int) -> Int {
        if writePending || isClosed { return Int(NGHTTP2_ERR_WOULDBLOCK.rawValue) }
        let room = stagingCapacity - stagedUsed
        if room == 0 || (!lastIovIsStaging && iovCount == iovCapacity) {
            batchWasShort = true
            return Int(NGHTTP2_ERR_WOULDBLOCK.rawValue)
        }
        let n = min(room, length)
        if n < length { batchWasShort = true }
        appendStaged(UnsafeRawPointer(data), n)
        return n
    }

    @inline(__always) private func appendStaged(_ src: UnsafeRawPointer, _ n: Int) {
        let dst = staging + stagedUsed
        dst.copyMemory(from: src, byteCount: n)
        stagedUsed += n
        if lastIovIsStaging {
            iov[iovCount - 1].len += n
        } else {
            iov[iovCount] = uv_buf_t(base: dst.assumingMemoryBound(to: CChar.self), len: n)
            iovCount += 1
            lastIovIsStaging = true
        }
    }

    private func stageData(_ frame: UnsafeMutablePointer<nghttp2_frame>, _ framehd: UnsafePointer<UInt8>,
                           _ length: Int, _ source: UnsafeMutablePointer<nghttp2_data_source>) -> Int32 {
        if writePending || isClosed { return NGHTTP2_ERR_WOULDBLOCK.rawValue }
        // Padding is never enabled (no select_padding_callback), so a DATA frame is header + body.
        precondition(pb_frame_data_padlen(frame) == 0, "DATA padding is not supported")
        let needIov = (lastIovIsStaging ? 0 : 1) + 1
        if stagingCapacity - stagedUsed < 9 || iovCapacity - iovCount < needIov {
            batchWasShort = true
            return NGHTTP2_ERR_WOULDBLOCK.rawValue
        }
        appendStaged(UnsafeRawPointer(framehd), 9)
        if length > 0 {
            let c = source.pointee.ptr.assumingMemoryBound(to: BodyCursor.self)
            let p = c.pointee.base! + c.pointee.sent
            // A small body goes into the staging run after its frame header: one memcpy instead of two
            // iovecs, so a batch of small requests or responses stays one contiguous buffer for writev
            // (the kernel copies every segment anyway and pays per segment). Large bodies stay borrowed.
            if length <= HTTP2Session.inlineBodyLimit && stagingCapacity - stagedUsed >= length {
                appendStaged(p, length)
                c.pointee.sent += length
                return 0
            }
            iov[iovCount] = uv_buf_t(base: UnsafeMutableRawPointer(mutating: p).assumingMemoryBound(to: CChar.self), len: length)
            iovCount += 1
            lastIovIsStaging = false
            c.pointee.sent += length
        }
        return 0
    }

    /// Doubles a buffer the last batch found full, up to its configured size. Only between batches: the
    /// iovecs point into the staging buffer until their write completes.
    private func growIfShort() {
        guard batchWasShort else { return }
        batchWasShort = false
        if stagingCapacity < stagingLimit {
            staging.deallocate()
            stagingCapacity = min(stagingCapacity * 2, stagingLimit)
            staging = .allocate(byteCount: stagingCapacity, alignment: 16)
        }
        if iovCapacity < iovLimit {
            iov.deallocate()
            iovCapacity = min(iovCapacity * 2, iovLimit)
            iov = .allocate(capacity: iovCapacity)
        }
    }

    private func resetBatch() {
        stagedUsed = 0
        iovCount = 0
        lastIovIsStaging = false
        if !deferredReleases.isEmpty {
            var i = 0
            while i < deferredReleases.count { releaseSlot(deferredReleases[i]); i += 1 }
            deferredReleases.removeAll(keepingCapacity: true)
        }
    }

    /// Frees a stream slot now, or after the batch that may reference its memory has been written.
    func releaseWhenWritten(_ slot: UnsafeMutableRawPointer) {
        if iovCount == 0 && !writePending { releaseSlot(slot) } else { deferredReleases.append(slot) }
    }

    /// Asks for a flush at the end of this loop turn.
    @inline(__always) func scheduleFlush() {
        if !isClosed { loop.scheduleFlush(self) }
    }

    /// Serializes everything nghttp2 has queued and writes it as one batch (more only if the batch filled).
    func flush() {
        guard let session, !writePending, !isClosed else { return }
        ioTime = loop.now
        while true {
            let rv = nghttp2_session_send(session)
            if rv != 0 {
                fail(TransportError(kind: .protocolError, code: rv, function: "nghttp2_session_send"))
                return
            }
            if iovCount == 0 { break }
            guard let transport else { return }
            switch transport.write(iov, count: iovCount) {
            case .complete:
                resetBatch()
                growIfShort()
                if nghttp2_session_want_write(session) == 0 { break }
                continue
            case .pending:
                writePending = true
                writePendingSince = ioTime
                return
            case .failed:
                return
            }
            break
        }
        if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
            // GOAWAY exchanged and no stream left (or a fatal error nghttp2 already answered).
            sessionFinished()
        }
    }

    // MARK: transport events

    func transportDidConnect() {}
    func transportDidFailToConnect(_ error: TransportError) {}

    func transportDidRead(_ bytes: UnsafeRawBufferPointer) {
        guard let session, !isClosed else { return }
        ioTime = loop.now
        let rv = nghttp2_session_mem_recv(session, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count)
        if rv < 0 {
            fail(TransportError(kind: .protocolError, code: Int32(rv), function: "nghttp2_session_mem_recv"))
            return
        }
        scheduleFlush()
    }

    func transportWriteDidComplete() {
        writePending = false
        resetBatch()
        growIfShort()
        flush()
    }

    func transportDidClose(_ error: TransportError?) {
        if isClosed { return }
        isClosed = true
        transport = nil
        resetBatch()
        didClose(lastProtocolError ?? error ?? TransportError(kind: .connectionLost, code: 0, function: "uv_read"))
    }

    /// Closes the socket now and reports `error` (abrupt close, fatal errors).
    func fail(_ error: TransportError) {
        if isClosed { return }
        isClosed = true
        let t = transport
        transport = nil
        t?.owner = nil
        t?.close(error, notify: false)
        writePending = false
        resetBatch()
        didClose(error)
    }

    // MARK: subclass hooks

    func releaseSlot(_ slot: UnsafeMutableRawPointer) {}
    func didClose(_ error: TransportError) {}

    /// nghttp2 has nothing more to read or write (GOAWAY exchanged and no stream left, or a fatal error
    /// it answered), and everything it wrote is out: closes now.
    func sessionFinished() {
        fail(lastProtocolError ?? TransportError(kind: .closedLocally, code: 0, function: "GOAWAY"))
    }

    /// The peer's settings now in force.
    func remoteSettings() -> HTTP2Settings {
        guard let session else { return .initial }
        func get(_ id: nghttp2_settings_id) -> Int { Int(nghttp2_session_get_remote_settings(session, id)) }
        return HTTP2Settings(
            maxConcurrentStreams: get(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS),
            initialWindowSize: get(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE),
            maxFrameSize: get(NGHTTP2_SETTINGS_MAX_FRAME_SIZE),
            headerTableSize: get(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE),
            maxHeaderListSize: get(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE))
    }
}
