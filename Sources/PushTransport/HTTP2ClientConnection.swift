import CNGHTTP2
import CUV

/// Settings of an `HTTP2ClientConnection`.
public struct HTTP2ClientConfiguration: Sendable {
    /// Local cap on streams in flight; the effective limit is min(this, the peer's SETTINGS_MAX_CONCURRENT_STREAMS).
    public var maxConcurrentStreams: Int = 1000
    /// Bytes of preallocated body memory per stream slot (zero-copy mode writes the payload here).
    public var slotBodyCapacity: Int = 8 * 1024
    /// Bounds the TCP connect plus the wait for the peer's first SETTINGS.
    public var connectTimeoutMilliseconds: UInt64 = 5000
    /// SETTINGS_INITIAL_WINDOW_SIZE announced to the peer (how much response body it may send per stream).
    public var initialWindowSize: Int = 1 << 20
    /// Connection-level receive window announced with a WINDOW_UPDATE at start.
    public var connectionWindowSize: Int = 16 << 20
    /// Bytes of the per-connection staging buffer (HEADERS, SETTINGS, DATA frame headers).
    public var stagingCapacity: Int = 64 * 1024
    /// iovecs per write batch (each zero-copy DATA frame uses one for its body).
    public var iovCapacity: Int = 1024
    /// Whether responses carry their header fields (`HTTP2Response.headers`). A caller that needs only
    /// the status and the body turns this off and saves copying every field of every response.
    public var keepsResponseHeaders: Bool = true
    /// Creates the defaults.
    public init() {}
}

/// Timestamps of one stream, monotonic ns (`EventLoop.nowNanoseconds()`); 0 when it did not happen.
public struct HTTP2StreamTiming: Sendable {
    /// When `submit` was called.
    public var submitted: UInt64
    /// When the request HEADERS frame was handed to the socket batch.
    public var headersSent: UInt64
    /// When the response HEADERS began to arrive.
    public var responseHeadersReceived: UInt64
    /// When the response ended (END_STREAM received) or the stream failed.
    public var completed: UInt64
}

/// A complete response, delivered to `HTTP2ClientDelegate`. Views are valid during the callback only.
public struct HTTP2Response {
    /// The stream id.
    public var streamID: Int32
    /// The caller's context given to `submit`.
    public var context: UInt64
    /// The `:status` value.
    public var status: Int
    /// The response header fields (pseudo-headers excluded).
    public var headers: HTTP2HeaderList
    /// The response body.
    public var body: UnsafeRawBufferPointer
    /// Timestamps of the stream.
    public var timing: HTTP2StreamTiming
}

/// Why a stream ended without a response.
public enum HTTP2StreamFailureReason: Sendable, Equatable {
    /// The peer reset the stream (RST_STREAM) with this HTTP/2 error code.
    case reset(errorCode: UInt32)
    /// The peer refused the stream (REFUSED_STREAM, or above a GOAWAY's last stream id): safe to retry.
    case refused
    /// The connection closed with the stream open.
    case connectionLost
    /// The request could not be sent (nghttp2 error code).
    case notSent(code: Int32)
}

/// A stream that ended without a response.
public struct HTTP2StreamFailure: Sendable {
    /// The stream id (0 if never assigned).
    public var streamID: Int32
    /// The caller's context given to `submit`.
    public var context: UInt64
    /// Why.
    public var reason: HTTP2StreamFailureReason
    /// Timestamps of the stream.
    public var timing: HTTP2StreamTiming
}

/// Receives a client connection's events, on the loop thread. All but `didReceive` have empty defaults.
public protocol HTTP2ClientDelegate: AnyObject {
    /// TCP connected and the peer's first SETTINGS arrived: requests may be submitted.
    func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings)
    /// The connect failed or timed out (e.g. ECONNREFUSED); the connection is closed.
    func connection(_ connection: HTTP2ClientConnection, didFailToConnect error: TransportError)
    /// The peer sent new SETTINGS (e.g. a lower max concurrent streams).
    func connection(_ connection: HTTP2ClientConnection, didUpdatePeerSettings settings: HTTP2Settings)
    /// The peer sent GOAWAY; no more submits are accepted on this connection.
    func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway goAway: HTTP2GoAway)
    /// A complete response.
    func connection(_ connection: HTTP2ClientConnection, didReceive response: HTTP2Response)
    /// A stream ended without a response.
    func connection(_ connection: HTTP2ClientConnection, streamDidFail failure: HTTP2StreamFailure)
    /// The connection closed (after a successful connect), with the reason; open streams were reported failed first.
    func connectionDidClose(_ connection: HTTP2ClientConnection, error: TransportError)
}

extension HTTP2ClientDelegate {
    /// Default: ignore.
    public func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings) {}
    /// Default: ignore.
    public func connection(_ connection: HTTP2ClientConnection, didFailToConnect error: TransportError) {}
    /// Default: ignore.
    public func connection(_ connection: HTTP2ClientConnection, didUpdatePeerSettings settings: HTTP2Settings) {}
    /// Default: ignore.
    public func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway goAway: HTTP2GoAway) {}
    /// Default: ignore.
    public func connection(_ connection: HTTP2ClientConnection, streamDidFail failure: HTTP2StreamFailure) {}
    /// Default: ignore.
    public func connectionDidClose(_ connection: HTTP2ClientConnection, error: TransportError) {}
}

/// Per-stream preallocated state of the client, in manually allocated memory at a stable address
/// (the nghttp2 stream user data): body slot, per-request values, response storage.
struct ClientSlot {
    var cursor = BodyCursor(base: nil, count: 0, sent: 0)
    var body: UnsafeMutableRawBufferPointer
    var values = ByteStore(capacity: 256)
    /// (offset, length) per per-request field; length -1 = unset.
    var valueRefs: UnsafeMutablePointer<Int>
    static let maxValues = 32
    var respStore = ByteStore(capacity: 256)
    var respRefs = HeaderRefList(capacity: 16)
    var respBody = ByteStore(capacity: 256)
    var active = false
    var done = false
    var context: UInt64 = 0
    var streamID: Int32 = 0
    var status = 0
    var timing = HTTP2StreamTiming(submitted: 0, headersSent: 0, responseHeadersReceived: 0, completed: 0)

    static func make(bodyCapacity: Int) -> UnsafeMutablePointer<ClientSlot> {
        let p = UnsafeMutablePointer<ClientSlot>.allocate(capacity: 1)
        p.initialize(to: ClientSlot(body: .allocate(byteCount: max(bodyCapacity, 0), alignment: 16),
                                    valueRefs: .allocate(capacity: 2 * maxValues)))
        return p
    }

    static func destroy(_ p: UnsafeMutablePointer<ClientSlot>) {
        p.pointee.body.deallocate()
        p.pointee.values.free()
        p.pointee.valueRefs.deallocate()
        p.pointee.respStore.free()
        p.pointee.respRefs.free()
        p.pointee.respBody.free()
        p.deinitialize(count: 1)
        p.deallocate()
    }

    static let cursorOffset = MemoryLayout<ClientSlot>.offset(of: \ClientSlot.cursor)!
    @inline(__always) static func cursor(_ p: UnsafeMutablePointer<ClientSlot>) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(p) + cursorOffset
    }
}

/// Fills one request inside `HTTP2ClientConnection.submit`: per-request header values and the body.
///
/// Body modes: write into `body` and call `setBodyLength` (zero-copy: the slot is sent with NO_COPY);
/// `copyBody` (caller memory copied by nghttp2's read callback, must stay valid until the stream ends);
/// `borrowBody` (caller memory sent with NO_COPY, must stay valid until the stream ends).
/// No body call = a request without body (END_STREAM on HEADERS).
public struct HTTP2RequestWriter: ~Copyable {
    enum Mode { case none, slot, copied, borrowed }
    let slot: UnsafeMutablePointer<ClientSlot>
    var mode = Mode.none
    var tooLarge = -1

    init(slot: UnsafeMutablePointer<ClientSlot>) { self.slot = slot }

    /// The stream slot's preallocated body memory (`HTTP2ClientConfiguration.slotBodyCapacity` bytes).
    public var body: UnsafeMutableRawBufferPointer { slot.pointee.body }

    /// Sends the first `length` bytes of `body` without copying. A length beyond the slot capacity
    /// makes `submit` throw `.bodyTooLarge`.
    public mutating func setBodyLength(_ length: Int) {
        if length < 0 || length > slot.pointee.body.count {
            tooLarge = length
            return
        }
        slot.pointee.cursor = BodyCursor(base: UnsafeRawPointer(slot.pointee.body.baseAddress), count: length, sent: 0)
        mode = .slot
    }

    /// Sends `bytes` through nghttp2's read callback (copied into its frame buffer when framed).
    public mutating func copyBody(_ bytes: UnsafeRawBufferPointer) {
        slot.pointee.cursor = BodyCursor(base: bytes.baseAddress, count: bytes.count, sent: 0)
        mode = .copied
    }

    /// Sends `bytes` without copying; they must stay valid and unchanged until the stream ends.
    public mutating func borrowBody(_ bytes: UnsafeRawBufferPointer) {
        slot.pointee.cursor = BodyCursor(base: bytes.baseAddress, count: bytes.count, sent: 0)
        mode = .borrowed
    }

    /// Sets per-request field `field` (copied into the slot).
    public mutating func setValue(_ field: Int, _ bytes: UnsafeRawBufferPointer) {
        precondition(field >= 0 && field < ClientSlot.maxValues, "per-request field \(field) out of range")
        let off = slot.pointee.values.append(bytes.baseAddress, bytes.count)
        slot.pointee.valueRefs[2 * field] = off
        slot.pointee.valueRefs[2 * field + 1] = bytes.count
    }

    /// Sets per-request field `field` from a static string.
    public mutating func setValue(_ field: Int, _ s: StaticString) {
        setValue(field, UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// Sets per-request field `field` from a String (no allocation for native strings).
    public mutating func setValue(_ field: Int, _ s: String) {
        var s = s
        s.withUTF8 { setValue(field, UnsafeRawBufferPointer($0)) }
    }

    /// Writes per-request field `field` in place: `write` gets up to `capacity` bytes and returns the length used.
    public mutating func setValue(_ field: Int, capacity: Int, _ write: (UnsafeMutableRawBufferPointer) -> Int) {
        precondition(field >= 0 && field < ClientSlot.maxValues, "per-request field \(field) out of range")
        slot.pointee.values.reserve(capacity)
        let off = slot.pointee.values.count
        let n = write(UnsafeMutableRawBufferPointer(start: slot.pointee.values.base + off, count: capacity))
        precondition(n >= 0 && n <= capacity, "value writer returned \(n) for capacity \(capacity)")
        slot.pointee.values.count += n
        slot.pointee.valueRefs[2 * field] = off
        slot.pointee.valueRefs[2 * field + 1] = n
    }
}

/// An HTTP/2 client connection over h2c (prior knowledge) on one `EventLoop`.
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
public final class HTTP2ClientConnection: HTTP2Session {
    /// The configuration given at init.
    public let configuration: HTTP2ClientConfiguration
    /// Receives events; held weakly.
    public weak var delegate: HTTP2ClientDelegate?
    private var slots: [UnsafeMutablePointer<ClientSlot>] = []
    private var freeSlots: [UnsafeMutablePointer<ClientSlot>] = []
    private var scratchNV: UnsafeMutablePointer<nghttp2_nv>
    private var scratchNVCapacity = 64
    private var handshakeTimer: LoopTimer?
    /// Streams submitted and not yet answered or failed.
    public private(set) var inFlight = 0
    /// True once the peer's first SETTINGS arrived and until GOAWAY or close.
    public private(set) var isConnected = false
    private var everConnected = false
    private var goAwayReceived = false
    private var connectFailed = false
    /// The peer's settings now in force (defaults until the first SETTINGS arrives).
    public private(set) var peerSettings: HTTP2Settings

    /// Creates an unconnected client on `loop`.
    public init(loop: EventLoop, configuration: HTTP2ClientConfiguration = HTTP2ClientConfiguration(),
                delegate: HTTP2ClientDelegate?) {
        self.configuration = configuration
        self.delegate = delegate
        scratchNV = .allocate(capacity: 64)
        peerSettings = HTTP2Settings(maxConcurrentStreams: 100, initialWindowSize: 65535, maxFrameSize: 16384,
                                     headerTableSize: 4096, maxHeaderListSize: Int(UInt32.max))
        super.init(loop: loop, stagingCapacity: configuration.stagingCapacity, iovCapacity: configuration.iovCapacity)
        slots.reserveCapacity(min(configuration.maxConcurrentStreams * 2, 1 << 16))
        freeSlots.reserveCapacity(min(configuration.maxConcurrentStreams * 2, 1 << 16))
    }

    deinit {
        scratchNV.deallocate()
        for p in slots { ClientSlot.destroy(p) }
    }

    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS now in force.
    public var peerMaxConcurrentStreams: Int { peerSettings.maxConcurrentStreams }

    /// Streams that may be submitted now: min(peer limit, local limit) - inFlight (0 when not connected).
    public var availableStreams: Int {
        isConnected ? max(0, min(peerSettings.maxConcurrentStreams, configuration.maxConcurrentStreams) - inFlight) : 0
    }

    /// Bytes received so far (all frames).
    public var bytesIn: UInt64 { transport?.bytesIn ?? 0 }
    /// Bytes written so far.
    public var bytesOut: UInt64 { transport?.bytesOut ?? 0 }

    /// Starts connecting to a numeric IPv4/IPv6 address; the delegate hears `connectionDidConnect` or
    /// `didFailToConnect` within `connectTimeoutMilliseconds`.
    public func connect(host: String, port: Int) {
        precondition(transport == nil && !isClosed, "connect called twice")
        let t = TCPTransport(loop: loop)
        t.owner = self
        transport = t
        let timer = LoopTimer(loop: loop) { [unowned self] in
            self.failConnect(TransportError(kind: .connectTimeout, code: 0, function: "HTTP/2 handshake"))
        }
        timer.start(afterMilliseconds: configuration.connectTimeoutMilliseconds)
        handshakeTimer = timer
        t.connect(host: host, port: port, timeoutMilliseconds: configuration.connectTimeoutMilliseconds)
    }

    private func failConnect(_ error: TransportError) {
        handshakeTimer = nil
        if connectFailed || everConnected { return }
        connectFailed = true
        let t = transport
        transport = nil
        t?.owner = nil
        t?.close(error, notify: false)
        fail(error)
        delegate?.connection(self, didFailToConnect: error)
    }

    override func transportDidFailToConnect(_ error: TransportError) {
        transport = nil
        failConnect(error)
    }

    override func transportDidConnect() {
        var cbs: OpaquePointer?
        nghttp2_session_callbacks_new(&cbs)
        defer { nghttp2_session_callbacks_del(cbs) }
        HTTP2Session.installSendCallbacks(cbs!)
        HTTP2ClientConnection.installReceiveCallbacks(cbs!)
        var opt: OpaquePointer?
        nghttp2_option_new(&opt)
        defer { nghttp2_option_del(opt) }
        // Our own cap enforces the peer's limit; nghttp2's default (100 until SETTINGS) would only queue.
        nghttp2_option_set_peer_max_concurrent_streams(opt, 100)
        // Closed streams are kept only for the priority tree, which we do not use.
        nghttp2_option_set_no_closed_streams(opt, 1)
        var mem = memory.table
        var s: OpaquePointer?
        let r = nghttp2_session_client_new3(&s, cbs, userData, opt, &mem)
        if r != 0 {
            failConnect(TransportError(kind: .protocolError, code: r, function: "nghttp2_session_client_new3"))
            return
        }
        session = s
        var iv = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                   value: UInt32(min(configuration.initialWindowSize, Int(Int32.max)))),
        ]
        nghttp2_submit_settings(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), &iv, iv.count)
        if configuration.connectionWindowSize > 65535 {
            nghttp2_session_set_local_window_size(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0,
                                                  Int32(min(configuration.connectionWindowSize, Int(Int32.max))))
        }
        transport?.startReading()
        scheduleFlush()
    }

    /// The one way back from nghttp2's user_data: a guaranteed reference, so no retain/release per callback.
    @inline(__always)
    static func withClient<R>(_ ud: UnsafeMutableRawPointer?, _ body: (HTTP2ClientConnection) -> R) -> R {
        Unmanaged<HTTP2ClientConnection>.fromOpaque(ud!)._withUnsafeGuaranteedRef(body)
    }

    static func installReceiveCallbacks(_ cbs: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs) { _, frame, ud in
            HTTP2ClientConnection.withClient(ud) { $0.beginHeaders(frame!) }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(cbs) { _, frame, name, namelen, value, valuelen, _, ud in
            HTTP2ClientConnection.withClient(ud) { $0.header(frame!, name!, namelen, value!, valuelen) }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs) { _, _, streamID, data, len, ud in
            HTTP2ClientConnection.withClient(ud) { $0.dataChunk(streamID, data!, len) }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs) { _, frame, ud in
            HTTP2ClientConnection.withClient(ud) { $0.frameReceived(frame!) }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(cbs) { _, frame, ud in
            if pb_frame_type(frame!) == UInt8(NGHTTP2_HEADERS.rawValue) {
                HTTP2ClientConnection.withClient(ud) { $0.headersSent(pb_frame_stream_id(frame!)) }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs) { _, frame, code, ud in
            if pb_frame_type(frame!) == UInt8(NGHTTP2_HEADERS.rawValue) {
                HTTP2ClientConnection.withClient(ud) { $0.headersNotSent(pb_frame_stream_id(frame!), code) }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs) { _, streamID, code, ud in
            HTTP2ClientConnection.withClient(ud) { $0.streamClosed(streamID, code) }
            return 0
        }
    }

    @inline(__always) private func slot(for streamID: Int32) -> UnsafeMutablePointer<ClientSlot>? {
        nghttp2_session_get_stream_user_data(session, streamID)?.assumingMemoryBound(to: ClientSlot.self)
    }

    private func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) {
        guard let s = slot(for: pb_frame_stream_id(frame)) else { return }
        if s.pointee.timing.responseHeadersReceived == 0 { s.pointee.timing.responseHeadersReceived = ioTime }
    }

    private func header(_ frame: UnsafePointer<nghttp2_frame>, _ name: UnsafePointer<UInt8>, _ namelen: Int,
                        _ value: UnsafePointer<UInt8>, _ valuelen: Int) {
        let isStatus = namelen == 7 && name[0] == UInt8(ascii: ":")
        // Without kept headers only :status matters: skip the stream lookup for every other field.
        guard isStatus || configuration.keepsResponseHeaders, let s = slot(for: pb_frame_stream_id(frame)) else { return }
        if isStatus {
            // ":status": three ASCII digits.
            var st = 0
            for i in 0..<valuelen { st = st * 10 + Int(value[i] &- 48) }
            s.pointee.status = st
            return
        }
        let no = s.pointee.respStore.append(name, namelen)
        let vo = s.pointee.respStore.append(value, valuelen)
        s.pointee.respRefs.append(HeaderRef(nameOffset: Int32(no), nameLength: Int32(namelen),
                                    valueOffset: Int32(vo), valueLength: Int32(valuelen)))
    }

    private func dataChunk(_ streamID: Int32, _ data: UnsafePointer<UInt8>, _ len: Int) {
        guard let s = slot(for: streamID) else { return }
        s.pointee.respBody.append(data, len)
    }

    private func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
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
            isConnected = false
            delegate?.connection(self, didReceiveGoAway: HTTP2Session.goAway(from: frame))
        case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
            if flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0, let s = slot(for: pb_frame_stream_id(frame)) {
                complete(s)
            }
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
                                     body: s.pointee.respBody.bytes, timing: s.pointee.timing)
        delegate?.connection(self, didReceive: response)
    }

    private func failStream(_ s: UnsafeMutablePointer<ClientSlot>, _ reason: HTTP2StreamFailureReason) {
        if s.pointee.done { return }
        s.pointee.done = true
        inFlight -= 1
        s.pointee.timing.completed = loop.now
        delegate?.connection(self, streamDidFail: HTTP2StreamFailure(streamID: s.pointee.streamID, context: s.pointee.context,
                                                                     reason: reason, timing: s.pointee.timing))
    }

    private func headersSent(_ streamID: Int32) {
        guard let s = slot(for: streamID) else { return }
        s.pointee.timing.headersSent = ioTime
    }

    private func headersNotSent(_ streamID: Int32, _ code: Int32) {
        guard let s = slot(for: streamID) else { return }
        failStream(s, code == NGHTTP2_ERR_START_STREAM_NOT_ALLOWED.rawValue ? .refused : .notSent(code: code))
    }

    private func streamClosed(_ streamID: Int32, _ code: UInt32) {
        guard let s = slot(for: streamID) else { return }
        if !s.pointee.done {
            failStream(s, code == NGHTTP2_REFUSED_STREAM.rawValue ? .refused
                       : code == 0 ? .reset(errorCode: 0) : .reset(errorCode: code))
        }
        nghttp2_session_set_stream_user_data(session, streamID, nil)
        releaseWhenWritten(UnsafeMutableRawPointer(s))
    }

    override func releaseSlot(_ slot: UnsafeMutableRawPointer) {
        let s = slot.assumingMemoryBound(to: ClientSlot.self)
        if !s.pointee.active { return }
        s.pointee.active = false
        freeSlots.append(s)
    }

    override func didClose(_ error: TransportError) {
        handshakeTimer = nil
        isConnected = false
        var i = 0
        while i < slots.count {
            let s = slots[i]
            i += 1
            if s.pointee.active && !s.pointee.done { failStream(s, .connectionLost) }
            if s.pointee.active { s.pointee.active = false; freeSlots.append(s) }
        }
        if everConnected && !connectFailed { delegate?.connectionDidClose(self, error: error) }
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
        let s = acquireSlot()
        s.pointee.values.count = 0
        for k in 0..<block.perRequestFieldCount { s.pointee.valueRefs[2 * k + 1] = -1 }
        var w = HTTP2RequestWriter(slot: s)
        fill(&w)
        let mode = w.mode
        if w.tooLarge >= 0 {
            s.pointee.active = false
            freeSlots.append(s)
            throw .bodyTooLarge(length: w.tooLarge, capacity: s.pointee.body.count)
        }
        if block.count > scratchNVCapacity {
            scratchNV.deallocate()
            scratchNVCapacity = block.count * 2
            scratchNV = .allocate(capacity: scratchNVCapacity)
        }
        scratchNV.update(from: block.template, count: block.count)
        // Index loops, not for-in: unspecialized iterators allocate coroutine frames in debug builds.
        var k = 0
        while k < block.dynamicIndex.count {
            let i = block.dynamicIndex[k]
            defer { k += 1 }
            let len = s.pointee.valueRefs[2 * k + 1]
            if len < 0 {
                s.pointee.active = false
                freeSlots.append(s)
                throw .missingValue(field: k)
            }
            scratchNV[i].value = (s.pointee.values.base + s.pointee.valueRefs[2 * k]).assumingMemoryBound(to: UInt8.self)
            scratchNV[i].valuelen = len
        }
        s.pointee.respStore.count = 0
        s.pointee.respRefs.count = 0
        s.pointee.respBody.count = 0
        s.pointee.status = 0
        s.pointee.done = false
        s.pointee.context = context
        s.pointee.timing = HTTP2StreamTiming(submitted: submittedAt != 0 ? submittedAt : loop.now, headersSent: 0, responseHeadersReceived: 0, completed: 0)
        let ud = UnsafeMutableRawPointer(s)
        let id: Int32
        if mode == .none {
            id = nghttp2_submit_request(session, nil, scratchNV, block.count, nil, ud)
        } else {
            var prd = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: ClientSlot.cursor(s)),
                read_callback: mode == .copied ? HTTP2Session.copyRead : HTTP2Session.noCopyRead)
            id = nghttp2_submit_request(session, nil, scratchNV, block.count, &prd, ud)
        }
        if id < 0 {
            s.pointee.active = false
            freeSlots.append(s)
            throw .nghttp2(code: id)
        }
        s.pointee.streamID = id
        inFlight += 1
        scheduleFlush()
        return id
    }

    private func acquireSlot() -> UnsafeMutablePointer<ClientSlot> {
        if let s = freeSlots.popLast() {
            s.pointee.active = true
            return s
        }
        let s = ClientSlot.make(bodyCapacity: configuration.slotBodyCapacity)
        slots.append(s)
        s.pointee.active = true
        return s
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
