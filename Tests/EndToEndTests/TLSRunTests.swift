import Foundation
@testable import PushCredentials
import PushTransport
import Testing

/// `pushbench` over TLS as a user runs it: `--tls` (the embedded gateway over TLS, trusted), an
/// https:// target served by nghttpd over TLS, and the TLS options' bad input.
@Suite(.serialized) struct TLSRunTests {
    @Test func tlsRunsTheEmbeddedGatewayOverTLSAndRecordsTheHandshakes() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--tls", "--rps", "1000", "--requests", "1500", "--connections", "4", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.accountingHolds(s))
        #expect(PushbenchBinary.int(s, "requests", "succeeded") == 1500)
        let tls = try #require(s["tls"] as? [String: Any])
        #expect(tls["version"] as? String == "TLSv1.3")
        #expect(tls["alpn"] as? String == "h2")
        #expect(tls["server_name"] as? String == "localhost")
        #expect(tls["verified"] as? Bool == true)
        #expect((tls["cipher"] as? String)?.hasPrefix("TLS_") == true)
        #expect(tls["handshakes"] as? Int == 4)
        #expect(PushbenchBinary.int(tls, "handshake_us", "count") == 4)
        #expect(PushbenchBinary.int(tls, "handshake_us", "max") > 0)
        #expect((tls["handshake_histogram"] as? String)?.isEmpty == false)
        // The end summary names them on one line; the progress line carries version and ALPN.
        #expect(r.out.contains("  tls        TLSv1.3  TLS_"), "\(r.out)")
        #expect(r.out.contains("4 handshakes"), "\(r.out)")
        #expect(r.out.contains("TLSv1.3 h2"), "\(r.out)")
    }

    /// A gateway that retires each connection with GOAWAY after 500 streams, then ends it with a TLS
    /// close (close_notify, FIN): every connection ends as closed by GOAWAY, not lost, and no request
    /// is a transport error (those above the last stream id are resent), over TLS as over h2c.
    @Test(arguments: [true, false])
    func aGoAwayEvery500StreamsLosesNothing(tls: Bool) throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run((tls ? ["--tls"] : []) + ["--gateway-arg=--goaway-after-streams=500",
                                         "--rps", "5000", "--duration", "10s", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.accountingHolds(s))
        #expect(PushbenchBinary.int(s, "connections", "goaways") >= 90)
        #expect(PushbenchBinary.int(s, "connections", "lost") == 0, "\(s["connections"] ?? "")")
        #expect(PushbenchBinary.int(s, "requests", "transport_errors") == 0,
                "\((s["accounting"] as? [String: Any])?["transport_errors_by_cause"] ?? "")")
        #expect(PushbenchBinary.int(s, "requests", "succeeded") == PushbenchBinary.int(s, "requests", "sent"))
    }

    /// `--tls` with provider tokens: a sender as it talks to APNs, the embedded gateway checking the
    /// run's tokens over TLS (re-signed faster than the gateway allows, they are refused as APNs does).
    @Test func tlsWithProviderTokensTheEmbeddedGatewayChecksThem() throws {
        let dir = PushbenchBinary.tempDir("pushbench-tls-auth")
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyFile = dir.appendingPathComponent("AuthKey_KEY1234567.p8").path
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try Data(try ES256PrivateKey.generate().pkcs8PEM().utf8).write(to: URL(fileURLWithPath: keyFile))
        let auth = ["--tls", "--auth-key", keyFile, "--key-id", "KEY1234567", "--team-id", "TEAM123456", "--connections", "2"]

        let out = dir.appendingPathComponent("ok")
        let r = try PushbenchBinary.run(auth + ["--rps", "1000", "--requests", "1000", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.accountingHolds(s))
        #expect(PushbenchBinary.int(s, "requests", "succeeded") == 1000, "\(PushbenchBinary.byReasonWholeRun(s))")
        let tls = try #require(s["tls"] as? [String: Any])
        #expect(tls["alpn"] as? String == "h2" && tls["verified"] as? Bool == true)
        #expect((s["provider_token"] as? [String: Any])?["key_id"] as? String == "KEY1234567")
        #expect(r.out.contains("  tls        TLSv1.3"), "\(r.out)")
        #expect(r.out.contains("  auth       provider tokens: key KEY1234567"), "\(r.out)")

        let churn = dir.appendingPathComponent("churn")
        let c = try PushbenchBinary.run(auth + ["--rps", "1000", "--requests", "1000", "--auth-refresh", "50ms", "--out", churn.path])
        #expect(c.status == 0, "\(c.err)")
        let cs = try PushbenchBinary.summary(churn)
        #expect((PushbenchBinary.byReasonWholeRun(cs)["TooManyProviderTokenUpdates"] ?? 0) > 0, "\(PushbenchBinary.byReasonWholeRun(cs))")
        #expect(PushbenchBinary.int(cs, "requests", "succeeded") > 0)
    }

    /// `--cert`/`--key`: APNs certificate authentication against the embedded gateway over TLS, with a
    /// client certificate from the credentials helper's CA; without one the gateway answers as APNs.
    @Test func aClientCertificateAuthenticatesTheRun() throws {
        let dir = PushbenchBinary.tempDir("pushbench-tls-cert")
        defer { try? FileManager.default.removeItem(at: dir) }
        let creds = dir.appendingPathComponent("creds")
        let c = try PushbenchBinary.run(["credentials", "apns", "--out", creds.path, "--client-cert"])
        #expect(c.status == 0, "\(c.err)")
        let file = { (name: String) in creds.appendingPathComponent(name).path }
        let gateway = ["--tls", "--gateway-arg=--client-ca=\(file("ca.pem"))", "--rps", "500", "--requests", "300", "--connections", "2"]

        let out = dir.appendingPathComponent("cert")
        let r = try PushbenchBinary.run(gateway + ["--cert", file("client-cert.pem"), "--key", file("client-key.pem"), "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.int(s, "requests", "succeeded") == 300, "\(PushbenchBinary.byReasonWholeRun(s))")
        #expect((s["tls"] as? [String: Any])?["verified"] as? Bool == true)

        let none = dir.appendingPathComponent("none")
        let n = try PushbenchBinary.run(gateway + ["--out", none.path])
        #expect(n.status == 0, "\(n.err)")
        #expect(PushbenchBinary.byReasonWholeRun(try PushbenchBinary.summary(none)) == ["MissingProviderToken": 300])
    }

    @Test func anHTTPSTargetServedByNghttpd() throws {
        let nghttpd = try #require(["/usr/sbin/nghttpd", "/usr/bin/nghttpd"].first { FileManager.default.isExecutableFile(atPath: $0) },
                                   "nghttpd is not installed; scripts/setup installs it")
        let dir = PushbenchBinary.tempDir("pushbench-nghttpd-tls")
        defer { try? FileManager.default.removeItem(at: dir) }
        let ca = try TLSCertificateAuthority()
        let id = try ca.issue(commonName: "localhost", names: ["localhost", "127.0.0.1"])
        let caFile = dir.appendingPathComponent("ca.pem"), cert = dir.appendingPathComponent("cert.pem"), key = dir.appendingPathComponent("key.pem")
        try Data(ca.certificatePEM.utf8).write(to: caFile)
        try Data(id.certificateChainPEM.utf8).write(to: cert)
        try Data(id.privateKeyPEM.utf8).write(to: key)
        let docroot = dir.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: docroot, withIntermediateDirectories: true)
        // A free port: bind one with our own server and let it go.
        let loop = try EventLoop()
        let probe = HTTP2Server(loop: loop, delegate: nil)
        let port = try probe.listen(host: "127.0.0.1", port: 0)
        probe.close()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: nghttpd)
        p.arguments = ["-d", docroot.path, "--address=127.0.0.1", String(port), key.path, cert.path]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        // nghttpd does not exit on SIGTERM while serving; SIGKILL is the bounded way to stop it.
        defer { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        usleep(300_000)

        let out = dir.appendingPathComponent("results")
        var r = try PushbenchBinary.run(["--target", "https://localhost:\(port)", "--cacert", caFile.path, "--rps", "500",
                                         "--requests", "500", "--out", out.path, "--quiet"])
        if r.status == 3 {  // nghttpd was still starting: once more
            usleep(1_000_000)
            r = try PushbenchBinary.run(["--target", "https://localhost:\(port)", "--cacert", caFile.path, "--rps", "500",
                                         "--requests", "500", "--out", out.path, "--quiet"])
        }
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.accountingHolds(s))
        // nghttpd answers every push 404 (no such file): answered, over TLS.
        #expect(PushbenchBinary.int(s, "requests", "completed") == 500)
        #expect((s["tls"] as? [String: Any])?["alpn"] as? String == "h2")
        #expect((s["tls"] as? [String: Any])?["verified"] as? Bool == true)
    }

    @Test(arguments: [
        (["--tls", "--target", "https://127.0.0.1:1"], "--tls: runs the embedded gateway over TLS; for a target give an https:// URL"),
        (["--target", "http://127.0.0.1:1", "--insecure"], "--insecure: the target is http:// (h2c); TLS options need an https:// target"),
        (["--cacert", "/tmp/x.pem"], "--cacert: needs TLS: an https:// --target, or --tls for the embedded gateway"),
        (["--tls", "--cert", "/tmp/c.pem"], "--cert: give its key too (--key FILE)"),
        (["--tls", "--cacert", "/tmp/x.pem", "--insecure"], "--insecure: trusts anything, so --cacert would be ignored; give one"),
        (["--tls", "--cacert", "/nonexistent/ca.pem"], "TLS: /nonexistent/ca.pem: No such file or directory"),
    ])
    func badTLSInputExitsTwo(args: [String], message: String) throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(args + ["--requests", "10", "--out", out.path, "--quiet"])
        #expect(r.status == 2, "\(r.err)")
        #expect(r.err.contains(message), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("latest").path))
    }
}
