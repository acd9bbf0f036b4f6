import CNGHTTP2
import CUV

/// An HTTP/2 client connection over h2c (prior knowledge) on one `EventLoop`, over TCP
/// (`connect(host:port:)`) or an in-memory pair (`connect(over:)`).
///
/// ```swift
/// let conn = HTTP2ClientConnection(loop: loop, delegate: myDelegate)
/// conn.connect(host: "127.0.0.1", port: 8080)
/// // after connectionDidConnect:
/// try conn.submit(block, context: 42) { req in
///     req.setValue(0, "/3/device/abc")                       // :path
///     req.setBodyLength(encode(into: req.body))              // zero-copy body
/// }
/// ```
public final class HTTP2ClientConnection: HTTP2Session, ClientConnectStart {
    /// The configuration given at init.
    public let configuration: HTTP2ClientConfiguration
    /// Receives events; held unowned(unsafe): it must outlive the connection, or be set to nil first.
    // Not weak: a weak reference gives its object a side table, and every retain and release of it
    // (the load generator's pool, several per request) then takes the runtime's slow path. Not plain
    // unowned either: each call through it would take a strong reference (an atomic increment and
    // decrement per response).
    public unowned(unsafe) var delegate: HTTP2ClientDelegate?
    private var slots: StreamSlotPool<ClientSlot>
    private var handshakeTimer: LoopTimer?
    /// Streams submitted and not yet answered or failed.
    public private(set) var inFlight = 0
    /// True once the peer's first SETTINGS arrived and until GOAWAY or close.
    public private(set) var isConnected = false
    private var everConnected = false
    private var goAwayReceived = false
    /// The last stream id and error code of the peer's GOAWAY: streams above it end as `.goAway`.
    private var goAwayLastStreamID: Int32 = .max
    private var goAwayErrorCode: UInt32 = 0
    /// This side answered a protocol error with GOAWAY: nghttp2 then closes the open streams itself
    /// (REFUSED_STREAM), and they end as the protocol error, not as refused.
    var goAwaySentForError = false
    private var connectFailed = false
    /// The connection ended after the peer's GOAWAY with every stream up to its last stream id settled:
    /// a graceful close, whatever the transport said of its end (a TLS close_notify, a FIN, or a reset
    /// of a socket the peer closed with requests above the last id still unread). Set before
    /// `connectionDidClose`.
    public private(set) var endedByGoAway = false
    /// The block whose `.unique` field names this connection has put in the peer's HPACK dynamic table
    /// (with its first request). Another block's first request indexes its own names; at worst a name
    /// is indexed twice, which costs a table entry, never correctness.
    private var uniqueNamesIndexed: ObjectIdentifier?
    /// Responses are judged by libnghttp2's own HTTP messaging checks instead of `ResponseMessageRules`:
    /// the reference a test compares the rules with. Read when the session starts.
    var libraryChecksResponses = false
    /// The peer's settings now in force (defaults until the first SETTINGS arrives).
    private(set) var peerSettings: HTTP2Settings
    /// What the TLS handshake settled (version, cipher, ALPN, the server's certificate, the time it
    /// took); nil on cleartext and until the handshake is done.
    public private(set) var tls: TLSConnectionInfo?

    /// Creates an unconnected client on `loop`.
    public init(loop: EventLoop, configuration: HTTP2ClientConfiguration = HTTP2ClientConfiguration(),
                delegate: HTTP2ClientDelegate?) {
        self.configuration = configuration
        self.delegate = delegate
        peerSettings = .initial
        slots = StreamSlotPool(streams: configuration.maxConcurrentStreams)
        super.init(loop: loop, stagingCapacity: configuration.stagingCapacity, iovCapacity: configuration.iovCapacity)
    }

    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS now in force.
    public var peerMaxConcurrentStreams: Int { peerSettings.maxConcurrentStreams }

    /// Streams that may be submitted now: min(peer limit, local limit) - inFlight (0 when not connected).
    public var availableStreams: Int {
        isConnected ? max(0, min(peerSettings.maxConcurrentStreams, configuration.maxConcurrentStreams) - inFlight) : 0
    }

    /// Starts connecting to a numeric IPv4/IPv6 address; the delegate hears `connectionDidConnect` or
    /// `didFailToConnect` within `connectTimeoutMilliseconds`.
    public func connect(host: String, port: Int) {
        startConnect(host: host, port: port)
    }

    /// Starts connecting over TLS to a numeric address: TCP, the TLS handshake (the certificate checked
    /// against `context`'s trust for `serverName`, default `host`; a DNS name is also sent as SNI),
    /// then HTTP/2. A certificate that does not verify is a `didFailToConnect` with a `.certificate`
    /// error, before any request. Fails at once (`didFailToConnect`) if TLS cannot start.
    public func connect(host: String, port: Int, tls context: TLSClientContext, serverName: String? = nil) {
        startConnect(host: host, port: port, tls: context, serverName: serverName)
    }

    /// `connect(over:)` with TLS: the handshake runs over the in-memory pair (whose other end a server
    /// with a `TLSServerContext` accepted).
    public func connect(over transport: InMemoryTransport, tls context: TLSClientContext, serverName: String) {
        do throws(TLSError) {
            let t = try TLSTransport(client: context, serverName: serverName, over: transport, loop: loop)
            attach(t)
            t.transportDidConnect()
        } catch {
            failConnect(TransportError(kind: .tls, code: -1, function: "SSL_new"))
        }
    }

    /// Starts the HTTP/2 connection over `transport`, one end of an in-memory pair whose other end a
    /// server accepted (`HTTP2Server.accept(_:)`) or a test drives by hand. The delegate hears
    /// `connectionDidConnect` once the peer's SETTINGS arrive, or `didFailToConnect` after
    /// `connectTimeoutMilliseconds`.
    public func connect(over transport: InMemoryTransport) {
        attach(transport)
        transportDidConnect()
    }

    /// Takes `t` as the transport and starts the handshake timer, which bounds the transport's connect
    /// and the wait for the peer's first SETTINGS together.
    func attach(_ t: ByteTransport) {
        precondition(transport == nil && !isClosed, "connect called twice")
        handshakeTimer = takeTransport(t, timeoutMilliseconds: configuration.connectTimeoutMilliseconds, what: "HTTP/2 handshake")
    }

    func failConnect(_ error: TransportError) {
        handshakeTimer = nil
        if connectFailed || everConnected { return }
        connectFailed = true
        dropTransport(error)
        fail(error)
        delegate?.connection(self, didFailToConnect: error)
    }

    override func transportDidFailToConnect(_ error: TransportError) {
        transport = nil
        failConnect(error)
    }

    override func transportDidConnect() {
        tls = (transport as? SecureTransport)?.connectionInfo
        let r = startSession(asServer: false,
                             settings: LocalSettings(initialWindowSize: configuration.initialWindowSize, enablePush: false),
                             connectionWindowSize: configuration.connectionWindowSize,
                             libraryChecksMessages: libraryChecksResponses,
                             receiveCallbacks: HTTP2ClientConnection.installReceiveCallbacks)
        if r != 0 {
            failConnect(TransportError(kind: .protocolError, code: r, function: "nghttp2_session_client_new3"))
            return
        }
        transport?.startReading()
        scheduleFlush()
    }

    /// The one way back from nghttp2's user_data: a guaranteed reference, so no retain/release per callback.
    @inline(__always)
    static func withClient<R>(_ ud: UnsafeMutableRawPointer?, _ body: (HTTP2ClientConnection) -> R) -> R {
        Unmanaged<HTTP2ClientConnection>.fromOpaque(ud!)._withUnsafeGuaranteedRef(body)
    }

    /// The stream whose slot was looked up last: a response's callbacks (its HEADERS, :status, END_STREAM,
    /// the stream's close) come one after another for the same stream, so they share one lookup in
    /// nghttp2's stream map. A stream id is never reused on a connection; the entry is dropped when its
    /// stream closes, before the slot can be reused.
    private var lastStreamID: Int32 = 0
    private var lastSlot: UnsafeMutablePointer<ClientSlot>?

    @inline(__always) private func slot(for streamID: Int32) -> UnsafeMutablePointer<ClientSlot>? {
        if streamID == lastStreamID, let s = lastSlot { return s }
        let s = nghttp2_session_get_stream_user_data(session, streamID)?.assumingMemoryBound(to: ClientSlot.self)
        lastStreamID = streamID
        lastSlot = s
        return s
    }

    /// Fields judged regular before, by their nghttp2 buffers (empty when the library judges responses).
    private let judged = JudgedFieldCache()
    /// Where an empty buffer's bytes are, should nghttp2 give it no address.
    private static var noBytes: UnsafePointer<UInt8> { ("" as StaticString).utf8Start }

    deinit { judged.free() }

    /// Response fields kept as judged regular (for tests).
    var judgedFieldCount: Int { judged.count }

    func header(_ frame: UnsafePointer<nghttp2_frame>, _ nameBuf: OpaquePointer, _ valueBuf: OpaquePointer) {
        guard let s = slot(for: pb_frame_stream_id(frame)), s.pointee.message.flags & ResponseMessage.malformed == 0 else { return }
        // The response's first field (no begin-headers callback: one call less per response).
        if s.pointee.timing.responseHeadersReceived == 0 { s.pointee.timing.responseHeadersReceived = ioTime }
        let known = judged.contains(name: nameBuf, value: valueBuf)
        if known {
            // What `ResponseMessageRules.field` does for a regular field.
            s.pointee.message.flags |= ResponseMessage.pseudoClosed
            if !configuration.keepsResponseHeaders { return }
        }
        let n = nghttp2_rcbuf_get_buf(nameBuf), v = nghttp2_rcbuf_get_buf(valueBuf)
        let name = n.base.map { UnsafePointer($0) } ?? HTTP2ClientConnection.noBytes, namelen = n.len
        let value = v.base.map { UnsafePointer($0) } ?? HTTP2ClientConnection.noBytes, valuelen = v.len
        if known {
            // Judged regular before, in these very bytes.
        } else if libraryChecksResponses {
            if namelen == 7 && name[0] == UInt8(ascii: ":") {
                // ":status": three ASCII digits.
                var st = 0
                for i in 0..<valuelen { st = st * 10 + Int(value[i] &- 48) }
                s.pointee.status = st
                return
            }
        } else {
            switch ResponseMessageRules.field(name, namelen, value, valuelen, &s.pointee.message) {
            case .regular:
                if JudgedFieldCache.keeps(.regular, nameLength: namelen) { judged.insert(name: nameBuf, value: valueBuf) }
            case .status:
                s.pointee.status = Int(s.pointee.message.status)
                return
            case .removed: return
            case .malformed:
                malformed(s, NGHTTP2_ERR_HTTP_HEADER.rawValue)
                return
            }
        }
        if !configuration.keepsResponseHeaders || s.pointee.respStore.count + namelen + valuelen > configuration.responseHeaderLimit { return }
        let no = s.pointee.respStore.append(name, namelen)
        let vo = s.pointee.respStore.append(value, valuelen)
        s.pointee.respRefs.append(HeaderRef(nameOffset: Int32(no), nameLength: Int32(namelen),
                                    valueOffset: Int32(vo), valueLength: Int32(valuelen)))
    }

    func dataChunk(_ streamID: Int32, _ data: UnsafePointer<UInt8>, _ len: Int) {
        guard let s = slot(for: streamID), s.pointee.message.flags & ResponseMessage.malformed == 0 else { return }
        if !libraryChecksResponses && !ResponseMessageRules.data(&s.pointee.message, len) {
            malformed(s, 0)
            return
        }
        s.pointee.respBodyLength += len
        let keep = min(len, configuration.responseBodyLimit - s.pointee.respBody.count)
        if keep > 0 { s.pointee.respBody.append(data, keep) }
    }

    func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        let type = pb_frame_type(frame)
        let flags = pb_frame_flags(frame)
        switch UInt32(type) {
        case NGHTTP2_SETTINGS.rawValue:
            if flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 { return }
            peerSettings = remoteSettings()
            if !everConnected {
                everConnected = true
                if goAwayReceived { return }
                isConnected = true
                handshakeTimer = nil
                delegate?.connectionDidConnect(self, peerSettings: peerSettings)
            } else {
                delegate?.connection(self, didUpdatePeerSettings: peerSettings)
            }
        case NGHTTP2_GOAWAY.rawValue:
            goAwayReceived = true
            goAwayLastStreamID = pb_frame_goaway_last_stream_id(frame)
            goAwayErrorCode = pb_frame_goaway_error_code(frame)
            isConnected = false
            delegate?.connection(self, didReceiveGoAway: HTTP2GoAway(frame: frame))
        case NGHTTP2_HEADERS.rawValue:
            guard let s = slot(for: pb_frame_stream_id(frame)), s.pointee.message.flags & ResponseMessage.malformed == 0 else { return }
            let endStream = flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            // A header section without fields.
            if s.pointee.timing.responseHeadersReceived == 0 { s.pointee.timing.responseHeadersReceived = ioTime }
            // Whether this section is trailers: only headersEnd changes what isTrailer reads.
            let trailer = ResponseMessageRules.isTrailer(s.pointee.message)
            if !libraryChecksResponses && !ResponseMessageRules.headersEnd(&s.pointee.message, trailer: trailer, endStream: endStream) {
                malformed(s, NGHTTP2_ERR_HTTP_MESSAGING.rawValue)
                return
            }
            if endStream { complete(s) }
        case NGHTTP2_DATA.rawValue:
            guard flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0, let s = slot(for: pb_frame_stream_id(frame)),
                  s.pointee.message.flags & ResponseMessage.malformed == 0 else { return }
            if !libraryChecksResponses && !ResponseMessageRules.streamEnd(s.pointee.message) {
                malformed(s, 0)
                return
            }
            complete(s)
        default:
            break
        }
    }

    private func complete(_ s: UnsafeMutablePointer<ClientSlot>) {
        if s.pointee.done { return }
        s.pointee.done = true
        inFlight -= 1
        s.pointee.timing.completed = ioTime
        let headers = HTTP2HeaderList(store: UnsafeRawPointer(s.pointee.respStore.base), refs: s.pointee.respRefs.buffer)
        let response = HTTP2Response(streamID: s.pointee.streamID, context: s.pointee.context, status: s.pointee.status, headers: headers,
                                     body: s.pointee.respBody.bytes, timing: s.pointee.timing, bodyLength: s.pointee.respBodyLength)
        delegate?.connection(self, didReceive: response)
    }

    /// Resets a malformed response's stream with PROTOCOL_ERROR (RFC 9113 §8.1.1); it fails when the reset
    /// is sent. A header section at fault is an invalid frame (`code`, nghttp2's error), as nghttp2
    /// counts it; a body at fault (`code` 0) is not.
    private func malformed(_ s: UnsafeMutablePointer<ClientSlot>, _ code: Int32) {
        s.pointee.message.flags |= ResponseMessage.malformed
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), s.pointee.streamID, NGHTTP2_PROTOCOL_ERROR.rawValue)
        if code != 0 {
            lastProtocolError = TransportError(kind: .protocolError, code: code, function: "nghttp2_session_mem_recv")
        }
        scheduleFlush()
    }

    private func failStream(_ s: UnsafeMutablePointer<ClientSlot>, _ reason: HTTP2StreamFailureReason) {
        if s.pointee.done { return }
        s.pointee.done = true
        inFlight -= 1
        s.pointee.timing.completed = loop.now
        delegate?.connection(self, streamDidFail: HTTP2StreamFailure(streamID: s.pointee.streamID, context: s.pointee.context,
                                                                     reason: reason, timing: s.pointee.timing))
    }

    func headersSent(_ streamID: Int32) {
        guard let s = slot(for: streamID) else { return }
        s.pointee.timing.headersSent = ioTime
    }

    func headersNotSent(_ streamID: Int32, _ code: Int32) {
        guard let s = slot(for: streamID) else { return }
        // A stream nghttp2 may no longer start is refused by the peer's GOAWAY.
        failStream(s, code == NGHTTP2_ERR_START_STREAM_NOT_ALLOWED.rawValue
                   ? (goAwayReceived ? .goAway(errorCode: goAwayErrorCode) : .refused) : .notSent(code: code))
    }

    func streamClosed(_ streamID: Int32, _ code: UInt32) {
        guard let s = slot(for: streamID) else { return }
        if !s.pointee.done {
            // nghttp2 closes the streams above a GOAWAY's last stream id with REFUSED_STREAM.
            let aboveGoAway = goAwayReceived && streamID > goAwayLastStreamID
            if goAwaySentForError {
                failStream(s, .protocolError(code: lastProtocolError?.code ?? NGHTTP2_ERR_PROTO.rawValue))
            } else if s.pointee.message.flags & ResponseMessage.malformed != 0 {
                // Reset by this side: the stream may close on the peer's END_STREAM before the reset is sent.
                failStream(s, .reset(errorCode: NGHTTP2_PROTOCOL_ERROR.rawValue))
            } else {
                failStream(s, code == NGHTTP2_REFUSED_STREAM.rawValue ? (aboveGoAway ? .goAway(errorCode: goAwayErrorCode) : .refused)
                           : .reset(errorCode: code))
            }
        }
        // No need to clear the stream's user data: nghttp2 frees a client's stream right after this callback.
        if streamID == lastStreamID { lastSlot = nil }
        releaseWhenWritten(UnsafeMutableRawPointer(s))
    }

    override func releaseSlot(_ slot: UnsafeMutableRawPointer) {
        slots.release(slot.assumingMemoryBound(to: ClientSlot.self))
    }

    override func didClose(_ error: TransportError) {
        judged.removeAll()
        handshakeTimer = nil
        isConnected = false
        lastSlot = nil
        // After a GOAWAY, the streams above its last id were never processed: they end as refused by
        // it, as nghttp2 ends them when it reads the GOAWAY or next sends (the close may come first,
        // read in the same turn as the peer's last frames). A stream up to the last id was cut off.
        let graceful = goAwayReceived && !goAwaySentForError && error.kind != .protocolError
        var cutOff = false
        var i = 0
        while i < slots.count {
            let s = slots[i]
            i += 1
            if s.pointee.active && !s.pointee.done {
                if graceful && s.pointee.streamID > goAwayLastStreamID {
                    failStream(s, .goAway(errorCode: goAwayErrorCode))
                } else {
                    cutOff = true
                    failStream(s, error.kind == .protocolError ? .protocolError(code: error.code) : .connectionLost)
                }
            }
            slots.release(s)
        }
        endedByGoAway = graceful && !cutOff
        if everConnected {
            if !connectFailed { delegate?.connectionDidClose(self, error: error) }
        } else if !connectFailed && error.kind != .closedLocally {
            // The peer hung up (or broke the protocol) before its SETTINGS: the connect failed. Without
            // this the handshake timer, cancelled above, would leave the owner waiting for an event.
            connectFailed = true
            delegate?.connection(self, didFailToConnect: error)
        }
    }

    /// Submits a request: `fill` sets the per-request values and the body (see `HTTP2RequestWriter`).
    ///
    /// Returns the stream id. Throws (without allocating) when no stream is free, when not connected,
    /// or when a per-request value is missing. The response or failure comes to the delegate with `context`.
    /// `submittedAt` (monotonic ns) is the stream's `timing.submitted`; 0 reads the clock, a caller
    /// submitting a batch passes the one time it read.
    @discardableResult
    public func submit(_ block: HTTP2HeaderBlock, context: UInt64, submittedAt: UInt64 = 0,
                       _ fill: (inout HTTP2RequestWriter) -> Void) throws(HTTP2SubmitError) -> Int32 {
        guard isConnected, let session, !isClosed else { throw .notConnected }
        let limit = min(peerSettings.maxConcurrentStreams, configuration.maxConcurrentStreams)
        if inFlight >= limit { throw .noStreamAvailable(inFlight: inFlight, limit: limit) }
        let bodyCapacity = configuration.slotBodyCapacity
        let s = slots.acquire { ClientSlot(bodyCapacity: bodyCapacity) }
        s.pointee.values.count = 0
        for k in 0..<block.perRequestFieldCount { s.pointee.valueRefs[2 * k + 1] = -1 }
        var w = HTTP2RequestWriter(slot: s)
        fill(&w)
        let mode = w.mode
        if w.tooLarge >= 0 {
            slots.release(s)
            throw .bodyTooLarge(length: w.tooLarge, capacity: s.pointee.body.count)
        }
        let nv = scratchNV(count: block.count)
        nv.update(from: block.template, count: block.count)
        let indexesUniqueNames = !block.uniqueIndex.isEmpty && uniqueNamesIndexed != ObjectIdentifier(block)
        if indexesUniqueNames {
            var u = 0
            while u < block.uniqueIndex.count {
                nv[block.uniqueIndex[u]].flags &= ~UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
                u += 1
            }
        }
        // Index loops, not for-in: unspecialized iterators allocate coroutine frames in debug builds.
        var k = 0
        while k < block.dynamicIndex.count {
            let i = block.dynamicIndex[k]
            defer { k += 1 }
            let len = s.pointee.valueRefs[2 * k + 1]
            if len < 0 {
                slots.release(s)
                throw .missingValue(field: k)
            }
            nv[i].value = (s.pointee.values.base + s.pointee.valueRefs[2 * k]).assumingMemoryBound(to: UInt8.self)
            nv[i].valuelen = len
        }
        s.pointee.respStore.count = 0
        s.pointee.respRefs.count = 0
        s.pointee.respBody.count = 0
        s.pointee.respBodyLength = 0
        s.pointee.status = 0
        s.pointee.message = block.responseMessage ?? ResponseMessageRules.method(nv, block.count)
        s.pointee.done = false
        s.pointee.context = context
        s.pointee.timing = HTTP2StreamTiming(submitted: submittedAt != 0 ? submittedAt : loop.now, headersSent: 0, responseHeadersReceived: 0, completed: 0)
        let ud = UnsafeMutableRawPointer(s)
        let id: Int32
        if mode == .none {
            id = nghttp2_submit_request(session, nil, nv, block.count, nil, ud)
        } else {
            var prd = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: ClientSlot.cursor(s)),
                read_callback: mode == .copied ? HTTP2Session.copyRead : HTTP2Session.noCopyRead)
            id = nghttp2_submit_request(session, nil, nv, block.count, &prd, ud)
        }
        if id < 0 {
            slots.release(s)
            throw .nghttp2(code: id)
        }
        s.pointee.streamID = id
        if indexesUniqueNames { uniqueNamesIndexed = ObjectIdentifier(block) }
        inFlight += 1
        scheduleFlush()
        return id
    }

    /// Sends GOAWAY (NO_ERROR) and closes once in-flight streams finish.
    public func shutdownGracefully() {
        guard let session, !isClosed else { return }
        isConnected = false
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue),
                              nghttp2_session_get_last_proc_stream_id(session), 0, nil, 0)
        scheduleFlush()
    }

    /// Closes the socket now; open streams are reported failed (`.connectionLost`), then `connectionDidClose`.
    public func close() {
        if isClosed { return }
        fail(TransportError(kind: .closedLocally, code: 0, function: "close"))
    }
}

@available(*, unavailable) extension HTTP2ClientConnection: Sendable {}
