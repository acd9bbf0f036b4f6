import CUV

/// Outcome of handing a batch of iovecs to a `ByteTransport`.
enum WriteOutcome {
    /// Every byte was written synchronously; the buffers may be reused now.
    case complete
    /// Part of the batch is queued; buffers (and the iovec array) stay untouched until `transportWriteDidComplete`.
    case pending
    /// The write failed; the transport is closing and will report `transportDidClose`.
    case failed
}

/// Events from a byte transport to the session above it.
protocol ByteTransportOwner: AnyObject {
    func transportDidConnect()
    func transportDidFailToConnect(_ error: TransportError)
    func transportDidRead(_ bytes: UnsafeRawBufferPointer)
    func transportWriteDidComplete()
    func transportDidClose(_ error: TransportError?)
}

/// The seam between socket and HTTP/2 session: plain TCP today; a TLS layer implements the same
/// interface later (it encrypts the iovecs into its own buffer and forwards to a TCP transport).
protocol ByteTransport: AnyObject {
    var owner: ByteTransportOwner? { get set }
    /// Writes `count` iovecs as one batch. The array may be modified in place while pending.
    func write(_ iov: UnsafeMutablePointer<uv_buf_t>, count: Int) -> WriteOutcome
    /// Starts delivering reads to the owner.
    func startReading()
    /// Closes the transport; pending writes are cancelled; `transportDidClose(error)` follows unless `notify` is false.
    func close(_ error: TransportError?, notify: Bool)
    /// Bytes read so far.
    var bytesIn: UInt64 { get }
    /// Bytes written so far.
    var bytesOut: UInt64 { get }
}

/// TCP over libuv. The transport keeps itself alive (one retain) from init until its close callback.
final class TCPTransport: ByteTransport {
    // unowned(unsafe): no weak side table on the session (which would put every retain of it on the
    // slow path); the session clears this before it goes away, and callbacks after close never use it.
    unowned(unsafe) var owner: ByteTransportOwner?
    let loop: EventLoop
    let block: UnsafeMutablePointer<pb_tcp_block>
    private(set) var bytesIn: UInt64 = 0
    private(set) var bytesOut: UInt64 = 0
    private var pendingIov: UnsafeMutablePointer<uv_buf_t>?
    private var pendingCount = 0
    private var closing = false
    private var connectTimer: LoopTimer?

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
    func connect(host: String, port: Int, timeoutMilliseconds: UInt64) {
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
                t.connectTimer = nil
                if status < 0 {
                    t.failConnect(TransportError(uv: status, "uv_tcp_connect"))
                } else {
                    t.withOwner { $0.transportDidConnect() }
                }
            }
        }
        if c != 0 {
            failConnect(TransportError(uv: c, "uv_tcp_connect"))
            return
        }
        let timer = LoopTimer(loop: loop) { [unowned self] in
            self.failConnect(TransportError(kind: .connectTimeout, code: 0, function: "uv_tcp_connect"))
        }
        timer.start(afterMilliseconds: timeoutMilliseconds)
        connectTimer = timer
    }

    private func failConnect(_ error: TransportError) {
        connectTimer = nil
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
                t.bytesIn &+= UInt64(nread)
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
            bytesOut &+= UInt64(r)
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
        var total = 0
        for i in 0..<chunk { total += base[i].len }
        bytesOut &+= UInt64(total)
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

    func close(_ error: TransportError?, notify: Bool) {
        if closing { return }
        closing = true
        connectTimer = nil
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
