import COpenSSL
import CUV

/// TLS over another byte transport (TCP, or an in-memory pair in tests), with OpenSSL working on
/// memory only: libuv keeps the socket, and OpenSSL reads ciphertext from the bytes the inner
/// transport just delivered and writes ciphertext into this transport's buffer, through a BIO whose
/// callbacks are these two copies (no socket BIO, no BIO pair: nothing between OpenSSL and our
/// buffers).
///
/// Reads: a delivery from the inner transport is decrypted with `SSL_read` into the loop's plaintext
/// buffer (64 KiB, several records) and handed to the owner in one call. Writes: a session's batch
/// (one per loop turn) is encrypted with as few `SSL_write` calls as fit 16 KiB records (small iovecs
/// are gathered first), and the ciphertext goes to the inner transport as one write. While that write
/// is pending, what OpenSSL produces on its own (tickets, alerts, key updates) collects in a second
/// buffer; the two swap when the write completes, so a buffer being written is never moved.
///
/// The owner hears `transportDidConnect` once the handshake is done (the client after the server's
/// Finished, the server after the client's), `transportDidFailToConnect` when it failed.
final class TLSTransport: SecureTransport, ByteTransportOwner {
    // unowned(unsafe), as in TCPTransport: the owner clears it before it goes away.
    unowned(unsafe) var owner: ByteTransportOwner?
    let inner: ByteTransport
    let loop: EventLoop
    private let ssl: OpaquePointer
    private let isServer: Bool
    private let servesHTTP1: Bool
    private var handshakeDone = false
    private var handshakeFailed = false
    private var handshakeStarted: UInt64 = 0
    private var closed = false
    /// close_notify was written (`shutdownWrite`): `close` does not write it again.
    private var closeNotifySent = false
    private var ownerReading = false
    private(set) var connectionInfo: TLSConnectionInfo?
    private(set) var negotiatedProtocol: ApplicationProtocol?
    private(set) var refusalReason: String?
    /// The SNI name a client sends (nil for an IP address).
    private let serverName: String?

    // The ciphertext being read: the BIO's read callback takes from here.
    private var input: UnsafeRawPointer?
    private var inputCount = 0
    // Ciphertext out: `filling` takes what OpenSSL writes; `sending` is with the inner transport.
    private var filling = CipherBuffer()
    private var sending = CipherBuffer()
    private var innerBusy = false
    /// The owner's last write returned `.pending`: it hears `transportWriteDidComplete` when the inner
    /// transport is free again.
    private var ownerWaiting = false
    private let innerIov: UnsafeMutablePointer<uv_buf_t>
    private let buffers: TLSLoopBuffers

    /// A server-side transport over `inner` (an accepted connection); the handshake starts with the
    /// client's first bytes.
    init(server context: TLSServerContext, over inner: ByteTransport, loop: EventLoop, servesHTTP1: Bool) throws(TLSError) {
        guard let ssl = SSL_new(context.ctx) else { throw TLSError.openSSL("SSL_new") }
        self.ssl = ssl
        self.inner = inner
        self.loop = loop
        isServer = true
        self.servesHTTP1 = servesHTTP1
        serverName = nil
        innerIov = .allocate(capacity: 1)
        buffers = loop.tlsBuffers
        attach()
        SSL_set_accept_state(ssl)
    }

    /// A client-side transport over `inner`; the handshake starts when `inner` connects. `serverName`
    /// (a DNS name or an IP literal) is what the certificate must match (unless the context is
    /// insecure); a DNS name is also sent as SNI.
    init(client context: TLSClientContext, serverName: String, over inner: ByteTransport, loop: EventLoop) throws(TLSError) {
        guard let ssl = SSL_new(context.ctx) else { throw TLSError.openSSL("SSL_new") }
        self.ssl = ssl
        self.inner = inner
        self.loop = loop
        isServer = false
        servesHTTP1 = false
        innerIov = .allocate(capacity: 1)
        buffers = loop.tlsBuffers
        let isIP = TLSTransport.isIPAddress(serverName)
        self.serverName = isIP ? nil : serverName
        attach()
        if context.trust != .insecure {
            let param = SSL_get0_param(ssl)
            if isIP {
                X509_VERIFY_PARAM_set1_ip_asc(param, serverName)
            } else {
                X509_VERIFY_PARAM_set_hostflags(param, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
                X509_VERIFY_PARAM_set1_host(param, serverName, 0)
            }
        }
        if !isIP { _ = pb_ssl_set_sni(ssl, serverName) }
        SSL_set_connect_state(ssl)
    }

    private func attach() {
        let bio = BIO_new(TLSTransport.bioMethod)
        BIO_set_data(bio, Unmanaged.passUnretained(self).toOpaque())
        BIO_set_init(bio, 1)
        SSL_set_bio(ssl, bio, bio)
        SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
        inner.owner = self
    }

    deinit {
        if !closed {
            inner.owner = nil
            inner.close(nil, notify: false)
        }
        SSL_free(ssl)
        filling.free()
        sending.free()
        innerIov.deallocate()
    }

    static func isIPAddress(_ s: String) -> Bool {
        var a = sockaddr_storage()
        return pb_parse_address(s, 0, &a) == 0
    }

    // MARK: the BIO between OpenSSL and our buffers

    // Made once, read-only afterwards (OpenSSL method tables are shared between threads).
    nonisolated(unsafe) static let bioMethod: OpaquePointer = {
        let m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "pushbench transport")!
        BIO_meth_set_write(m) { bio, data, len in
            let t = Unmanaged<TLSTransport>.fromOpaque(BIO_get_data(bio)!).takeUnretainedValue()
            t.filling.append(UnsafeRawPointer(data!), Int(len))
            return len
        }
        BIO_meth_set_read(m) { bio, buf, len in
            let t = Unmanaged<TLSTransport>.fromOpaque(BIO_get_data(bio)!).takeUnretainedValue()
            t.buffers.bioReads &+= 1
            pb_bio_clear_retry(bio)
            let n = min(Int(len), t.inputCount)
            if n == 0 {
                pb_bio_set_retry_read(bio)
                return -1
            }
            UnsafeMutableRawPointer(buf!).copyMemory(from: t.input!, byteCount: n)
            t.input! += n
            t.inputCount -= n
            return Int32(n)
        }
        BIO_meth_set_ctrl(m) { _, cmd, _, _ in
            cmd == BIO_CTRL_FLUSH ? 1 : 0
        }
        return m
    }()

    // MARK: ByteTransport (the session above)

    func startReading() {
        ownerReading = true
        // A server's inner transport starts reading with it (the handshake needs the client's bytes);
        // a client's reads from its connect.
        if isServer { inner.startReading() }
    }

    /// Back-pressure: no more ciphertext is read until `startReading()`; what one read decrypted is
    /// still delivered.
    func stopReading() { inner.stopReading() }

    func write(_ iov: UnsafeMutablePointer<uv_buf_t>, count: Int) -> WriteOutcome {
        if closed { return .failed }
        if !encrypt(iov, count) { return .failed }
        if innerBusy {
            ownerWaiting = true
            return .pending
        }
        switch sendFilling() {
        case .complete: return .complete
        case .pending:
            ownerWaiting = true
            return .pending
        case .failed: return .failed
        }
    }

    /// Gathers small iovecs into 16 KiB records; large ones are written directly (OpenSSL cuts them).
    private func encrypt(_ iov: UnsafeMutablePointer<uv_buf_t>, _ count: Int) -> Bool {
        let gather = buffers.gather
        var gathered = 0
        var i = 0
        while i < count {
            let p = UnsafeRawPointer(iov[i].base!)
            let n = iov[i].len
            i += 1
            if n >= TLSTransport.directWriteMinimum {
                if gathered > 0 {
                    if !sslWrite(UnsafeRawPointer(gather.baseAddress!), gathered) { return false }
                    gathered = 0
                }
                if !sslWrite(p, n) { return false }
                continue
            }
            var off = 0
            while off < n {
                let k = min(n - off, gather.count - gathered)
                (gather.baseAddress! + gathered).copyMemory(from: p + off, byteCount: k)
                gathered += k
                off += k
                if gathered == gather.count {
                    if !sslWrite(UnsafeRawPointer(gather.baseAddress!), gathered) { return false }
                    gathered = 0
                }
            }
        }
        if gathered > 0 { return sslWrite(UnsafeRawPointer(gather.baseAddress!), gathered) }
        return true
    }

    /// iovecs at least this long are encrypted where they are rather than gathered.
    static let directWriteMinimum = 4096

    private func sslWrite(_ p: UnsafeRawPointer, _ n: Int) -> Bool {
        buffers.sslWrites &+= 1
        var off = 0
        while off < n {
            let r = SSL_write(ssl, p + off, Int32(min(n - off, Int(Int32.max))))
            if r <= 0 {
                let error = failure(r, "SSL_write")
                close(error, notify: true)
                return false
            }
            off += Int(r)
        }
        return true
    }

    /// Hands `filling` to the inner transport (swapped into `sending`).
    private func sendFilling() -> WriteOutcome {
        if filling.count == 0 { return .complete }
        swap(&filling, &sending)
        innerIov.pointee = uv_buf_t(base: sending.base!.assumingMemoryBound(to: CChar.self), len: sending.count)
        let outcome = inner.write(innerIov, count: 1)
        switch outcome {
        case .complete: sending.count = 0
        case .pending: innerBusy = true
        case .failed: break
        }
        return outcome
    }

    /// Writes what OpenSSL produced on its own (handshake flights, alerts, tickets) unless a write is out.
    private func flushOwnOutput() {
        if innerBusy || closed { return }
        _ = sendFilling()
    }

    func close(_ error: TransportError?, notify: Bool) {
        if closed { return }
        // Closed before close_notify goes out: a socket that fails that write reports its close to
        // this transport, which must not tell the owner a second time (it may be gone by then).
        closed = true
        let o = notify ? owner : nil
        if handshakeDone && !handshakeFailed && !closeNotifySent {
            // close_notify, best effort: it goes out if the socket takes it now.
            ERR_clear_error()
            if SSL_shutdown(ssl) < 0 { ERR_clear_error() }
            if !innerBusy { _ = sendFilling() }
        }
        inner.owner = nil
        inner.close(error, notify: false)
        if let o { withExtendedLifetime(o) { o.transportDidClose(error) } }
    }

    func peerName() -> String { inner.peerName() }

    /// Gives back the memory a connection with nothing in flight holds for records: OpenSSL's read and
    /// write buffers (about 17 KiB each) and the two ciphertext buffers (16 KiB each once used). They
    /// are made again by the next read or write. A busy connection keeps them (no allocation per
    /// record); an idle one costs that much less. Nothing while a write is out or bytes are pending.
    func releaseIdleBuffers() {
        if closed || innerBusy || !handshakeDone || handshakeFailed { return }
        if filling.count == 0 { filling.release() }
        if sending.count == 0 { sending.release() }
        if SSL_free_buffers(ssl) == 1 { recordBuffersReleased += 1 }
    }

    /// Whether either ciphertext buffer has memory now.
    var holdsCiphertextBuffers: Bool { filling.base != nil || sending.base != nil }
    /// Times `releaseIdleBuffers` gave OpenSSL's record buffers back.
    private(set) var recordBuffersReleased = 0

    /// close_notify, then the inner transport's end of sending (FIN) once it is written; reads go on.
    /// Nothing when a write is out (the session ends only with its writes done) or before the handshake.
    func shutdownWrite() {
        if closed || closeNotifySent || innerBusy || !handshakeDone || handshakeFailed { return }
        closeNotifySent = true
        ERR_clear_error()
        if SSL_shutdown(ssl) < 0 { ERR_clear_error() }
        if sendFilling() == .failed { return }
        inner.shutdownWrite()
    }

    // MARK: ByteTransportOwner (the transport below)

    func transportDidConnect() {
        // The inner transport connected (client): send the ClientHello.
        inner.startReading()
        handshakeStarted = loop.now
        handshake()
    }

    func transportDidFailToConnect(_ error: TransportError) {
        closed = true
        if let o = owner { withExtendedLifetime(o) { o.transportDidFailToConnect(error) } }
    }

    func transportDidRead(_ bytes: UnsafeRawBufferPointer) {
        if closed { return }
        withExtendedLifetime(self) {
            input = bytes.baseAddress
            inputCount = bytes.count
            defer { input = nil; inputCount = 0 }
            if !handshakeDone {
                if handshakeStarted == 0 { handshakeStarted = loop.now }
                handshake()
                if !handshakeDone || closed { return }
            }
            readApplicationData()
            flushOwnOutput()
        }
    }

    func transportWriteDidComplete() {
        innerBusy = false
        sending.count = 0
        if filling.count > 0, sendFilling() != .complete { return }
        if ownerWaiting, !closed {
            ownerWaiting = false
            if let o = owner { withExtendedLifetime(o) { o.transportWriteDidComplete() } }
        }
    }

    func transportDidClose(_ error: TransportError?) {
        if closed { return }
        closed = true
        let o = owner
        guard let o else { return }
        withExtendedLifetime(o) {
            if handshakeDone {
                o.transportDidClose(error)
            } else {
                handshakeFailed = true
                o.transportDidFailToConnect(TransportError(kind: .tls, code: 0, function: "TLS handshake"))
            }
        }
    }

    // MARK: handshake and records

    private func handshake() {
        ERR_clear_error()
        let r = SSL_do_handshake(ssl)
        if r == 1 {
            handshakeDone = true
            connectionInfo = describe()
            flushOwnOutput()
            if let o = owner { withExtendedLifetime(o) { o.transportDidConnect() } }
            return
        }
        let e = SSL_get_error(ssl, r)
        if e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE {
            flushOwnOutput()
            return
        }
        handshakeFailed = true
        let error = failure(r, "TLS handshake")
        // The alert OpenSSL queued goes out before the close (closed first, as in `close`).
        closed = true
        if !innerBusy { _ = sendFilling() }
        inner.owner = nil
        inner.close(error, notify: false)
        if let o = owner { withExtendedLifetime(o) { o.transportDidFailToConnect(error) } }
    }

    /// Decrypts everything the current input holds, delivering up to 64 KiB per call to the owner.
    private func readApplicationData() {
        let buffer = buffers.plaintext
        var used = 0
        while !closed {
            buffers.sslReads &+= 1
            let r = SSL_read(ssl, buffer.baseAddress! + used, Int32(buffer.count - used))
            if r > 0 {
                used += Int(r)
                if used == buffer.count {
                    deliver(buffer, used)
                    used = 0
                }
                // With every input byte taken and nothing of it left inside OpenSSL, another SSL_read
                // could only say WANT_READ, at about a fifth of a record's cost: one call less per delivery.
                if inputCount == 0 && SSL_has_pending(ssl) == 0 { break }
                continue
            }
            let e = SSL_get_error(ssl, r)
            if e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE { break }
            if used > 0 { deliver(buffer, used); used = 0 }
            if closed { return }
            // close_notify is the peer's orderly end; anything else is an error.
            let error = e == SSL_ERROR_ZERO_RETURN ? TransportError(kind: .connectionLost, code: 0, function: "SSL_read")
                                                   : failure(r, "SSL_read")
            close(error, notify: true)
            return
        }
        if used > 0 { deliver(buffer, used) }
    }

    private func deliver(_ buffer: UnsafeMutableRawBufferPointer, _ n: Int) {
        guard ownerReading, let o = owner else { return }
        withExtendedLifetime(o) { o.transportDidRead(UnsafeRawBufferPointer(start: buffer.baseAddress, count: n)) }
    }

    /// The error of a failed SSL call, with OpenSSL's reason (kept for `TransportError.message`).
    private func failure(_ r: Int32, _ function: StaticString) -> TransportError {
        let e = SSL_get_error(ssl, r)
        if !isServer, !handshakeDone {
            let v = SSL_get_verify_result(ssl)
            if v != X509_V_OK {
                ERR_clear_error()
                return TransportError(kind: .certificate, code: Int32(truncatingIfNeeded: v), function: function)
            }
        }
        let code = ERR_peek_error()
        ERR_clear_error()
        if code != 0 {
            return TransportError(kind: .tls, code: Int32(bitPattern: UInt32(truncatingIfNeeded: code)), function: function)
        }
        if e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN {
            // No reason queued: the peer went away (mid-handshake that is a TLS failure).
            return handshakeDone ? TransportError(kind: .connectionLost, code: 0, function: function)
                                 : TransportError(kind: .tls, code: 0, function: function)
        }
        return TransportError(kind: .tls, code: -Int32(e), function: function)
    }

    /// What the finished handshake settled.
    private func describe() -> TLSConnectionInfo {
        var alpnData: UnsafePointer<UInt8>?
        var alpnLength: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &alpnData, &alpnLength)
        var alpn: String?
        if let alpnData, alpnLength > 0 {
            alpn = String(decoding: UnsafeBufferPointer(start: alpnData, count: Int(alpnLength)), as: UTF8.self)
            negotiatedProtocol = ApplicationProtocol(rawValue: alpn!)
        }
        let version = String(cString: SSL_get_version(ssl))
        let cipher = SSL_get_current_cipher(ssl).map { String(cString: SSL_CIPHER_standard_name($0)) } ?? "unknown"
        let sni: String? = isServer ? SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) } : serverName
        var peer: TLSPeerCertificate?
        if let x = SSL_get1_peer_certificate(ssl) {
            defer { X509_free(x) }
            let v = SSL_get_verify_result(ssl)
            peer = TLSPeerCertificate(subject: X509Names.oneLine(X509_get_subject_name(x)),
                                      subjectUID: X509Names.entry(X509_get_subject_name(x), nid: NID_userId),
                                      issuer: X509Names.oneLine(X509_get_issuer_name(x)),
                                      verified: v == X509_V_OK,
                                      verificationError: v == X509_V_OK ? nil : String(cString: X509_verify_cert_error_string(v)),
                                      pem: (try? CertificateBuilder.pem(certificate: x)) ?? "")
        }
        return TLSConnectionInfo(version: version, cipher: cipher, alpn: alpn, serverName: sni, peerCertificate: peer,
                                 handshakeNanoseconds: loop.now &- handshakeStarted)
    }

    /// The server's ALPN choice (`SSL_CTX_set_alpn_select_cb`): `ProtocolSelection` decides; no
    /// protocol this server speaks fails the handshake with no_application_protocol.
    static let alpnSelect: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
                                           UnsafeMutablePointer<UInt8>?, UnsafePointer<UInt8>?, UInt32,
                                           UnsafeMutableRawPointer?) -> Int32 = { ssl, out, outlen, inp, inlen, _ in
        guard let ssl, let raw = SSL_get_ex_data(ssl, 0) else { return SSL_TLSEXT_ERR_NOACK }
        let t = Unmanaged<TLSTransport>.fromOpaque(raw).takeUnretainedValue()
        let offered = UnsafeRawBufferPointer(start: inp, count: Int(inlen))
        let selection = ProtocolSelection(servesHTTP1: t.servesHTTP1)
        guard let p = selection.alpnSelect(offered: offered) else {
            t.refusalReason = selection.alpnRefusal(offered: offered)
            return SSL_TLSEXT_ERR_ALERT_FATAL
        }
        let name = p == .http2 ? ALPNNames.h2 : ALPNNames.http1
        out!.pointee = UnsafePointer(name.baseAddress!)
        outlen!.pointee = UInt8(name.count)
        return SSL_TLSEXT_ERR_OK
    }
}

@available(*, unavailable) extension TLSTransport: Sendable {}
