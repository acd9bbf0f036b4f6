import CHTTPParser
import CUV

/// Writing answers: the status line and fields, bodies, flushes and what follows a write.
extension HTTP1ServerConnection {
    // MARK: output

    /// Where output goes now: the buffer the next write takes, or the one after it while a write is pending.
    var output: UnsafeMutablePointer<ByteStore> { writePending ? buffers + 1 : buffers }

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

    func writeHead(_ status: Int, close: Bool) {
        let o = output
        HTTP1Wire.appendStatusLine(&o.pointee, status)
        HTTP1Wire.append(&o.pointee, "Date: ")
        let d = dates.current()
        o.pointee.append(d.baseAddress, d.count)
        HTTP1Wire.append(&o.pointee, "\r\n")
        if close { HTTP1Wire.append(&o.pointee, "Connection: close\r\n") }
    }

    static func finishHead(_ o: inout ByteStore, _ count: Int, _ body: UnsafeRawBufferPointer?) {
        HTTP1Wire.append(&o, "Content-Length: ")
        HTTP1Wire.appendDecimal(&o, count)
        HTTP1Wire.append(&o, "\r\n\r\n")
        if count > 0, let body { o.append(body.baseAddress, count) }
    }

    /// Answers the request being read with `status` and a short text body, then closes (after lingering).
    func fail(status: Int, error: UInt32?) {
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

    func afterOutputWritten() {
        guard closeAfterWrite, !lingering, !isClosed else { return }
        lingering = true
        transport?.shutdownWrite()
        let t = timer ?? makeTimer()
        t.start(afterMilliseconds: Self.lingerMilliseconds)
    }
}
