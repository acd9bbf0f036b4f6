import CNGHTTP2
import CUV

/// Settings of an `HTTP2Server` (applied to every connection it accepts).
public struct HTTP2ServerConfiguration: Sendable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced to clients (changeable later with `updateSettings`).
    public var maxConcurrentStreams: Int = 1000
    /// SETTINGS_INITIAL_WINDOW_SIZE announced to clients (request body bytes per stream before a WINDOW_UPDATE).
    public var initialWindowSize: Int = 1 << 20
    /// Connection-level receive window announced at start.
    public var connectionWindowSize: Int = 16 << 20
    /// Set SO_REUSEPORT before bind so several loops (threads) can listen on one port.
    public var reusePort = false
    /// listen(2) backlog.
    public var backlog: Int32 = 1024
    /// Bytes of the per-connection staging buffer.
    public var stagingCapacity: Int = 64 * 1024
    /// iovecs per write batch.
    public var iovCapacity: Int = 1024
    /// Request bodies larger than this are refused with RST_STREAM (REFUSED_STREAM is wrong; CANCEL is used).
    public var maxRequestBodySize: Int = 1 << 20
    /// Creates the defaults.
    public init() {}
}

/// A complete request given to `HTTP2ServerDelegate`. Views are valid during the callback only;
/// answer with `connection.respond(to: streamID, …)` now or later.
public struct HTTP2ServerRequest {
    /// The connection the request came on (respond through it).
    public let connection: HTTP2ServerConnection
    /// The stream id.
    public let streamID: Int32
    /// `:method`.
    public var method: UnsafeRawBufferPointer
    /// `:path`.
    public var path: UnsafeRawBufferPointer
    /// `:authority` (empty if absent; a `host` header may be among `headers`).
    public var authority: UnsafeRawBufferPointer
    /// `:scheme`.
    public var scheme: UnsafeRawBufferPointer
    /// Regular header fields.
    public var headers: HTTP2HeaderList
    /// The request body.
    public var body: UnsafeRawBufferPointer
    /// When the request completed (END_STREAM received), monotonic ns.
    public var receivedAt: UInt64
}

/// Receives a server's events on the loop thread. All but `didReceive` have empty defaults.
public protocol HTTP2ServerDelegate: AnyObject {
    /// A complete request.
    func server(_ server: HTTP2Server, didReceive request: HTTP2ServerRequest)
    /// A connection was accepted.
    func server(_ server: HTTP2Server, connectionDidOpen connection: HTTP2ServerConnection)
    /// A connection closed (peer close, error, GOAWAY exchange done, or local close).
    func server(_ server: HTTP2Server, connectionDidClose connection: HTTP2ServerConnection, error: TransportError)
    /// A client sent SETTINGS.
    func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, didUpdatePeerSettings settings: HTTP2Settings)
    /// A client sent GOAWAY.
    func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, didReceiveGoAway goAway: HTTP2GoAway)
    /// A stream closed before it was answered (client reset, connection loss); `respond` to it now returns false.
    func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, streamDidClose streamID: Int32, errorCode: UInt32)
}

extension HTTP2ServerDelegate {
    /// Default: ignore.
    public func server(_ server: HTTP2Server, connectionDidOpen connection: HTTP2ServerConnection) {}
    /// Default: ignore.
    public func server(_ server: HTTP2Server, connectionDidClose connection: HTTP2ServerConnection, error: TransportError) {}
    /// Default: ignore.
    public func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, didUpdatePeerSettings settings: HTTP2Settings) {}
    /// Default: ignore.
    public func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, didReceiveGoAway goAway: HTTP2GoAway) {}
    /// Default: ignore.
    public func server(_ server: HTTP2Server, connection: HTTP2ServerConnection, streamDidClose streamID: Int32, errorCode: UInt32) {}
}

/// Per-stream preallocated state of the server, in manually allocated memory at a stable address:
/// the address is the nghttp2 stream user data, so callbacks reach it without a lookup, a retain or an
/// exclusivity check. The body cursor is the first thing nghttp2's data source points at.
struct ServerSlot {
    var cursor = BodyCursor(base: nil, count: 0, sent: 0)
    var reqStore = ByteStore(capacity: 512)
    var reqRefs = HeaderRefList(capacity: 16)
    /// (offset, length) of :method, :path, :authority, :scheme in reqStore.
    var pseudo: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
    var reqBody = ByteStore(capacity: 256)
    var respStore = ByteStore(capacity: 128)
    var respRefs = HeaderRefList(capacity: 8)
    var respBody = ByteStore(capacity: 128)
    var active = false
    var responded = false
    var streamID: Int32 = 0

    static func make() -> UnsafeMutablePointer<ServerSlot> {
        let p = UnsafeMutablePointer<ServerSlot>.allocate(capacity: 1)
        p.initialize(to: ServerSlot())
        return p
    }

    static func destroy(_ p: UnsafeMutablePointer<ServerSlot>) {
        p.pointee.reqStore.free()
        p.pointee.reqRefs.free()
        p.pointee.reqBody.free()
        p.pointee.respStore.free()
        p.pointee.respRefs.free()
        p.pointee.respBody.free()
        p.deinitialize(count: 1)
        p.deallocate()
    }

    mutating func reset() {
        reqStore.count = 0
        reqRefs.count = 0
        pseudo = (0, 0, 0, 0, 0, 0, 0, 0)
        reqBody.count = 0
        respStore.count = 0
        respRefs.count = 0
        respBody.count = 0
        responded = false
    }

    static let cursorOffset = MemoryLayout<ServerSlot>.offset(of: \ServerSlot.cursor)!
    @inline(__always) static func cursor(_ p: UnsafeMutablePointer<ServerSlot>) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(p) + cursorOffset
    }
}

/// Adds response header fields inside `HTTP2ServerConnection.respond` (copied into the stream's storage).
public struct HTTP2ResponseHeaders: ~Copyable {
    let slot: UnsafeMutablePointer<ServerSlot>

    /// Adds a field (name must be lowercase).
    public mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let no = slot.pointee.respStore.append(name.baseAddress, name.count)
        let vo = slot.pointee.respStore.append(value.baseAddress, value.count)
        slot.pointee.respRefs.append(HeaderRef(nameOffset: Int32(no), nameLength: Int32(name.count),
                                       valueOffset: Int32(vo), valueLength: Int32(value.count)))
    }

    /// Adds a field whose value is never put in the HPACK dynamic table (sent as a literal): for a
    /// value that is new on every response (e.g. `apns-id`), where indexing only churns the table.
    public mutating func addNeverIndexed(_ name: StaticString, _ value: UnsafeRawBufferPointer) {
        let no = slot.pointee.respStore.append(name.utf8Start, name.utf8CodeUnitCount)
        let vo = slot.pointee.respStore.append(value.baseAddress, value.count)
        slot.pointee.respRefs.append(HeaderRef(nameOffset: Int32(no), nameLength: Int32(name.utf8CodeUnitCount),
                                               valueOffset: Int32(vo), valueLength: Int32(value.count),
                                               nvFlags: UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)))
    }

    /// Adds a field with a static name.
    public mutating func add(_ name: StaticString, _ value: UnsafeRawBufferPointer) {
        add(name: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), value: value)
    }

    /// Adds a field with static name and value.
    public mutating func add(_ name: StaticString, _ value: StaticString) {
        add(name, UnsafeRawBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount))
    }

    /// Adds a field with a String value (no allocation for native strings).
    public mutating func add(_ name: StaticString, _ value: String) {
        var v = value
        v.withUTF8 { add(name, UnsafeRawBufferPointer($0)) }
    }
}

/// One accepted HTTP/2 connection of an `HTTP2Server`; respond to its requests, change its SETTINGS,
/// send GOAWAY or close it.
public final class HTTP2ServerConnection: HTTP2Session {
    // unowned(unsafe): no refcount check per callback; the server detaches its connections in its
    // deinit (and on close) before it goes away, and `detached` guards every use after that.
    unowned(unsafe) let owner: HTTP2Server
    var detached = false
    /// The server that accepted it (nil once the server is gone).
    public var server: HTTP2Server? { detached ? nil : owner }
    /// A number unique within the server (1, 2, …).
    public let id: UInt64
    private var slots: [UnsafeMutablePointer<ServerSlot>] = []
    private var freeSlots: [UnsafeMutablePointer<ServerSlot>] = []
    /// The slot of the HEADERS block being received (saves a stream lookup per header field).
    private var headerSlot: UnsafeMutablePointer<ServerSlot>?
    private var headerStreamID: Int32 = 0
    private var scratchNV: UnsafeMutablePointer<nghttp2_nv>
    private var scratchNVCapacity = 32
    /// Requests received and not yet closed.
    public private(set) var openStreams = 0
    private let maxRequestBodySize: Int
    private var peerSettingsSeen = false

    init(server: HTTP2Server, id: UInt64, transport: TCPTransport) {
        self.owner = server
        self.id = id
        maxRequestBodySize = server.configuration.maxRequestBodySize
        scratchNV = .allocate(capacity: 32)
        let c = server.configuration
        super.init(loop: server.loop, stagingCapacity: c.stagingCapacity, iovCapacity: c.iovCapacity)
        slots.reserveCapacity(min(c.maxConcurrentStreams * 2, 1 << 16))
        freeSlots.reserveCapacity(min(c.maxConcurrentStreams * 2, 1 << 16))
        self.transport = transport
        transport.owner = self
    }

    deinit {
        scratchNV.deallocate()
        for p in slots { ServerSlot.destroy(p) }
    }

    func start() -> Bool {
        var cbs: OpaquePointer?
        nghttp2_session_callbacks_new(&cbs)
        defer { nghttp2_session_callbacks_del(cbs) }
        HTTP2Session.installSendCallbacks(cbs!)
        HTTP2ServerConnection.installReceiveCallbacks(cbs!)
        var opt: OpaquePointer?
        nghttp2_option_new(&opt)
        defer { nghttp2_option_del(opt) }
        // Closed streams are kept only for the priority tree, which we do not use: less work per stream.
        nghttp2_option_set_no_closed_streams(opt, 1)
        var mem = memory.table
        var s: OpaquePointer?
        if nghttp2_session_server_new3(&s, cbs, userData, opt, &mem) != 0 { return false }
        session = s
        let c = owner.configuration
        var iv = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                   value: UInt32(clamping: owner.currentMaxConcurrentStreams)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                   value: UInt32(min(c.initialWindowSize, Int(Int32.max)))),
        ]
        nghttp2_submit_settings(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), &iv, iv.count)
        if c.connectionWindowSize > 65535 {
            nghttp2_session_set_local_window_size(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0,
                                                  Int32(min(c.connectionWindowSize, Int(Int32.max))))
        }
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
        nghttp2_session_callbacks_set_on_header_callback(cbs) { _, frame, name, namelen, value, valuelen, _, ud in
            HTTP2ServerConnection.withServer(ud) { $0.header(frame!, name!, namelen, value!, valuelen) }
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

    @inline(__always) private func slot(for streamID: Int32) -> UnsafeMutablePointer<ServerSlot>? {
        if streamID == headerStreamID, let h = headerSlot { return h }
        return nghttp2_session_get_stream_user_data(session, streamID)?.assumingMemoryBound(to: ServerSlot.self)
    }

    private func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        if pb_frame_type(frame) != UInt8(NGHTTP2_HEADERS.rawValue)
            || pb_frame_headers_category(frame) != NGHTTP2_HCAT_REQUEST { return 0 }
        let s: UnsafeMutablePointer<ServerSlot>
        if let p = freeSlots.popLast() {
            s = p
        } else {
            s = ServerSlot.make()
            slots.append(s)
        }
        s.pointee.reset()
        s.pointee.active = true
        s.pointee.streamID = pb_frame_stream_id(frame)
        openStreams += 1
        headerSlot = s
        headerStreamID = s.pointee.streamID
        nghttp2_session_set_stream_user_data(session, s.pointee.streamID, UnsafeMutableRawPointer(s))
        return 0
    }

    private func header(_ frame: UnsafePointer<nghttp2_frame>, _ name: UnsafePointer<UInt8>, _ namelen: Int,
                        _ value: UnsafePointer<UInt8>, _ valuelen: Int) {
        guard let s = slot(for: pb_frame_stream_id(frame)) else { return }
        let vo = s.pointee.reqStore.append(value, valuelen)
        if namelen > 0 && name[0] == UInt8(ascii: ":") {
            switch (namelen, name[1]) {
            case (7, UInt8(ascii: "m")): s.pointee.pseudo.0 = vo; s.pointee.pseudo.1 = valuelen
            case (5, UInt8(ascii: "p")): s.pointee.pseudo.2 = vo; s.pointee.pseudo.3 = valuelen
            case (10, UInt8(ascii: "a")): s.pointee.pseudo.4 = vo; s.pointee.pseudo.5 = valuelen
            case (7, UInt8(ascii: "s")): s.pointee.pseudo.6 = vo; s.pointee.pseudo.7 = valuelen
            default: break
            }
            return
        }
        let no = s.pointee.reqStore.append(name, namelen)
        s.pointee.reqRefs.append(HeaderRef(nameOffset: Int32(no), nameLength: Int32(namelen),
                                   valueOffset: Int32(vo), valueLength: Int32(valuelen)))
    }

    private func dataChunk(_ streamID: Int32, _ data: UnsafePointer<UInt8>, _ len: Int) -> Int32 {
        guard let s = slot(for: streamID) else { return 0 }
        if s.pointee.reqBody.count + len > maxRequestBodySize {
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
            return 0
        }
        s.pointee.reqBody.append(data, len)
        return 0
    }

    private func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        let type = UInt32(pb_frame_type(frame))
        let flags = pb_frame_flags(frame)
        switch type {
        case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
            guard flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0,
                  let s = slot(for: pb_frame_stream_id(frame)) else { return }
            deliver(s)
        case NGHTTP2_SETTINGS.rawValue:
            if flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 { return }
            if peerSettingsSeen {
                owner.delegate?.server(owner, connection: self, didUpdatePeerSettings: remoteSettings())
            }
            peerSettingsSeen = true
        case NGHTTP2_GOAWAY.rawValue:
            owner.delegate?.server(owner, connection: self, didReceiveGoAway: HTTP2Session.goAway(from: frame))
        default:
            break
        }
    }

    private func deliver(_ s: UnsafeMutablePointer<ServerSlot>) {
        headerSlot = nil
        headerStreamID = 0
        owner.requestsReceived &+= 1
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
                body: s.pointee.reqBody.bytes, receivedAt: loop.now)
            owner.delegate?.server(owner, didReceive: req)
        }
    }

    private func streamClosed(_ streamID: Int32, _ code: UInt32) {
        guard let s = slot(for: streamID) else { return }
        if s == headerSlot { headerSlot = nil; headerStreamID = 0 }
        nghttp2_session_set_stream_user_data(session, streamID, nil)
        openStreams -= 1
        if !s.pointee.responded {
            s.pointee.responded = true
            owner.delegate?.server(owner, connection: self, streamDidClose: streamID, errorCode: code)
        }
        releaseWhenWritten(UnsafeMutableRawPointer(s))
    }

    override func releaseSlot(_ slot: UnsafeMutableRawPointer) {
        let s = slot.assumingMemoryBound(to: ServerSlot.self)
        if !s.pointee.active { return }
        s.pointee.active = false
        freeSlots.append(s)
    }

    override func transportDidRead(_ bytes: UnsafeRawBufferPointer) {
        owner.bytesIn &+= UInt64(bytes.count)
        super.transportDidRead(bytes)
    }

    override func didClose(_ error: TransportError) {
        headerSlot = nil
        var i = 0
        while i < slots.count {
            let s = slots[i]
            i += 1
            if !s.pointee.active { continue }
            s.pointee.active = false
            freeSlots.append(s)
            if !s.pointee.responded && !detached {
                s.pointee.responded = true
                owner.delegate?.server(owner, connection: self, streamDidClose: s.pointee.streamID,
                                        errorCode: NGHTTP2_CANCEL.rawValue)
            }
        }
        openStreams = 0
        if !detached { owner.connectionClosed(self, error) }
    }

    /// Answers stream `streamID`: `status`, header fields added by `headers` (copied), and `body` (copied).
    ///
    /// Returns false when the stream is gone (closed, reset, connection lost) or already answered.
    @discardableResult
    public func respond(to streamID: Int32, status: Int, body: UnsafeRawBufferPointer? = nil,
                        headers: (inout HTTP2ResponseHeaders) -> Void = { _ in }) -> Bool {
        guard let s = prepareResponse(streamID, status, headers) else { return false }
        if let body, body.count > 0 {
            s.pointee.respBody.count = 0
            s.pointee.respBody.append(body.baseAddress, body.count)
            s.pointee.cursor = BodyCursor(base: UnsafeRawPointer(s.pointee.respBody.base), count: body.count, sent: 0)
            return submitResponse(s, hasBody: true)
        }
        return submitResponse(s, hasBody: false)
    }

    /// Like `respond(to:status:body:headers:)` but sends `body` without copying: it must stay valid
    /// and unchanged for the connection's lifetime (static payloads).
    @discardableResult
    public func respond(to streamID: Int32, status: Int, borrowingBody body: UnsafeRawBufferPointer,
                        headers: (inout HTTP2ResponseHeaders) -> Void = { _ in }) -> Bool {
        guard let s = prepareResponse(streamID, status, headers) else { return false }
        s.pointee.cursor = BodyCursor(base: body.baseAddress, count: body.count, sent: 0)
        return submitResponse(s, hasBody: body.count > 0)
    }

    private func prepareResponse(_ streamID: Int32, _ status: Int,
                                 _ headers: (inout HTTP2ResponseHeaders) -> Void) -> UnsafeMutablePointer<ServerSlot>? {
        guard session != nil, !isClosed, let s = slot(for: streamID), !s.pointee.responded else { return nil }
        precondition(status >= 100 && status <= 999, "status \(status) is not a 3-digit HTTP status")
        s.pointee.respStore.count = 0
        s.pointee.respRefs.count = 0
        var digits: (UInt8, UInt8, UInt8) = (UInt8(48 + status / 100), UInt8(48 + status / 10 % 10), UInt8(48 + status % 10))
        withUnsafeBytes(of: &digits) { _ = s.pointee.respStore.append($0.baseAddress, 3) }
        var w = HTTP2ResponseHeaders(slot: s)
        headers(&w)
        return s
    }

    private static let statusName: StaticString = ":status"

    private func submitResponse(_ s: UnsafeMutablePointer<ServerSlot>, hasBody: Bool) -> Bool {
        let n = s.pointee.respRefs.count + 1
        if n > scratchNVCapacity {
            scratchNV.deallocate()
            scratchNVCapacity = n * 2
            scratchNV = .allocate(capacity: scratchNVCapacity)
        }
        let flags = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)
        let base = s.pointee.respStore.base.assumingMemoryBound(to: UInt8.self)
        scratchNV[0] = nghttp2_nv(name: UnsafeMutablePointer(mutating: HTTP2ServerConnection.statusName.utf8Start),
                                  value: base, namelen: 7, valuelen: 3, flags: flags)
        // Index loop, not for-in: unspecialized iterators allocate coroutine frames in debug builds.
        var i = 0
        while i < s.pointee.respRefs.count {
            let r = s.pointee.respRefs.base[i]
            defer { i += 1 }
            scratchNV[i + 1] = nghttp2_nv(name: base + Int(r.nameOffset), value: base + Int(r.valueOffset),
                                          namelen: Int(r.nameLength), valuelen: Int(r.valueLength), flags: flags | r.nvFlags)
        }
        let rv: Int32
        if hasBody {
            var prd = nghttp2_data_provider(source: nghttp2_data_source(ptr: ServerSlot.cursor(s)),
                                            read_callback: HTTP2Session.noCopyRead)
            rv = nghttp2_submit_response(session, s.pointee.streamID, scratchNV, n, &prd)
        } else {
            rv = nghttp2_submit_response(session, s.pointee.streamID, scratchNV, n, nil)
        }
        if rv != 0 { return false }
        s.pointee.responded = true
        scheduleFlush()
        return true
    }

    /// Resets stream `streamID` with RST_STREAM(`errorCode`).
    public func reset(_ streamID: Int32, errorCode: UInt32 = NGHTTP2_CANCEL.rawValue) {
        guard let session, !isClosed else { return }
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode)
        scheduleFlush()
    }

    /// Sends GOAWAY with `errorCode` and `debugData` (e.g. a JSON reason). Streams up to `lastStreamID`
    /// (default: the last one received) still finish; the connection closes when none is left.
    public func goAway(errorCode: UInt32 = 0, debugData: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                       lastStreamID: Int32? = nil) {
        guard let session, !isClosed else { return }
        let last = lastStreamID ?? nghttp2_session_get_last_proc_stream_id(session)
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, errorCode,
                              debugData.baseAddress?.assumingMemoryBound(to: UInt8.self), debugData.count)
        scheduleFlush()
    }

    /// Sends new SETTINGS with `maxConcurrentStreams` (may drop below the streams now open).
    public func updateSettings(maxConcurrentStreams: Int) {
        guard let session, !isClosed else { return }
        var iv = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                        value: UInt32(clamping: maxConcurrentStreams))
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &iv, 1)
        scheduleFlush()
    }

    /// Graceful shutdown of this connection: GOAWAY(NO_ERROR), in-flight streams finish, then close.
    public func shutdownGracefully() { goAway(errorCode: 0) }

    /// Closes the socket now (abrupt close: open streams are dropped).
    public func close() {
        fail(TransportError(kind: .closedLocally, code: 0, function: "close"))
    }

    /// The client's settings now in force.
    public var peerSettings: HTTP2Settings { remoteSettings() }
}

@available(*, unavailable) extension HTTP2ServerConnection: Sendable {}

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
        nextID += 1
        connectionsTotal += 1
        let c = HTTP2ServerConnection(server: self, id: nextID, transport: t)
        connections[c.id] = c
        if !c.start() {
            c.close()
            return
        }
        delegate?.server(self, connectionDidOpen: c)
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

    /// The open connections (snapshot).
    public var openConnections: [HTTP2ServerConnection] { Array(connections.values) }

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
