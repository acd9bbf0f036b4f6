import CUV

/// A session other than HTTP/2 that a server hands an accepted connection to once its protocol is
/// chosen (`HTTP2Server.http1`: HTTP/1.1 plugs in here).
protocol ServerSessionStarter: AnyObject {
    /// Takes over `transport` (reading has started): becomes its owner, then processes `firstBytes`, the
    /// bytes read while the protocol was chosen, before any other read. `tls` is the handshake's outcome
    /// (nil on cleartext).
    func startSession(on transport: ByteTransport, firstBytes: UnsafeRawBufferPointer, tls: TLSConnectionInfo?)
}

/// An accepted connection whose protocol is not chosen yet: it owns the transport through the TLS
/// handshake (if any) and the first bytes, asks `ProtocolSelection`, then hands the transport and
/// what it read to the chosen session, or refuses the connection with a reason the server's delegate
/// hears. Bounded by the server's `protocolSelectionTimeoutMilliseconds`.
final class PendingServerConnection: ByteTransportOwner {
    // unowned(unsafe): the server closes its pending connections before it goes away.
    unowned(unsafe) let server: HTTP2Server
    let transport: ByteTransport
    let isTLS: Bool
    private var firstBytes = ByteQueue()
    private var timer: LoopTimer?
    private var refusing = false
    private var finished = false
    /// The iovec of the refusal answer (a pending write keeps pointing at it).
    private let answerIov = UnsafeMutablePointer<uv_buf_t>.allocate(capacity: 1)

    init(server: HTTP2Server, transport: ByteTransport, isTLS: Bool) {
        self.server = server
        self.transport = transport
        self.isTLS = isTLS
        transport.owner = self
    }

    deinit {
        firstBytes.free()
        answerIov.deallocate()
    }

    /// The TLS layer under this connection, if any.
    private var secure: SecureTransport? { transport as? SecureTransport }

    /// The peer's address, read at accept (a failed handshake closes the socket before it is reported).
    private(set) var peer = ""

    /// Starts the timeout and reading (over TLS: the handshake); cleartext is decided by its first bytes.
    func begin() {
        peer = transport.peerName()
        let ms = server.configuration.protocolSelectionTimeoutMilliseconds
        if ms > 0 {
            let timer = LoopTimer(loop: server.loop) { [unowned self] in
                self.refuse(self.isTLS && !self.handshakeDone ? "no TLS handshake within \(ms) ms" : self.unfinished(ms), answer: .none)
            }
            timer.start(afterMilliseconds: ms)
            self.timer = timer
        }
        transport.startReading()
    }

    /// Why a connection that did not choose in time is refused: what it began to send.
    private func unfinished(_ ms: UInt64) -> String {
        let b = firstBytes.bytes
        let prefacePrefix = b.count <= ProtocolSelection.preface.count
            && b.elementsEqual(ProtocolSelection.preface.prefix(b.count))
        return prefacePrefix ? "no HTTP/2 connection preface within \(ms) ms" : "no complete HTTP/1.1 request line within \(ms) ms"
    }

    private var handshakeDone = false

    /// The TLS handshake finished: ALPN may have chosen already.
    func transportDidConnect() {
        handshakeDone = true
        decide(server.selection.atStart(tls: isTLS, alpn: secure?.negotiatedProtocol))
    }

    /// The TLS handshake failed (bad certificate, alert from the client, no common protocol).
    func transportDidFailToConnect(_ error: TransportError) {
        finish(refused: secure?.refusalReason ?? "TLS handshake: \(error.message)")
    }

    func transportDidRead(_ bytes: UnsafeRawBufferPointer) {
        if refusing || finished { return }
        firstBytes.append(bytes)
        decide(server.selection.byFirstBytes(firstBytes.bytes))
    }

    func transportWriteDidComplete() {
        if refusing && !finished { linger() }
    }

    func transportDidClose(_ error: TransportError?) {
        if finished { return }
        if refusing {
            finished = true
            timer = nil
            server.pendingDidFinish(self)
            return
        }
        finish(refused: "it closed before choosing a protocol" + (error.map { " (\($0.message))" } ?? ""))
    }

    private func decide(_ verdict: ProtocolSelection.Verdict) {
        if finished || refusing { return }
        switch verdict {
        case .needBytes:
            return
        case .refuse(let reason, let answer):
            refuse(reason, answer: answer)
        case .serve(let p):
            finished = true
            timer = nil
            server.pendingDidChoose(self, p, firstBytes: firstBytes.bytes)
        }
    }

    /// Refuses the connection: the client reads `answer` (if any), then it closes.
    private func refuse(_ reason: String, answer: ProtocolSelection.Refusal) {
        if finished || refusing { return }
        refusing = true
        timer = nil
        server.pendingWasRefused(self, reason: reason)
        if let bytes = answer.bytes {
            // The answers are static arrays, whose storage lives as long as the process: a pending write
            // may point at it.
            bytes.withUnsafeBufferPointer { b in
                answerIov.pointee = uv_buf_t(base: UnsafeMutableRawPointer(mutating: b.baseAddress!).assumingMemoryBound(to: CChar.self),
                                             len: b.count)
            }
            switch transport.write(answerIov, count: 1) {
            case .pending: return
            case .failed: return  // closed and reported: transportDidClose finished it
            case .complete: linger(); return
            }
        }
        closeNow()
    }

    /// The answer is written: end the sending side (the client reads it, then end of stream) and drop
    /// what the client still sends until it closes, for at most `lingerMilliseconds`. Closing with its
    /// bytes unread would reset the connection, and a reset can discard the answer before the client
    /// reads it.
    private func linger() {
        if finished { return }
        transport.shutdownWrite()
        let t = LoopTimer(loop: server.loop) { [unowned self] in self.closeNow() }
        t.start(afterMilliseconds: Self.lingerMilliseconds)
        timer = t
    }

    /// How long a refused connection that was answered waits for the client to close.
    static let lingerMilliseconds: UInt64 = 1_000

    private func closeNow() {
        if finished { return }
        finished = true
        timer = nil
        transport.close(nil, notify: false)
        server.pendingDidFinish(self)
    }

    private func finish(refused reason: String) {
        if finished { return }
        finished = true
        refusing = true
        timer = nil
        server.pendingWasRefused(self, reason: reason)
        transport.close(nil, notify: false)
        server.pendingDidFinish(self)
    }

    /// Closes without a word (the server is closing).
    func close() {
        if finished { return }
        finished = true
        timer = nil
        transport.owner = nil
        transport.close(nil, notify: false)
    }
}

@available(*, unavailable) extension PendingServerConnection: Sendable {}
