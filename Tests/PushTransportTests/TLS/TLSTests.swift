import CNGHTTP2
import CUV
import Glibc
@testable import PushTransport
import Testing

/// Test certificates: one CA and a server certificate for localhost, 127.0.0.1 and ::1.
enum TestPKI {
    static let ca = try! TLSCertificateAuthority(commonName: "pushbench tests CA")
    static let server = try! ca.issue(commonName: "localhost", names: ["localhost", "127.0.0.1", "::1", "api.push.apple.com"])
    static func serverContext(_ clientCertificates: TLSServerContext.ClientCertificates = .none,
                              maximum: TLSVersion = .tls13) throws -> TLSServerContext {
        try TLSServerContext(certificatePEM: server.certificateChainPEM, privateKeyPEM: server.privateKeyPEM,
                             clientCertificates: clientCertificates, maximumVersion: maximum)
    }
    static func clientContext(alpn: [String] = ["h2"], maximum: TLSVersion = .tls13) throws -> TLSClientContext {
        try TLSClientContext(trust: .certificates(pem: ca.certificatePEM), maximumVersion: maximum, alpn: alpn)
    }
}

/// Records a server's refusals (and answers requests 200).
final class RecordingServer: HTTP2ServerDelegate {
    var reasons: [String] = []
    var requests = 0
    var opened: [HTTP2ServerConnection] = []
    func server(_ server: HTTP2Server, didReceive r: HTTP2ServerRequest) {
        requests += 1
        r.connection.respond(to: r.streamID, status: 200)
    }
    func server(_ server: HTTP2Server, connectionDidOpen connection: HTTP2ServerConnection) { opened.append(connection) }
    func server(_ server: HTTP2Server, didRefuseConnectionFrom peer: String, reason: String) { reasons.append(reason) }
}

/// HTTP/2 over TLS on the in-memory pair: handshakes, ALPN and the first-bytes rule, certificates.
@Suite struct TLSTests {
    struct Setup {
        let loop: EventLoop
        let server: HTTP2Server
        let recorder: RecordingServer
        let client: HTTP2ClientConnection
        let events: TestClient
    }

    static func connect(server context: TLSServerContext, client tls: TLSClientContext, serverName: String = "localhost",
                        tune: (InMemoryTransport, InMemoryTransport) -> Void = { _, _ in }) throws -> Setup {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        config.tls = context
        let recorder = RecordingServer()
        let server = HTTP2Server(loop: loop, configuration: config, delegate: recorder)
        let events = TestClient()
        let client = HTTP2ClientConnection(loop: loop, delegate: events)
        let (clientEnd, serverEnd) = InMemoryTransport.pair(loop: loop)
        tune(clientEnd, serverEnd)
        server.accept(serverEnd)
        client.connect(over: clientEnd, tls: tls, serverName: serverName)
        loop.run(until: { events.connected || events.connectError != nil }, timeoutNanoseconds: 10 * seconds)
        return Setup(loop: loop, server: server, recorder: recorder, client: client, events: events)
    }

    static func roundTrips(_ s: Setup, count: Int, bodySize: Int = 100) throws {
        let block = try makeBlock(path: "/3/device/abc")
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: bodySize)
        let before = s.events.responses
        for k in 0..<count {
            try s.client.submit(block, context: UInt64(k)) { req in
                req.setValue(0, "id")
                body.withUnsafeBytes { req.copyBody($0) }
            }
        }
        #expect(s.loop.run(until: { s.events.responses == before + count }, timeoutNanoseconds: 20 * seconds))
    }

    @Test(arguments: TLSVersion.allCases)
    func http2OverTLSWithALPN(version: TLSVersion) throws {
        let s = try Self.connect(server: try TestPKI.serverContext(maximum: version), client: try TestPKI.clientContext())
        #expect(s.events.connected)
        try Self.roundTrips(s, count: 50)
        let info = try #require(s.client.tls)
        #expect(info.version == (version == .tls13 ? "TLSv1.3" : "TLSv1.2"))
        #expect(info.alpn == "h2")
        #expect(info.serverName == "localhost")
        #expect(info.cipher.hasPrefix("TLS_"))
        #expect(info.peerCertificate?.verified == true)
        #expect(info.peerCertificate?.subject.contains("CN=localhost") == true)
        let serverSide = try #require(s.recorder.opened.first?.tls)
        #expect(serverSide.serverName == "localhost")
        #expect(serverSide.alpn == "h2")
        #expect(serverSide.version == info.version)
        #expect(serverSide.peerCertificate == nil)
    }

    @Test func sniCarriesTheNameAskedFor() throws {
        let s = try Self.connect(server: try TestPKI.serverContext(), client: try TestPKI.clientContext(), serverName: "api.push.apple.com")
        #expect(s.events.connected)
        #expect(s.recorder.opened.first?.tls?.serverName == "api.push.apple.com")
        // An IP address is verified against the certificate's IP entries and sent without SNI.
        let ip = try Self.connect(server: try TestPKI.serverContext(), client: try TestPKI.clientContext(), serverName: "127.0.0.1")
        #expect(ip.events.connected)
        #expect(ip.recorder.opened.first?.tls?.serverName == nil)
    }

    @Test func aClientOfferingNoALPNGetsHTTP2ByItsPreface() throws {
        let s = try Self.connect(server: try TestPKI.serverContext(), client: try TestPKI.clientContext(alpn: []))
        #expect(s.events.connected)
        #expect(s.client.tls?.alpn == nil)
        try Self.roundTrips(s, count: 10)
        #expect(s.recorder.reasons.isEmpty)
    }

    @Test func aClientOfferingOnlyHTTP1IsRefusedWithTheReason() throws {
        let s = try Self.connect(server: try TestPKI.serverContext(), client: try TestPKI.clientContext(alpn: ["http/1.1"]))
        #expect(!s.events.connected)
        let error = try #require(s.events.connectError)
        #expect(error.kind == .tls)
        #expect(error.message.contains("no application protocol"))
        #expect(s.recorder.reasons == ["it offers only http/1.1 (ALPN); this server speaks h2"])
        #expect(s.server.connectionsRefused == 1)
    }

    @Test func anUntrustedCertificateFailsTheConnectBeforeAnyRequest() throws {
        let other = try TLSCertificateAuthority(commonName: "someone else")
        let tls = try TLSClientContext(trust: .certificates(pem: other.certificatePEM))
        let s = try Self.connect(server: try TestPKI.serverContext(), client: tls)
        let error = try #require(s.events.connectError)
        #expect(error.kind == .certificate)
        #expect(error.message == "certificate verify failed: self-signed certificate in certificate chain")
        #expect(s.recorder.requests == 0)
        // The client's alert reaches the server on a later loop turn.
        #expect(s.loop.run(until: { s.recorder.reasons.count == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(s.recorder.reasons.first?.hasPrefix("TLS handshake: ") == true)
    }

    @Test func aNameTheCertificateDoesNotCoverFails() throws {
        let s = try Self.connect(server: try TestPKI.serverContext(), client: try TestPKI.clientContext(), serverName: "example.org")
        let error = try #require(s.events.connectError)
        #expect(error.kind == .certificate)
        #expect(error.message.contains("mismatch"))
    }

    @Test func insecureTrustsAnything() throws {
        let tls = try TLSClientContext(trust: .insecure)
        let s = try Self.connect(server: try TestPKI.serverContext(), client: tls, serverName: "example.org")
        #expect(s.events.connected)
        try Self.roundTrips(s, count: 3)
    }

    @Test(arguments: [1, 7, 64 * 1024])
    func framesAndRecordsSplitAnywhere(readLimit: Int) throws {
        let s = try Self.connect(server: try TestPKI.serverContext(), client: try TestPKI.clientContext()) { c, srv in
            c.readLimit = readLimit
            srv.readLimit = readLimit
        }
        #expect(s.events.connected)
        try Self.roundTrips(s, count: 20, bodySize: 3000)
    }

    /// A TLS connection with no stream for a second gives its record buffers back (OpenSSL's and the
    /// ciphertext ones, about 66 KiB), at the server's sweep; its next request makes them again.
    @Test func anIdleServerConnectionGivesBackItsRecordBuffers() throws {
        let s = try Self.connect(server: try TestPKI.serverContext(), client: try TestPKI.clientContext())
        try Self.roundTrips(s, count: 5)
        let connection = try #require(s.recorder.opened.first)
        let t = try #require(connection.transport as? TLSTransport)
        #expect(t.holdsCiphertextBuffers && t.recordBuffersReleased == 0)
        #expect(s.loop.run(until: { t.recordBuffersReleased == 1 }, timeoutNanoseconds: 5 * seconds))
        #expect(!t.holdsCiphertextBuffers)
        try Self.roundTrips(s, count: 5)
        #expect(t.holdsCiphertextBuffers)
        #expect(s.recorder.requests == 10)
    }

    @Test func eachRecordIsDecryptedByOneSSLReadCall() throws {
        let s = try Self.connect(server: try TestPKI.serverContext(), client: try TestPKI.clientContext())
        try Self.roundTrips(s, count: 1)
        let buffers = s.loop.tlsBuffers
        let (reads, writes) = (buffers.sslReads, buffers.sslWrites)
        // One request at a time: a record each way per round trip, each delivered whole. A second
        // SSL_read per delivery (to hear WANT_READ) would double the reads.
        for _ in 0..<10 { try Self.roundTrips(s, count: 1) }
        let (r, w) = (buffers.sslReads - reads, buffers.sslWrites - writes)
        #expect(w == 20, "\(w) SSL_write calls for 10 round trips")
        #expect(r == w, "\(r) SSL_read calls for \(w) records")
    }

    @Test func aDeliveredRecordIsTakenByOneBIORead() throws {
        let s = try Self.connect(server: try TestPKI.serverContext(), client: try TestPKI.clientContext())
        try Self.roundTrips(s, count: 1)
        let buffers = s.loop.tlsBuffers
        let (bioReads, reads) = (buffers.bioReads, buffers.sslReads)
        // Read-ahead: OpenSSL takes the whole delivery at once; without it, it reads each record's
        // header and then its body, two reads a record.
        for _ in 0..<10 { try Self.roundTrips(s, count: 1) }
        let (b, r) = (buffers.bioReads - bioReads, buffers.sslReads - reads)
        #expect(r == 20, "\(r) SSL_read calls for 10 round trips")
        #expect(b == r, "\(b) BIO reads for \(r) records")
    }

    @Test func largeBodiesThroughSlowReaders() throws {
        let s = try Self.connect(server: try TestPKI.serverContext(), client: try TestPKI.clientContext()) { c, srv in
            c.bufferLimit = 5000
            srv.bufferLimit = 5000
        }
        #expect(s.events.connected)
        try Self.roundTrips(s, count: 20, bodySize: 7000)
    }

    @Test func clientCertificatesAreVerifiedAndTheirUIDReported() throws {
        let caFile = try writeTemp(TestPKI.ca.certificatePEM)
        let provider = try TestPKI.ca.issue(commonName: "Apple Push Services: com.example.app", uid: "com.example.app", usage: .client)
        let good = try TLSClientContext(trust: .certificates(pem: TestPKI.ca.certificatePEM),
                                        certificatePEM: provider.certificateChainPEM, privateKeyPEM: provider.privateKeyPEM)
        let s = try Self.connect(server: try TestPKI.serverContext(.request(caFile: caFile)), client: good)
        #expect(s.events.connected)
        let peer = try #require(s.recorder.opened.first?.tls?.peerCertificate)
        #expect(peer.subjectUID == "com.example.app")
        #expect(peer.verified)
        #expect(peer.subject.contains("UID=com.example.app"))
        #expect(provider.certificateChainPEM.hasPrefix(peer.pem))

        // From another CA: the handshake goes on (request), the verdict says why it did not verify.
        let stranger = try TLSCertificateAuthority(commonName: "not trusted").issue(commonName: "x", uid: "com.other", usage: .client)
        let bad = try TLSClientContext(trust: .certificates(pem: TestPKI.ca.certificatePEM),
                                       certificatePEM: stranger.certificateChainPEM, privateKeyPEM: stranger.privateKeyPEM)
        let s2 = try Self.connect(server: try TestPKI.serverContext(.request(caFile: caFile)), client: bad)
        #expect(s2.events.connected)
        let peer2 = try #require(s2.recorder.opened.first?.tls?.peerCertificate)
        #expect(!peer2.verified)
        #expect(peer2.subjectUID == "com.other")
        #expect(peer2.verificationError != nil)

        // No certificate: nothing to report under request, a failed handshake under require.
        let none = try Self.connect(server: try TestPKI.serverContext(.request(caFile: caFile)), client: try TestPKI.clientContext())
        #expect(none.events.connected)
        #expect(none.recorder.opened.first?.tls?.peerCertificate == nil)
        let required = try Self.connect(server: try TestPKI.serverContext(.require(caFile: caFile)), client: try TestPKI.clientContext())
        #expect(required.loop.run(until: { required.recorder.reasons.count == 1 }, timeoutNanoseconds: 10 * seconds))
        #expect(required.recorder.opened.isEmpty)
        #expect(required.recorder.reasons.first?.contains("certificate") == true)
    }

    /// A raw TLS client end (no HTTP/2 session) that records what it reads.
    final class RawClient: ByteTransportOwner {
        var connected = false
        var failed: TransportError?
        var closed = false
        var received: [UInt8] = []
        func transportDidConnect() { connected = true }
        func transportDidFailToConnect(_ error: TransportError) {
            failed = error
            failures += 1
        }
        var failures = 0
        func transportDidRead(_ bytes: UnsafeRawBufferPointer) { received += bytes }
        func transportWriteDidComplete() {}
        func transportDidClose(_ error: TransportError?) {
            closed = true
            closes += 1
            closeError = error
        }
        var closes = 0
        var closeError: TransportError?
    }

    /// A server end whose writes fail on demand as a socket's do once the peer is gone: it closes, tells
    /// its owner, and answers `.failed`.
    final class BreakableEnd: ByteTransport, ByteTransportOwner {
        unowned(unsafe) var owner: ByteTransportOwner?
        let inner: InMemoryTransport
        var breakWrites = false
        private var closed = false
        init(_ inner: InMemoryTransport) {
            self.inner = inner
            inner.owner = self
        }
        func write(_ iov: UnsafeMutablePointer<uv_buf_t>, count: Int) -> WriteOutcome {
            guard breakWrites else { return inner.write(iov, count: count) }
            close(TransportError(kind: .connectionLost, code: -32, function: "uv_try_write"), notify: true)
            return .failed
        }
        func startReading() { inner.startReading() }
        func close(_ error: TransportError?, notify: Bool) {
            if closed { return }
            closed = true
            inner.owner = nil
            inner.close(error, notify: false)
            if notify, let o = owner { o.transportDidClose(error) }
        }
        func peerName() -> String { "breakable" }
        func transportDidConnect() { owner?.transportDidConnect() }
        func transportDidFailToConnect(_ error: TransportError) { owner?.transportDidFailToConnect(error) }
        func transportDidRead(_ bytes: UnsafeRawBufferPointer) { owner?.transportDidRead(bytes) }
        func transportWriteDidComplete() { owner?.transportWriteDidComplete() }
        func transportDidClose(_ error: TransportError?) { owner?.transportDidClose(error) }
    }

    /// The peer's close_notify arrives and this end's own close_notify cannot be written (the socket
    /// reports its close first): the owner hears of the close once, not again after it may be gone.
    @Test func aCloseNotifyThatCannotBeWrittenClosesTheOwnerOnce() throws {
        let loop = try EventLoop()
        let (clientEnd, serverEnd) = InMemoryTransport.pair(loop: loop)
        let end = BreakableEnd(serverEnd)
        let server = try TLSTransport(server: try TestPKI.serverContext(), over: end, loop: loop, servesHTTP1: false)
        let serverOwner = RawClient()
        server.owner = serverOwner
        server.startReading()
        let client = try TLSTransport(client: try TestPKI.clientContext(), serverName: "localhost", over: clientEnd, loop: loop)
        let clientOwner = RawClient()
        client.owner = clientOwner
        client.startReading()
        client.transportDidConnect()
        #expect(loop.run(until: { clientOwner.connected && serverOwner.connected }, timeoutNanoseconds: 10 * seconds))
        end.breakWrites = true
        client.close(nil, notify: false)   // sends close_notify
        #expect(loop.run(until: { serverOwner.closed }, timeoutNanoseconds: 10 * seconds))
        loop.run(until: { false }, timeoutNanoseconds: 20_000_000)
        #expect(serverOwner.closes == 1)
        #expect(serverOwner.closeError?.function.description == "SSL_read", "the close_notify was read: \(String(describing: serverOwner.closeError))")
        withExtendedLifetime((server, client, end)) {}
    }

    /// A handshake that fails (the client offers only http/1.1) while its alert cannot be written: the
    /// owner hears of the failure once.
    @Test func aHandshakeAlertThatCannotBeWrittenFailsTheOwnerOnce() throws {
        let loop = try EventLoop()
        let (clientEnd, serverEnd) = InMemoryTransport.pair(loop: loop)
        let end = BreakableEnd(serverEnd)
        end.breakWrites = true
        let server = try TLSTransport(server: try TestPKI.serverContext(), over: end, loop: loop, servesHTTP1: false)
        let owner = RawClient()
        server.owner = owner
        server.startReading()
        let client = try TLSTransport(client: try TestPKI.clientContext(alpn: ["http/1.1"]), serverName: "localhost", over: clientEnd, loop: loop)
        let clientOwner = RawClient()
        client.owner = clientOwner
        client.startReading()
        client.transportDidConnect()
        #expect(loop.run(until: { owner.failed != nil }, timeoutNanoseconds: 10 * seconds))
        loop.run(until: { false }, timeoutNanoseconds: 20_000_000)
        #expect(owner.failures == 1)
        #expect(owner.failed?.kind == .tls, "\(String(describing: owner.failed))")
        #expect(owner.closes == 0)
        withExtendedLifetime((server, client, end)) {}
    }

    @Test func anHTTP1RequestWithoutALPNReadsA505AndIsRefused() throws {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        config.tls = try TestPKI.serverContext()
        let recorder = RecordingServer()
        let server = HTTP2Server(loop: loop, configuration: config, delegate: recorder)
        let (clientEnd, serverEnd) = InMemoryTransport.pair(loop: loop)
        server.accept(serverEnd)
        let raw = RawClient()
        let t = try TLSTransport(client: try TestPKI.clientContext(alpn: []), serverName: "localhost", over: clientEnd, loop: loop)
        t.owner = raw
        t.startReading()
        t.transportDidConnect()
        #expect(loop.run(until: { raw.connected }, timeoutNanoseconds: 10 * seconds))
        let request = Array("GET / HTTP/1.1\r\nhost: localhost\r\n\r\n".utf8)
        let iov = UnsafeMutablePointer<uv_buf_t>.allocate(capacity: 1)
        defer { iov.deallocate() }
        request.withUnsafeBufferPointer { b in
            iov.pointee = uv_buf_t(base: UnsafeMutableRawPointer(mutating: b.baseAddress!).assumingMemoryBound(to: CChar.self), len: b.count)
            _ = t.write(iov, count: 1)
        }
        #expect(loop.run(until: { raw.closed }, timeoutNanoseconds: 10 * seconds))
        #expect(String(decoding: raw.received, as: UTF8.self).hasPrefix("HTTP/1.1 505 HTTP Version Not Supported\r\n"))
        #expect(recorder.reasons == ["it sent an HTTP/1.x request; this server speaks HTTP/2 only"])
        withExtendedLifetime(t) {}
    }
}

/// Writes `text` to a fresh temporary file and returns its path.
func writeTemp(_ text: String) throws -> String {
    let path = "/tmp/pb-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).pem"
    guard let f = fopen(path, "w") else { throw TLSError("cannot write \(path)") }
    _ = text.withCString { fputs($0, f) }
    fclose(f)
    return path
}
