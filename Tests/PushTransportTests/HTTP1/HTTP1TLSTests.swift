import Foundation
@testable import PushTransport
import Testing

/// HTTP/1.1 and HTTP/2 over TLS on one port: ALPN `http/1.1` gets an HTTP/1.1 session, `h2` HTTP/2.
@Suite struct HTTP1TLSTests {
    @Test func curlHTTP1AndHTTP2OverHTTPSOnTheSamePort() throws {
        let files = try TLSRealPeerTests.Files()
        defer { files.remove() }
        let server = try RealPeerTests.BackgroundServer(tls: try TestPKI.serverContext(), servesHTTP1: true)
        defer { server.stop() }
        let url = "https://localhost:\(server.port)/v1/projects/p/messages:send"
        let (s1, out1) = try TLSRealPeerTests.curl(["--http1.1", "-d", "{\"a\":1}", url], port: server.port, files: files)
        #expect(s1 == 0 && out1.hasPrefix("HTTP/1.1 200"), "curl said: \(out1)")
        #expect(out1.contains("x-body-length: 7"), "curl said: \(out1)")
        let (s2, out2) = try TLSRealPeerTests.curl(["--http2", "-d", "{\"a\":1}", url], port: server.port, files: files)
        #expect(s2 == 0 && out2.hasPrefix("HTTP/2 200"), "curl said: \(out2)")
    }

    final class Client: HTTP1ClientDelegate {
        var connected = false, status = 0, failed = false, body = ""
        func connectionDidConnect(_ connection: HTTP1ClientConnection) { connected = true }
        func connection(_ connection: HTTP1ClientConnection, didFailToConnect error: TransportError) { failed = true }
        func connection(_ connection: HTTP1ClientConnection, didReceive response: HTTP1Response) {
            status = response.status
            body = response.body.pbString
        }
        func connection(_ connection: HTTP1ClientConnection, requestDidFail context: UInt64, error: TransportError) { failed = true }
        func connectionDidClose(_ connection: HTTP1ClientConnection, error: TransportError) {}
    }

    @Test func ourHTTP1ClientOverTLSNegotiatesHTTP1() throws {
        let server = try RealPeerTests.BackgroundServer(tls: try TestPKI.serverContext(), servesHTTP1: true)
        defer { server.stop() }
        let loop = try EventLoop()
        let d = Client()
        let c = HTTP1ClientConnection(loop: loop, delegate: d)
        c.connect(host: "127.0.0.1", port: server.port,
                  tls: try TLSClientContext(trust: .certificates(pem: TestPKI.ca.certificatePEM), alpn: ["http/1.1"]),
                  serverName: "localhost")
        #expect(loop.run(until: { d.connected || d.failed }, timeoutNanoseconds: 10 * seconds))
        #expect(c.tls?.alpn == "http/1.1")
        try c.submit(try HTTP1RequestHead(path: "/x", host: "localhost"), context: 1) { _ in 0 }
        #expect(loop.run(until: { d.status != 0 || d.failed }, timeoutNanoseconds: 10 * seconds))
        #expect(d.status == 200, "\(d.body)")
        c.close()
        loop.run(until: { false }, timeoutNanoseconds: 10_000_000)
    }
}
