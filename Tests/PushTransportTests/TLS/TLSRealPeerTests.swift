import Dispatch
import Foundation
@testable import PushTransport
import Testing

/// HTTP/2 over TLS with real peers on loopback: curl, h2load and nghttp against our server, our client
/// against nghttpd (Python's ssl + h2 offering no ALPN: GatewayTLSTests). A missing peer fails its test.
@Suite struct TLSRealPeerTests {
    /// The test CA and the server certificate and key, as files for the peers.
    struct Files {
        let ca: String, cert: String, key: String
        init() throws {
            ca = try writeTemp(TestPKI.ca.certificatePEM)
            cert = try writeTemp(TestPKI.server.certificateChainPEM)
            key = try writeTemp(TestPKI.server.privateKeyPEM)
        }
        func remove() { for f in [ca, cert, key] { unlink(f) } }
    }

    static func curl(_ args: [String], port: Int, files: Files) throws -> (Int32, String) {
        try RealPeerTests.run(try RealPeerTests.peer("curl"),
                              ["-sS", "-m", "20", "--cacert", files.ca, "--resolve", "localhost:\(port):127.0.0.1",
                               "--resolve", "api.push.apple.com:\(port):127.0.0.1", "-D", "-"] + args)
    }

    @Test(arguments: [["--tlsv1.2", "--tls-max", "1.2"], ["--tlsv1.3"]])
    func curlOverHTTPSGetsHTTP2ByALPN(versionFlags: [String]) throws {
        let files = try Files()
        defer { files.remove() }
        let server = try RealPeerTests.BackgroundServer(tls: try TestPKI.serverContext())
        defer { server.stop() }
        let (status, out) = try Self.curl(versionFlags + ["-d", "{\"a\":1}", "https://localhost:\(server.port)/3/device/abc"],
                                          port: server.port, files: files)
        #expect(status == 0, "curl said: \(out)")
        #expect(out.hasPrefix("HTTP/2 200"), "curl said: \(out)")
        #expect(out.contains("x-body-length: 7"), "curl said: \(out)")
        #expect(out.contains("x-sni: localhost"), "curl said: \(out)")
        #expect(out.contains("x-tls-version: TLSv1.\(versionFlags[0] == "--tlsv1.3" ? 3 : 2)"), "curl said: \(out)")
    }

    @Test func sniNamesTheHostTheClientAskedFor() throws {
        let files = try Files()
        defer { files.remove() }
        let server = try RealPeerTests.BackgroundServer(tls: try TestPKI.serverContext())
        defer { server.stop() }
        let (status, out) = try Self.curl(["https://api.push.apple.com:\(server.port)/3/device/abc"], port: server.port, files: files)
        #expect(status == 0, "curl said: \(out)")
        #expect(out.contains("x-sni: api.push.apple.com"), "curl said: \(out)")
    }

    @Test func curlOfferingOnlyHTTP1IsRefusedCleanly() throws {
        let files = try Files()
        defer { files.remove() }
        let server = try RealPeerTests.BackgroundServer(tls: try TestPKI.serverContext())
        defer { server.stop() }
        let (status, out) = try Self.curl(["--http1.1", "https://localhost:\(server.port)/3/device/abc"], port: server.port, files: files)
        // 35: the TLS handshake failed (the server's no_application_protocol alert).
        #expect(status == 35, "curl said: \(out)")
        #expect(out.contains("no application protocol"), "curl said: \(out)")
    }

    @Test func curlRejectsACertificateItDoesNotTrust() throws {
        let server = try RealPeerTests.BackgroundServer(tls: try TestPKI.serverContext())
        defer { server.stop() }
        let (status, out) = try RealPeerTests.run(try RealPeerTests.peer("curl"),
                                                  ["-sS", "-m", "20", "--resolve", "localhost:\(server.port):127.0.0.1",
                                                   "https://localhost:\(server.port)/"])
        #expect(status == 60, "curl said: \(out)")
    }

    @Test(arguments: ["TLSv1.2", "TLSv1.3"])
    func h2loadOverTLS(version: String) throws {
        let server = try RealPeerTests.BackgroundServer(tls: try TestPKI.serverContext(maximum: version == "TLSv1.2" ? .tls12 : .tls13))
        defer { server.stop() }
        let (status, out) = try RealPeerTests.run(try RealPeerTests.peer("h2load"),
                                                  ["-n", "5000", "-c", "4", "-m", "20", "-t", "1",
                                                   "https://127.0.0.1:\(server.port)/3/device/abc"])
        #expect(status == 0)
        #expect(out.contains("5000 total, 5000 started, 5000 done, 5000 succeeded, 0 failed, 0 errored"), "h2load said: \(out)")
        #expect(out.contains("Protocol: \(version)"), "h2load said: \(out)")
        #expect(out.contains("Application protocol: h2"), "h2load said: \(out)")
    }

    @Test func nghttpOverTLS() throws {
        let server = try RealPeerTests.BackgroundServer(tls: try TestPKI.serverContext())
        defer { server.stop() }
        let (status, out) = try RealPeerTests.run(try RealPeerTests.peer("nghttp"),
                                                  ["-v", "-d", "/dev/null", "https://127.0.0.1:\(server.port)/3/device/abc"])
        #expect(status == 0, "nghttp said: \(out)")
        #expect(out.contains("The negotiated protocol: h2"), "nghttp said: \(out)")
        #expect(out.contains(":status: 200"), "nghttp said: \(out)")
    }

    /// nghttpd over TLS with our certificate, on a free port; stopped by the returned closure.
    static func startNghttpd(files: Files, dir: URL) throws -> (port: Int, stop: () -> Void) {
        let port = try RealPeerTests.freePort()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try RealPeerTests.peer("nghttpd"))
        p.arguments = ["-d", dir.path, "--address=127.0.0.1", String(port), files.key, files.cert]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return (port, { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() })
    }

    @Test(arguments: TLSVersion.allCases)
    func ourClientAgainstNghttpdOverTLS(maximum: TLSVersion) throws {
        let files = try Files()
        defer { files.remove() }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pb-nghttpd-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let content = Array(repeating: Array("pushbench file\n".utf8), count: 2000).flatMap { $0 }
        try Data(content).write(to: dir.appendingPathComponent("hello.txt"))
        let (port, stop) = try Self.startNghttpd(files: files, dir: dir)
        defer { stop() }

        let loop = try EventLoop()
        let tls = try TestPKI.clientContext(maximum: maximum)
        var d = TestClient()
        var client: HTTP2ClientConnection?
        for _ in 0..<100 {
            d = TestClient()
            client = HTTP2ClientConnection(loop: loop, delegate: d)
            client!.connect(host: "127.0.0.1", port: port, tls: tls, serverName: "localhost")
            loop.run(until: { d.connected || d.connectError != nil }, timeoutNanoseconds: 10 * seconds)
            if d.connected { break }
            usleep(50_000)
        }
        guard let client, d.connected else {
            Issue.record("could not connect to nghttpd on port \(port): \(String(describing: d.connectError))")
            return
        }
        #expect(client.tls?.version == (maximum == .tls13 ? "TLSv1.3" : "TLSv1.2"))
        #expect(client.tls?.alpn == "h2")
        let block = try HTTP2HeaderBlock.request(scheme: "https", authority: "localhost:\(port)", path: "/hello.txt")
        let body = Array(repeating: UInt8(ascii: "x"), count: 20_000)
        for k in 0..<40 {
            try client.submit(block, context: UInt64(k)) { req in body.withUnsafeBytes { req.copyBody($0) } }
        }
        #expect(loop.run(until: { d.responses + d.failures.count == 40 }, timeoutNanoseconds: 30 * seconds))
        #expect(d.statuses[200] == 40)
        #expect(d.lastBody == content)
        client.close()
    }
}
