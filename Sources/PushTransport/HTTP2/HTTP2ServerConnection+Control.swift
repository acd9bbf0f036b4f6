import CNGHTTP2
import CUV

/// What the application does with a connection: answer its streams (the body copied or borrowed),
/// reset them, send GOAWAY or new SETTINGS, close it.
extension HTTP2ServerConnection {
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
        var w = HTTP2ResponseHeaders(slot: s, uniqueNameIndexed: uniqueNameIndexed)
        headers(&w)
        uniqueNameIndexed = w.uniqueNameIndexed
        return s
    }

    private static let statusName: StaticString = ":status"

    private func submitResponse(_ s: UnsafeMutablePointer<ServerSlot>, hasBody: Bool) -> Bool {
        let n = s.pointee.respRefs.count + 1
        let nv = scratchNV(count: n)
        let flags = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)
        let base = s.pointee.respStore.base.assumingMemoryBound(to: UInt8.self)
        nv[0] = nghttp2_nv(name: UnsafeMutablePointer(mutating: HTTP2ServerConnection.statusName.utf8Start),
                                  value: base, namelen: 7, valuelen: 3, flags: flags)
        // Index loop, not for-in: unspecialized iterators allocate coroutine frames in debug builds.
        var i = 0
        while i < s.pointee.respRefs.count {
            let r = s.pointee.respRefs.base[i]
            defer { i += 1 }
            nv[i + 1] = nghttp2_nv(name: base + Int(r.nameOffset), value: base + Int(r.valueOffset),
                                          namelen: Int(r.nameLength), valuelen: Int(r.valueLength), flags: flags | r.nvFlags)
        }
        let rv: Int32
        if hasBody {
            var prd = nghttp2_data_provider(source: nghttp2_data_source(ptr: ServerSlot.cursor(s)),
                                            read_callback: HTTP2Session.noCopyRead)
            rv = nghttp2_submit_response(session, s.pointee.streamID, nv, n, &prd)
        } else {
            rv = nghttp2_submit_response(session, s.pointee.streamID, nv, n, nil)
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
        gracefulGoAway = errorCode == 0 && !closedStreamViolated
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, errorCode,
                              debugData.baseAddress?.assumingMemoryBound(to: UInt8.self), debugData.count)
        scheduleFlush()
    }

    /// Sends new SETTINGS with `maxConcurrentStreams` (may drop below the streams now open).
    public func updateSettings(maxConcurrentStreams: Int) {
        guard session != nil, !isClosed else { return }
        submitSettings(LocalSettings(maxConcurrentStreams: maxConcurrentStreams))
        scheduleFlush()
    }

    /// Graceful shutdown of this connection: GOAWAY(NO_ERROR), in-flight streams finish, then close.
    public func shutdownGracefully() { goAway(errorCode: 0) }

    /// Closes the socket now (abrupt close: open streams are dropped).
    public func close() {
        fail(TransportError(kind: .closedLocally, code: 0, function: "close"))
    }

    /// The client's settings now in force.
    var peerSettings: HTTP2Settings { remoteSettings() }
}
