import CUV

/// TCP over libuv. The transport keeps itself alive (one retain) from init until its close callback.
///
/// The connect has no timer of its own: the client session's handshake timer bounds the TCP connect
/// and the wait for the peer's SETTINGS together.
final class TCPTransport: ByteTransport {
    // unowned(unsafe): no weak side table on the session (which would put every retain of it on the
    // slow path); the session clears this before it goes away, and callbacks after close never use it.
    unowned(unsafe) var owner: ByteTransportOwner?
    let loop: EventLoop
    let block: UnsafeMutablePointer<pb_tcp_block>
    private var pendingIov: UnsafeMutablePointer<uv_buf_t>?
    private var pendingCount = 0
    private var closing = false
    /// The place an accepting server's ConnectionCap gave this connection, given back at close.
    var capPlace: ConnectionCap?

    /// A transport for a fresh handle (`uv_tcp_init` done here).
    init(loop: EventLoop) {
        self.loop = loop
        block = .allocate(capacity: 1)
        uv_tcp_init(loop.uvLoop, &block.pointee.tcp)
        block.pointee.tcp.data = Unmanaged.passRetained(self).toOpaque()
        block.pointee.write.data = block.pointee.tcp.data
        block.pointee.connect.data = block.pointee.tcp.data
    }

    /// Calls the owner holding a strong reference for the whole call: the owner may drop its last
    /// other reference inside (a delegate closing the connection) and must not be freed mid-call.
    @inline(__always) private func withOwner(_ body: (ByteTransportOwner) -> Void) {
        guard let o = owner else { return }
        withExtendedLifetime(o) { body(o) }
    }

    static func from(_ p: UnsafeMutableRawPointer?) -> TCPTransport {
        Unmanaged<TCPTransport>.fromOpaque(p!).takeUnretainedValue()
    }

    var stream: UnsafeMutablePointer<uv_stream_t> { pb_block_stream(block) }

    /// Starts a non-blocking connect; the owner hears `transportDidConnect` or `transportDidFailToConnect`.
    func connect(host: String, port: Int) {
        var addr = sockaddr_storage()
        let r = pb_parse_address(host, Int32(port), &addr)
        if r != 0 {
            failConnect(TransportError(uv: r, "uv_ip4_addr"))
            return
        }
        uv_tcp_nodelay(&block.pointee.tcp, 1)
        let c = withUnsafePointer(to: &addr) { p in
            uv_tcp_connect(&block.pointee.connect, &block.pointee.tcp, pb_sockaddr(p)) { req, status in
                guard let req, let data = req.pointee.data else { return }
                let t = TCPTransport.from(data)
                if t.closing { return }
                if status < 0 {
                    t.failConnect(TransportError(uv: status, "uv_tcp_connect"))
                } else {
                    t.withOwner { $0.transportDidConnect() }
                }
            }
        }
        if c != 0 { failConnect(TransportError(uv: c, "uv_tcp_connect")) }
    }

    private func failConnect(_ error: TransportError) {
        let o = owner
        close(error, notify: false)
        if let o { withExtendedLifetime(o) { o.transportDidFailToConnect(error) } }
    }

    func startReading() {
        uv_read_start(stream, { h, _, buf in
            guard let h, let buf else { return }
            let loop = TCPTransport.from(h.pointee.data).loop
            buf.pointee.base = loop.readBuffer.baseAddress!.assumingMemoryBound(to: CChar.self)
            buf.pointee.len = loop.readBuffer.count
        }, { s, nread, _ in
            guard let s else { return }
            let t = TCPTransport.from(s.pointee.data)
            if nread > 0 {
                let bytes = UnsafeRawBufferPointer(start: t.loop.readBuffer.baseAddress, count: nread)
                t.withOwner { $0.transportDidRead(bytes) }
            } else if nread < 0 {
                let code = Int32(nread)
                let err = code == Int32(UV_EOF.rawValue)
                    ? TransportError(kind: .connectionLost, code: 0, function: "uv_read")
                    : TransportError(kind: .connectionLost, code: code, function: "uv_read")
                t.close(err, notify: true)
            }
        })
    }

    func stopReading() {
        if !closing { uv_read_stop(stream) }
    }

    func write(_ iov: UnsafeMutablePointer<uv_buf_t>, count: Int) -> WriteOutcome {
        if closing { return .failed }
        return writeFrom(iov, count: count)
    }

    /// try_write first (one writev, no request); the rest goes through the single uv_write_t, at most 4
    /// buffers at a time so libuv uses its inline `bufsml` and does not allocate.
    private func writeFrom(_ iov: UnsafeMutablePointer<uv_buf_t>, count: Int) -> WriteOutcome {
        var base = iov
        var n = count
        while n > 0 {
            let r = uv_try_write(stream, base, UInt32(n))
            if r == Int32(UV_EAGAIN.rawValue) { break }
            if r < 0 {
                close(TransportError(kind: .connectionLost, code: r, function: "uv_try_write"), notify: true)
                return .failed
            }
            var left = Int(r)
            while n > 0 && left >= base.pointee.len {
                left -= base.pointee.len
                base += 1
                n -= 1
            }
            if n > 0 && left > 0 {
                base.pointee.base += left
                base.pointee.len -= left
            }
            if r == 0 { break }
        }
        if n == 0 { return .complete }
        let chunk = min(n, 4)
        pendingIov = base + chunk
        pendingCount = n - chunk
        let w = uv_write(&block.pointee.write, stream, base, UInt32(chunk)) { req, status in
            guard let req, let data = req.pointee.data else { return }
            let t = TCPTransport.from(data)
            if t.closing { return }
            if status < 0 {
                t.close(TransportError(kind: .connectionLost, code: status, function: "uv_write"), notify: true)
                return
            }
            t.continueWrite()
        }
        if w != 0 {
            close(TransportError(kind: .connectionLost, code: w, function: "uv_write"), notify: true)
            return .failed
        }
        return .pending
    }

    private func continueWrite() {
        guard let p = pendingIov, pendingCount > 0 else {
            pendingIov = nil
            withOwner { $0.transportWriteDidComplete() }
            return
        }
        let n = pendingCount
        pendingIov = nil
        pendingCount = 0
        switch writeFrom(p, count: n) {
        case .complete: withOwner { $0.transportWriteDidComplete() }
        case .pending, .failed: break
        }
    }

    func peerName() -> String {
        if closing { return "closed connection" }
        var addr = sockaddr_storage()
        var len = Int32(MemoryLayout<sockaddr_storage>.size)
        var name = [CChar](repeating: 0, count: 64)
        let ok = withUnsafeMutablePointer(to: &addr) { p -> Bool in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                uv_tcp_getpeername(&block.pointee.tcp, sa, &len) == 0 && uv_ip_name(sa, &name, name.count) == 0
            }
        }
        guard ok else { return "unknown peer" }
        let host = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let port = Int(pb_sockaddr_port(&addr))
        return addr.ss_family == sa_family_t(AF_INET6) ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    func shutdownWrite() {
        if closing { return }
        // Its own request (the block's write request may be in use); freed by its callback, which libuv
        // also calls (ECANCELED) when the handle closes first.
        let req = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        if uv_shutdown(req, stream, { req, _ in req?.deallocate() }) != 0 { req.deallocate() }
    }

    func close(_ error: TransportError?, notify: Bool) {
        if closing { return }
        closing = true
        capPlace?.release()
        capPlace = nil
        let o = notify ? owner : nil
        uv_close(pb_block_handle(block)) { h in
            guard let h else { return }
            // Balances passRetained in init; libuv has already cancelled the write/connect requests.
            let t = Unmanaged<TCPTransport>.fromOpaque(h.pointee.data!).takeRetainedValue()
            t.block.deallocate()
        }
        if let o { withExtendedLifetime(o) { o.transportDidClose(error) } }
    }
}

@available(*, unavailable) extension TCPTransport: Sendable {}
