import Foundation
import Testing

/// A real peer a test needs is not installed (scripts/setup installs every one): the test fails.
struct MissingTLSPeer: Error, CustomStringConvertible {
    var name: String
    var description: String { "\(name) is not installed; scripts/setup installs it" }
}

/// `pushbench gateway --tls` as a user runs it, with real clients over TLS: curl, h2load, Python's
/// ssl + h2 offering no ALPN, and `pushbench run --target https://…`.
@Suite(.serialized) struct GatewayTLSTests {
    static var binary: String? {
        for dir in [".build/debug", ".build/release"] {
            let path = packageRoot.appendingPathComponent(dir).appendingPathComponent("pushbench").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    static func peer(_ name: String) throws -> String {
        guard let path = which(name) else { throw MissingTLSPeer(name: name) }
        return path
    }

    /// A `pushbench gateway --tls` child listening on a free port, with the CA it wrote to trust.
    final class TLSGateway {
        let child: Child
        let port: Int
        let caFile: String
        let firstLine: String

        init(_ extra: [String] = [], caFile: String? = nil, directory: URL? = nil) throws {
            let bin = try #require(GatewayTLSTests.binary, "build pushbench first (swift build --build-tests)")
            self.caFile = caFile ?? NSTemporaryDirectory() + "pushbench-test-ca-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).pem"
            child = Child()
            child.process.executableURL = URL(fileURLWithPath: bin)
            child.process.arguments = ["gateway", "--listen", "127.0.0.1:0", "--tls", "--tls-name", "api.push.apple.com"]
                + (caFile == nil && directory != nil ? [] : ["--tls-cert-out", self.caFile]) + extra
            if let directory { child.process.currentDirectoryURL = directory }
            try child.start()
            var port = 0
            var seen = ""
            let deadline = Date().addingTimeInterval(30)
            while port == 0 && Date() < deadline {
                usleep(50_000)
                seen = child.peekStdout()
                if let r = seen.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                    port = Int(seen[r].split(separator: ":").last!) ?? 0
                }
            }
            self.port = port
            firstLine = seen.split(separator: "\n").first.map(String.init) ?? ""
            if port == 0 { child.process.terminate() }
            try #require(port > 0, "no listening line: \(seen)")
        }

        /// SIGTERM, then what it printed (the final stats are its last stdout line).
        func stop() -> ProcessResult {
            kill(child.process.processIdentifier, SIGTERM)
            let r = child.finish(timeout: 30)
            unlink(caFile)
            return r
        }

        func curl(_ args: [String]) throws -> ProcessResult {
            try runProcess(try GatewayTLSTests.peer("curl"),
                           ["-sS", "-m", "20", "--resolve", "localhost:\(port):127.0.0.1", "--resolve", "api.push.apple.com:\(port):127.0.0.1"]
                           + args, timeout: 60)
        }
    }

    static let push = ["-H", "apns-topic: com.example.app", "-d", #"{"aps":{"alert":"hi"}}"#]

    @Test func curlTrustsTheWrittenCertificateOverHTTP2AndHTTP1AndAnUntrustedOneIsLogged() throws {
        let g = try TLSGateway()
        #expect(g.firstLine.contains("TLS, h2 and http/1.1; a generated certificate for localhost, 127.0.0.1, ::1, api.push.apple.com: clients trust \(g.caFile)"),
                "\(g.firstLine)")
        let ok = try g.curl(["--cacert", g.caFile, "-D", "-"] + Self.push + ["https://api.push.apple.com:\(g.port)/3/device/\(validToken)"])
        #expect(ok.status == 0, "curl: \(ok.stderr)")
        #expect(ok.stdout.hasPrefix("HTTP/2 200"), "\(ok.stdout)")
        #expect(ok.stdout.contains("apns-id: "), "\(ok.stdout)")
        let v12 = try g.curl(["--cacert", g.caFile, "--tlsv1.2", "--tls-max", "1.2", "-o", "/dev/null", "-w", "%{http_code} %{http_version}"]
                             + Self.push + ["https://localhost:\(g.port)/3/device/\(validToken)"])
        #expect(v12.stdout == "200 2", "curl: \(v12.stdout) \(v12.stderr)")
        // ALPN http/1.1: /stats answers; the APNs route is refused as APNs refuses HTTP/1.1 (binary
        // SETTINGS and GOAWAY where curl expects a status line).
        let stats = try g.curl(["--cacert", g.caFile, "--http1.1", "-D", "-", "https://localhost:\(g.port)/stats"])
        #expect(stats.status == 0 && stats.stdout.hasPrefix("HTTP/1.1 200"), "curl: \(stats.stdout) \(stats.stderr)")
        let h1 = try g.curl(["--cacert", g.caFile, "--http1.1"] + Self.push + ["https://localhost:\(g.port)/3/device/\(validToken)"])
        #expect(h1.status == 1, "curl: \(h1.stderr)")
        let untrusted = try g.curl(["https://localhost:\(g.port)/3/device/\(validToken)"])
        #expect(untrusted.status == 60, "curl: \(untrusted.stderr)")
        let r = g.stop()
        #expect(r.status == 0)
        #expect(r.stderr.contains("pushbench gateway: refused a connection from 127.0.0.1:"), "\(r.stderr)")
        #expect(r.stderr.contains("TLS handshake: tlsv1 alert unknown ca"), "\(r.stderr)")
        #expect(r.stdout.split(separator: "\n").last?.hasPrefix(#"{"requests":2,"by_status":{"200":2}"#) == true, "\(r.stdout)")
    }

    @Test func withoutCertOutTheCertificateGoesToTheWorkingDirectoryAndTheFirstLineSaysSo() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-tls-cwd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let g = try TLSGateway(directory: dir)
        #expect(g.firstLine.contains("clients trust pushbench-gateway-ca.pem"), "\(g.firstLine)")
        let written = dir.appendingPathComponent("pushbench-gateway-ca.pem").path
        #expect(FileManager.default.fileExists(atPath: written))
        let ok = try g.curl(["--cacert", written, "-o", "/dev/null", "-w", "%{http_code}"] + Self.push
                            + ["https://localhost:\(g.port)/3/device/\(validToken)"])
        #expect(ok.stdout == "200", "curl: \(ok.stderr)")
        _ = g.stop()
    }

    @Test func h2loadOverTLS() throws {
        let g = try TLSGateway()
        defer { _ = g.stop() }
        let body = NSTemporaryDirectory() + "pushbench-h2load-body-\(getpid()).json"
        try #"{"aps":{"alert":"hi"}}"#.write(toFile: body, atomically: true, encoding: .utf8)
        defer { unlink(body) }
        let r = try runProcess(try Self.peer("h2load"), ["-n", "3000", "-c", "4", "-m", "20", "-t", "1", "-H", "apns-topic: com.example.app",
                                                        "-d", body, "https://127.0.0.1:\(g.port)/3/device/\(validToken)"], timeout: 120)
        #expect(r.stdout.contains("3000 total, 3000 started, 3000 done, 3000 succeeded"), "\(r.stdout)")
        #expect(r.stdout.contains("Application protocol: h2"), "\(r.stdout)")
    }

    @Test func aClientOfferingNoALPNGetsHTTP2() throws {
        let g = try TLSGateway()
        defer { _ = g.stop() }
        let script = temporaryScript("tls-no-alpn", """
        import socket, ssl, sys, h2.connection, h2.events, h2.config
        ctx = ssl.create_default_context(cafile=sys.argv[1])   # no set_alpn_protocols: no ALPN offered at all
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=10), server_hostname="localhost")
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        c.initiate_connection()
        c.send_headers(1, [(":method", "POST"), (":scheme", "https"), (":authority", "localhost"),
                           (":path", "/3/device/" + sys.argv[3]), ("apns-topic", "com.example.app")])
        c.send_data(1, b'{"aps":{"alert":"hi"}}', end_stream=True)
        s.sendall(c.data_to_send())
        status = None
        while status is None:
            data = s.recv(65536)
            if not data: break
            for e in c.receive_data(data):
                if isinstance(e, h2.events.ResponseReceived): status = dict(e.headers)[b":status"].decode()
            s.sendall(c.data_to_send())
        print("alpn", s.selected_alpn_protocol(), "status", status)
        """)
        let r = try runProcess(try Self.peer("python3"), [script, g.caFile, String(g.port), validToken])
        #expect(r.stdout.contains("alpn None status 200"), "\(r.stdout) \(r.stderr)")
    }

    @Test func pushbenchAsAClientVerifiesTheGatewayAndACertificateItCannotVerifyExitsThreeBeforeTraffic() throws {
        let bin = try #require(Self.binary)
        let g = try TLSGateway()
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-tls-run-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let good = try runProcess(bin, ["run", "--target", "https://localhost:\(g.port)", "--cacert", g.caFile, "--requests", "300",
                                        "--rps", "300", "--quiet", "--out", out.path], timeout: 120)
        #expect(good.status == 0, "\(good.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("latest/summary.json"))) as? [String: Any]
        let tls = summary?["tls"] as? [String: Any]
        #expect(tls?["alpn"] as? String == "h2")
        #expect(tls?["server_name"] as? String == "localhost")
        #expect(tls?["verified"] as? Bool == true)

        // The system store does not know the gateway's CA: exit 3 naming the target, nothing sent.
        let bad = try runProcess(bin, ["run", "--target", "https://localhost:\(g.port)", "--requests", "300", "--quiet",
                                       "--out", out.appendingPathComponent("bad").path], timeout: 120)
        #expect(bad.status == 3, "\(bad.stderr)")
        #expect(bad.stderr.contains("localhost (127.0.0.1):\(g.port): TLS: certificate verify failed"), "\(bad.stderr)")
        // The results root is checked (and made) before connecting; no run folder goes in it.
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("bad").path)) ?? []).isEmpty)

        let insecure = try runProcess(bin, ["run", "--target", "https://127.0.0.1:\(g.port)", "--insecure", "--requests", "100",
                                            "--quiet", "--json", "--out", out.path], timeout: 120)
        #expect(insecure.status == 0, "\(insecure.stderr)")
        #expect(insecure.stdout.contains(#""verified": false"#), "\(insecure.stdout)")
        let r = g.stop()
        // Only the verified runs' requests arrived (warm-up is off with --requests).
        #expect(r.stdout.split(separator: "\n").last?.hasPrefix(#"{"requests":400,"#) == true, "\(r.stdout)")
    }

    @Test(arguments: [
        (["--tls-key", "k.pem"], "pushbench gateway: --tls-key: give the certificate too (--tls-cert FILE)"),
        (["--tls-cert", "c.pem"], "pushbench gateway: --tls-cert: give its private key too (--tls-key FILE)"),
        (["--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem"], "pushbench gateway: --tls-cert: /nonexistent/c.pem: No such file or directory"),
        (["--tls-cert", "/etc/hostname", "--tls-key", "/etc/hostname", "--tls-name", "x"],
         "pushbench gateway: --tls-name: names go into a generated certificate, not one given with --tls-cert"),
        (["--tls-name", "a,b"], "pushbench gateway: --tls-name: 'a,b' is not a DNS name or IP address"),
    ])
    func badTLSOptionsExitTwo(args: [String], message: String) throws {
        let bin = try #require(Self.binary)
        let r = try runProcess(bin, ["gateway"] + args, timeout: 30)
        #expect(r.status == 2)
        #expect(r.stderr.hasPrefix(message), "\(r.stderr)")
    }
}
