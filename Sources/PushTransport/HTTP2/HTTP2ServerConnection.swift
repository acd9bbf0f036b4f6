import CNGHTTP2
import CUV

/// One accepted HTTP/2 connection of an `HTTP2Server`; respond to its requests, change its SETTINGS,
/// send GOAWAY or close it.
public final class HTTP2ServerConnection: HTTP2Session {
    // Unretained: no refcount check per callback; the server detaches its connections in its deinit
    // (and on close) before it goes away, and `detached` guards every use after that. The per-request
    // paths go through `withOwner`, which costs no retain and release either.
    let ownerRef: Unmanaged<HTTP2Server>
    var owner: HTTP2Server { ownerRef.takeUnretainedValue() }
    var detached = false
    /// The server that accepted it (nil once the server is gone).
    public var server: HTTP2Server? { detached ? nil : owner }
    /// A number unique within the server (1, 2, …).
    public let id: UInt64
    /// Whatever the server's delegate keeps for this connection (its per-connection state), so a request
    /// finds it without a lookup. The transport never reads it.
    public var context: AnyObject? {
        didSet { contextRef = context.map { Unmanaged.passUnretained($0) } }
    }
    /// `context` unretained, for a delegate that reads it on every request: valid while `context` holds it.
    public private(set) var contextRef: Unmanaged<AnyObject>?
    /// See ``HTTP2ResponseHeaders/addUnique(_:_:)``.
    var uniqueNameIndexed = false
    var slots: StreamSlotPool<ServerSlot>
    /// The slots of open streams by stream id, direct-mapped (id / 2 modulo its size): every callback
    /// and response finds its slot with one load and one compare instead of a lookup in nghttp2's
    /// stream map. A stream whose entry is taken by another open stream (ids 512 or more apart) has
    /// its slot in the nghttp2 stream's user data instead.
    let streamTable: UnsafeMutablePointer<UnsafeMutablePointer<ServerSlot>?>
    static let streamTableSize = 256
    var peerSettingsSeen = false
    /// The client's recent streams it closed its side of, for STREAM_CLOSED on late frames (nghttp2 keeps
    /// no records of closed streams here: see PeerClosedStreams).
    var peerClosed = PeerClosedStreams()
    /// A frame on a closed stream was found: GOAWAY(STREAM_CLOSED) is on its way and input is dropped.
    var closedStreamViolated = false
    /// What the TLS handshake settled (version, cipher, ALPN, SNI, the client's certificate and whether
    /// it verified); nil on cleartext.
    public let tls: TLSConnectionInfo?

    // Limits (ServerLimits): what this connection holds and how it behaves, in plain integers.
    let limits: ServerLimits
    /// `HTTP2ServerConfiguration.trailingWhitespaceTrimmed`, as bytes.
    let trimmedFields: [[UInt8]]
    /// The classes of the header fields the client repeats, so the rules judge each one's bytes once.
    let fieldCache = FieldVerdictCache()
    /// Header bytes (as SETTINGS_MAX_HEADER_LIST_SIZE counts them) of the requests whose slots are held.
    private(set) var headerBytesHeld = 0
    /// Request body bytes of the requests whose slots are held.
    private(set) var bodyBytesHeld = 0
    /// Streams with a slot (open, or closed with their last bytes still being written).
    private(set) var openStreams = 0
    /// Requests begun and not yet settled (delivered, refused or reset): the request timeout looks at these.
    var incompleteRequests = 0
    /// When the connection was accepted, and when a stream last began or ended (idle timeout).
    let openedAt: UInt64
    var lastStreamActivity: UInt64
    var idleGoAwaySent = false
    /// Frames that carry no request, counted in windows of about a second.
    var controlFrames = 0
    var controlWindowStart: UInt64 = 0
    /// Reading is paused until the queued frames drain (a client that does not read).
    var readPaused = false
    /// The last GOAWAY sent was a graceful one (NO_ERROR, not a termination for a limit or an error).
    var gracefulGoAway = false
    /// Since when (monotonic ns) the connection has ended its sending side after a graceful GOAWAY and
    /// drops what the client still sends, waiting for its close (0: not lingering).
    var lingeringSince: UInt64 = 0
    /// Position in the server's sweep list (-1: not in it).
    var sweepIndex = -1
    /// The TLS layer's record buffers were given back since the last stream (see `sweep`).
    var tlsBuffersReleased = false

    init(server: HTTP2Server, id: UInt64, transport: ByteTransport) {
        ownerRef = .passUnretained(server)
        self.id = id
        let c = server.configuration
        limits = c.limits
        trimmedFields = c.trailingWhitespaceTrimmed.map { Array($0.utf8) }
        tls = (transport as? SecureTransport)?.connectionInfo
        slots = StreamSlotPool(streams: c.maxConcurrentStreams)
        streamTable = .allocate(capacity: HTTP2ServerConnection.streamTableSize)
        streamTable.initialize(repeating: nil, count: HTTP2ServerConnection.streamTableSize)
        openedAt = server.loop.now
        lastStreamActivity = openedAt
        super.init(loop: server.loop, stagingCapacity: c.stagingCapacity, iovCapacity: c.iovCapacity)
        self.transport = transport
        transport.owner = self
    }

    deinit {
        streamTable.deallocate()
        // The buffers go back to the loop's allocator, which the superclass still holds (`memory`).
        fieldCache.free()
    }

    /// Starts the session: SETTINGS (the server's current stream limit and window) go out with the
    /// first flush. False when nghttp2 could not create the session.
    func start() -> Bool {
        let c = owner.configuration
        let r = startSession(asServer: true,
                             settings: LocalSettings(maxConcurrentStreams: owner.currentMaxConcurrentStreams,
                                                     initialWindowSize: c.initialWindowSize,
                                                     maxHeaderListSize: c.limits.maxHeaderListSize),
                             connectionWindowSize: c.connectionWindowSize,
                             receiveCallbacks: HTTP2ServerConnection.installReceiveCallbacks)
        if r != 0 { return false }
        transport?.startReading()
        scheduleFlush()
        return true
    }

    /// The one way back from nghttp2's user_data: a guaranteed reference, so no retain/release per callback.
    @inline(__always)
    static func withServer<R>(_ ud: UnsafeMutableRawPointer?, _ body: (HTTP2ServerConnection) -> R) -> R {
        Unmanaged<HTTP2ServerConnection>.fromOpaque(ud!)._withUnsafeGuaranteedRef(body)
    }

    static func installReceiveCallbacks(_ cbs: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs) { _, frame, ud in
            HTTP2ServerConnection.withServer(ud) { $0.beginHeaders(frame!) }
        }
        nghttp2_session_callbacks_set_on_header_callback2(cbs) { _, frame, name, value, _, ud in
            HTTP2ServerConnection.withServer(ud) { $0.header(frame!, name!, value!) }
            return 0
        }
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cbs) { _, _, code, ud in
            HTTP2ServerConnection.withServer(ud) { $0.invalidFrame(code) }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs) { _, _, streamID, data, len, ud in
            HTTP2ServerConnection.withServer(ud) { $0.dataChunk(streamID, data!, len) }
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs) { _, frame, ud in
            HTTP2ServerConnection.withServer(ud) { $0.frameReceived(frame!) }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs) { _, streamID, code, ud in
            HTTP2ServerConnection.withServer(ud) { $0.streamClosed(streamID, code) }
            return 0
        }
    }

    @inline(__always) func withOwner<R>(_ body: (HTTP2Server) -> R) -> R {
        ownerRef._withUnsafeGuaranteedRef(body)
    }

    @inline(__always) static func tableIndex(_ streamID: Int32) -> Int {
        Int(streamID >> 1) & (streamTableSize - 1)
    }

    @inline(__always) func slot(for streamID: Int32) -> UnsafeMutablePointer<ServerSlot>? {
        if let s = streamTable[Self.tableIndex(streamID)], s.pointee.streamID == streamID { return s }
        return nghttp2_session_get_stream_user_data(session, streamID)?.assumingMemoryBound(to: ServerSlot.self)
    }

    func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        if pb_frame_type(frame) != UInt8(NGHTTP2_HEADERS.rawValue)
            || pb_frame_headers_category(frame) != NGHTTP2_HCAT_REQUEST { return 0 }
        let s = slots.acquire { ServerSlot() }
        s.pointee.reset()
        s.pointee.streamID = pb_frame_stream_id(frame)
        s.pointee.startedAt = ioTime
        openStreams += 1
        incompleteRequests += 1
        lastStreamActivity = ioTime
        tlsBuffersReleased = false
        let i = Self.tableIndex(s.pointee.streamID)
        if streamTable[i] == nil {
            streamTable[i] = s
        } else {
            nghttp2_session_set_stream_user_data(session, s.pointee.streamID, UnsafeMutableRawPointer(s))
        }
        return 0
    }

    // Inlined into its one caller, the header callback: a call frame less for every field.
    @inline(__always)
    func header(_ frame: UnsafePointer<nghttp2_frame>, _ nameBuffer: OpaquePointer, _ valueBuffer: OpaquePointer) {
        // A request refused already (its header list over the limit: 431 at its end) is not judged
        // further: an HPACK bomb's thousands of fields cost nothing more once the limit is passed.
        guard let s = slot(for: pb_frame_stream_id(frame)), s.pointee.rejection == .none else { return }
        let f = fieldCache.field(nameBuffer, valueBuffer, trimming: trimmedFields)
        let name = f.name, namelen = f.nameLength, value = f.value, valuelen = f.valueLength, verdict = f.verdict
        let kind = RequestMessageRules.apply(verdict, &s.pointee.message, trailer: s.pointee.headersDone)
        if kind == .malformed {
            malformed(s, inHeaders: true)
            return
        }
        // Counted as SETTINGS_MAX_HEADER_LIST_SIZE counts (RFC 9113 6.5.2), on the fields as nghttp2 hands
        // them over decoded: a small HPACK block that references one large table entry many times is
        // stopped here, before its decoded size is stored.
        let size = namelen + valuelen + 32
        s.pointee.headerBytes += size
        headerBytesHeld += size
        if s.pointee.headerBytes > limits.maxHeaderListSize {
            s.pointee.rejection = .headersTooLarge
            settle(s)
            report(.headerListSize)
            return
        }
        if headerBytesHeld > limits.maxHeaderMemoryPerConnection {
            reset(s, NGHTTP2_REFUSED_STREAM.rawValue, .headerMemory)
            return
        }
        let vo = s.pointee.reqStore.append(value, valuelen)
        switch kind {
        case .method: s.pointee.pseudo.0 = vo; s.pointee.pseudo.1 = valuelen; return
        case .path: s.pointee.pseudo.2 = vo; s.pointee.pseudo.3 = valuelen; return
        case .authority: s.pointee.pseudo.4 = vo; s.pointee.pseudo.5 = valuelen; return
        case .scheme: s.pointee.pseudo.6 = vo; s.pointee.pseudo.7 = valuelen; return
        default: break
        }
        let no = s.pointee.reqStore.append(name, namelen)
        s.pointee.reqRefs.append(HeaderRef(nameOffset: Int32(no), nameLength: Int32(namelen),
                                   valueOffset: Int32(vo), valueLength: Int32(valuelen)))
    }

    func dataChunk(_ streamID: Int32, _ data: UnsafePointer<UInt8>, _ len: Int) -> Int32 {
        guard let s = slot(for: streamID), s.pointee.rejection == .none else { return 0 }
        if !RequestMessageRules.data(&s.pointee.message, len) {
            // More body than its content-length said (RFC 9113 §8.1.1).
            malformed(s, inHeaders: false)
            return 0
        }
        if s.pointee.reqBody.count + len > limits.maxRequestBodySize {
            reset(s, NGHTTP2_CANCEL.rawValue, .requestBodySize)
            return 0
        }
        if bodyBytesHeld + len > limits.maxBodyMemoryPerConnection {
            reset(s, NGHTTP2_ENHANCE_YOUR_CALM.rawValue, .bodyMemoryPerConnection)
            return 0
        }
        if withOwner({ $0.bodyBytesHeld }) + len > limits.maxBodyMemory {
            reset(s, NGHTTP2_REFUSED_STREAM.rawValue, .bodyMemory)
            return 0
        }
        bodyBytesHeld += len
        withOwner { $0.bodyBytesHeld += len }
        s.pointee.reqBody.append(data, len)
        return 0
    }

    func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        let type = UInt32(pb_frame_type(frame))
        let flags = pb_frame_flags(frame)
        switch type {
        case NGHTTP2_HEADERS.rawValue:
            guard let s = slot(for: pb_frame_stream_id(frame)), s.pointee.rejection != .done else { return }
            let trailer = s.pointee.headersDone
            s.pointee.headersDone = true
            if s.pointee.rejection == .none && !RequestMessageRules.headersEnd(&s.pointee.message, trailer: trailer,
                                               endStream: flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0) {
                malformed(s, inHeaders: true)
                return
            }
            if s.pointee.rejection == .headersTooLarge {
                // 431, as a server that will not read a header section this large answers (RFC 9113
                // 10.5.1). A body still on its way is dropped as it arrives.
                respond(to: s.pointee.streamID, status: 431)
                s.pointee.rejection = .done
                return
            }
            if flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 { deliver(s) }
        case NGHTTP2_DATA.rawValue:
            if flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) == 0 {
                if pb_frame_length(frame) == 0 { countControlFrame() }
                return
            }
            guard let s = slot(for: pb_frame_stream_id(frame)) else { return }
            if s.pointee.rejection == .none && !RequestMessageRules.bodyComplete(s.pointee.message) {
                // Less body than its content-length said.
                malformed(s, inHeaders: false)
                return
            }
            deliver(s)
        case NGHTTP2_SETTINGS.rawValue:
            countControlFrame()
            if flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 { return }
            if peerSettingsSeen {
                owner.delegate?.server(owner, connection: self, didUpdatePeerSettings: remoteSettings())
            }
            peerSettingsSeen = true
        case NGHTTP2_GOAWAY.rawValue:
            owner.delegate?.server(owner, connection: self, didReceiveGoAway: HTTP2GoAway(frame: frame))
        default:
            // PING, WINDOW_UPDATE, PRIORITY, RST_STREAM: nothing to do but count them.
            countControlFrame()
        }
    }

    func deliver(_ s: UnsafeMutablePointer<ServerSlot>) {
        guard s.pointee.rejection == .none, !s.pointee.settled else { return }
        settle(s)
        withOwner { $0.requestsReceived &+= 1 }
        let base = UnsafeRawPointer(s.pointee.reqStore.base)
        let p = s.pointee.pseudo
        let refs = s.pointee.reqRefs.buffer
        do {
            let req = HTTP2ServerRequest(
                connection: self, streamID: s.pointee.streamID,
                method: UnsafeRawBufferPointer(start: base + p.0, count: p.1),
                path: UnsafeRawBufferPointer(start: base + p.2, count: p.3),
                authority: UnsafeRawBufferPointer(start: base + p.4, count: p.5),
                scheme: UnsafeRawBufferPointer(start: base + p.6, count: p.7),
                headers: HTTP2HeaderList(store: base, refs: refs),
                body: s.pointee.reqBody.bytes, receivedAt: ioTime)
            withOwner { $0.requestDelegate?.server($0, didReceive: req) }
        }
    }

    func streamClosed(_ streamID: Int32, _ code: UInt32) {
        guard let s = slot(for: streamID) else { return }
        let i = Self.tableIndex(streamID)
        if streamTable[i] == s { streamTable[i] = nil }
        // A slot in the stream's user data stays there: nghttp2 frees the stream as soon as this
        // callback returns (it keeps no closed streams), so no lookup can reach it again.
        if !s.pointee.responded {
            s.pointee.responded = true
            owner.delegate?.server(owner, connection: self, streamDidClose: streamID, errorCode: code)
        }
        releaseWhenWritten(UnsafeMutableRawPointer(s))
    }

    override func releaseSlot(_ slot: UnsafeMutableRawPointer) {
        freeSlot(slot.assumingMemoryBound(to: ServerSlot.self))
    }

    /// Returns a slot to the pool: what it held leaves the budgets, and stores an unusually large request
    /// grew are given back.
    @inline(__always) func freeSlot(_ s: UnsafeMutablePointer<ServerSlot>) {
        guard s.pointee.active else { return }
        settle(s)
        openStreams -= 1
        lastStreamActivity = ioTime
        headerBytesHeld -= s.pointee.headerBytes
        let body = s.pointee.reqBody.count
        if body > 0 {
            bodyBytesHeld -= body
            if !detached { withOwner { $0.bodyBytesHeld -= body } }
        }
        if s.pointee.reqStore.capacity > ServerSlot.keptStoreBytes || s.pointee.reqBody.capacity > ServerSlot.keptStoreBytes {
            s.pointee.reqStore.shrink(above: ServerSlot.keptStoreBytes, to: 512)
            s.pointee.reqBody.shrink(above: ServerSlot.keptStoreBytes, to: 256)
        }
        slots.release(s)
    }

    /// Counts a request out of the incomplete ones (once).
    @inline(__always) func settle(_ s: UnsafeMutablePointer<ServerSlot>) {
        if s.pointee.settled { return }
        s.pointee.settled = true
        incompleteRequests -= 1
    }

    /// Resets a request with RST_STREAM(`code`); whatever else arrives for it is dropped.
    func refuse(_ s: UnsafeMutablePointer<ServerSlot>, _ code: UInt32) {
        s.pointee.rejection = .done
        settle(s)
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), s.pointee.streamID, code)
        scheduleFlush()
    }

    /// Resets a request a limit refused.
    func reset(_ s: UnsafeMutablePointer<ServerSlot>, _ code: UInt32, _ limit: ServerLimit) {
        refuse(s, code)
        report(limit)
    }

    /// Resets a malformed request (RFC 9113 §8.1.1) with PROTOCOL_ERROR. A header section at fault is an
    /// invalid frame, as nghttp2 counts it; a body at fault is not.
    func malformed(_ s: UnsafeMutablePointer<ServerSlot>, inHeaders: Bool) {
        refuse(s, NGHTTP2_PROTOCOL_ERROR.rawValue)
        if inHeaders { invalidFrame(NGHTTP2_ERR_HTTP_HEADER.rawValue) }
    }

    /// A frame nghttp2 or the request rules rejected: the error is kept, and the frame counts against the
    /// control-frame budget (a stream of frames rejected one by one is a flood like any other).
    func invalidFrame(_ code: Int32) {
        lastProtocolError = TransportError(kind: .protocolError, code: code, function: "nghttp2_session_mem_recv")
        countControlFrame()
    }

    @inline(__always) func report(_ limit: ServerLimit) {
        if !detached { owner.delegate?.server(owner, connection: self, didEnforce: limit) }
    }

    /// Counts a frame that carries no request; past the per-second budget the connection is told to calm
    /// down and closed. The window restarts at the first frame over the budget a second or more after it
    /// began, so a steady client never trips it.
    @inline(__always) func countControlFrame() {
        controlFrames &+= 1
        if controlFrames <= limits.maxControlFramesPerSecond { return }
        if ioTime &- controlWindowStart >= 1_000_000_000 {
            controlWindowStart = ioTime
            controlFrames = 1
            return
        }
        calm(.controlFrames)
    }

    /// GOAWAY(ENHANCE_YOUR_CALM): nghttp2 reads nothing more from the client, sends the GOAWAY and the
    /// connection closes; `closeNow` closes it at once (the client is not reading, so nothing can be sent).
    func calm(_ limit: ServerLimit, closeNow: Bool = false) {
        guard let session, !isClosed else { return }
        gracefulGoAway = false
        report(limit)
        nghttp2_session_terminate_session(session, NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
        if closeNow { close() } else { scheduleFlush() }
    }

    override func transportDidRead(_ bytes: UnsafeRawBufferPointer) {
        owner.bytesIn &+= UInt64(bytes.count)
        if closedStreamViolated || lingeringSince != 0 { return }
        if let cut = peerClosed.scan(bytes) {
            // What came before the offending frame is processed as usual; the frame and the rest are not.
            if cut > 0 { super.transportDidRead(UnsafeRawBufferPointer(rebasing: bytes[..<cut])) }
            lateFrameOnClosedStream()
            return
        }
        super.transportDidRead(bytes)
        // Back-pressure: a client that sends faster than it reads what it is answered (or that reads
        // nothing) gets no more of its input processed until its answers drain.
        if let session, !isClosed, nghttp2_session_get_outbound_queue_size(session) > limits.maxOutboundFrames {
            if !readPaused {
                readPaused = true
                transport?.stopReading()
                report(.outboundQueue)
            }
        }
    }

    /// DATA or HEADERS on a stream the client had already ended or reset: a connection error of type
    /// STREAM_CLOSED (RFC 9113 §5.1), GOAWAY then close, as nghttp2 answers it while it holds the stream.
    func lateFrameOnClosedStream() {
        closedStreamViolated = true
        gracefulGoAway = false
        guard let session, !isClosed else { return }
        lastProtocolError = TransportError(kind: .protocolError, code: Int32(NGHTTP2_ERR_STREAM_CLOSED.rawValue),
                                           function: "nghttp2_session_mem_recv")
        nghttp2_session_terminate_session(session, NGHTTP2_STREAM_CLOSED.rawValue)
        scheduleFlush()
    }

    override func flush() {
        super.flush()
        if readPaused { resumeReadingIfDrained() }
    }

    func resumeReadingIfDrained() {
        guard let session, !isClosed, !writePending,
              nghttp2_session_get_outbound_queue_size(session) <= limits.maxOutboundFrames / 2 else { return }
        readPaused = false
        transport?.startReading()
    }

    /// After a graceful GOAWAY whose streams are all answered and written: the sending side ends (over
    /// TLS, close_notify, then FIN) and what the client still sends is read and dropped until it closes,
    /// for at most `lingerNanoseconds` (or at once without a sweep to end it). Closing with the client's
    /// requests above the last stream id unread would reset the connection, and a reset can discard
    /// the last answers before the client reads them.
    override func sessionFinished() {
        guard gracefulGoAway, lastProtocolError == nil, let transport, !isClosed,
              limits.handshakeTimeoutNanos | limits.idleTimeoutNanos | limits.requestTimeoutNanos | limits.writeTimeoutNanos != 0 else {
            super.sessionFinished()
            return
        }
        lingeringSince = loop.now
        transport.shutdownWrite()
    }

    /// How long a TLS connection goes without a stream before its record buffers are given back.
    static let idleBufferNanoseconds: UInt64 = 1_000_000_000

    /// How long a connection that ended after a graceful GOAWAY waits for the client to close.
    static let lingerNanoseconds: UInt64 = 1_000_000_000

    override func didClose(_ error: TransportError) {
        streamTable.update(repeating: nil, count: HTTP2ServerConnection.streamTableSize)
        fieldCache.clear()
        var i = 0
        while i < slots.count {
            let s = slots[i]
            i += 1
            if !s.pointee.active { continue }
            let answered = s.pointee.responded
            freeSlot(s)
            if !answered && !detached {
                s.pointee.responded = true
                owner.delegate?.server(owner, connection: self, streamDidClose: s.pointee.streamID,
                                        errorCode: NGHTTP2_CANCEL.rawValue)
            }
        }
        if !detached { owner.connectionClosed(self, error) }
    }
}

@available(*, unavailable) extension HTTP2ServerConnection: Sendable {}
