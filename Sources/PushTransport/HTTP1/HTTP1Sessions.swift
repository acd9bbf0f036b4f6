/// The HTTP/1.1 sessions of a server with `servesHTTP1`: what `ProtocolSelection` hands a connection
/// to when ALPN chose `http/1.1` or its first bytes were not the HTTP/2 preface.
final class HTTP1Sessions: ServerSessionStarter {
    // unowned(unsafe): the server owns this object.
    unowned(unsafe) let server: HTTP2Server

    init(server: HTTP2Server) { self.server = server }

    func startSession(on transport: ByteTransport, firstBytes: UnsafeRawBufferPointer, tls: TLSConnectionInfo?) {
        server.startHTTP1(transport, firstBytes: firstBytes)
    }
}
