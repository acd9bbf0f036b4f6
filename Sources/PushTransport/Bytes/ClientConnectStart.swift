/// How a client connection (HTTP/1.1 or HTTP/2) starts: over TCP or TLS-over-TCP to a numeric address,
/// with one timer that bounds the transport's connect and the protocol's handshake together, and a
/// failed start that lets go of the transport before it is reported.
///
/// Each connection keeps its own flags (whether it ever connected, whether a failure was already
/// reported); this holds only what both do the same way.
protocol ClientConnectStart: ByteTransportOwner {
    var loop: EventLoop { get }
    var transport: ByteTransport? { get set }
    /// Takes `t` as the transport and starts the connect timer (``takeTransport(_:timeoutMilliseconds:what:)``).
    func attach(_ t: ByteTransport)
    /// The start failed (TLS could not begin, the transport failed, the timer fired): reported once.
    func failConnect(_ error: TransportError)
}

extension ClientConnectStart {
    /// TCP to a numeric IPv4/IPv6 address.
    func startConnect(host: String, port: Int) {
        let t = TCPTransport(loop: loop)
        attach(t)
        t.connect(host: host, port: port)
    }

    /// TLS over TCP: the handshake checks the certificate for `serverName` (default `host`).
    func startConnect(host: String, port: Int, tls context: TLSClientContext, serverName: String?) {
        let tcp = TCPTransport(loop: loop)
        do throws(TLSError) {
            let t = try TLSTransport(client: context, serverName: serverName ?? host, over: tcp, loop: loop)
            attach(t)
            tcp.connect(host: host, port: port)
        } catch {
            tcp.close(nil, notify: false)
            failConnect(TransportError(kind: .tls, code: -1, function: "SSL_new"))
        }
    }

    /// Makes `t` this connection's transport and returns the started timer that fails the start
    /// (`connectTimeout`, naming `what`) if it has not finished within `milliseconds`.
    func takeTransport(_ t: ByteTransport, timeoutMilliseconds milliseconds: UInt64, what: StaticString) -> LoopTimer {
        t.owner = self
        transport = t
        let timer = LoopTimer(loop: loop) { [unowned self] in
            self.failConnect(TransportError(kind: .connectTimeout, code: 0, function: what))
        }
        timer.start(afterMilliseconds: milliseconds)
        return timer
    }

    /// Lets go of the transport of a failed start: closed with `error`, its events no longer delivered.
    func dropTransport(_ error: TransportError) {
        let t = transport
        transport = nil
        t?.owner = nil
        t?.close(error, notify: false)
    }
}
