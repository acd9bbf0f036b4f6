import Foundation
import Testing

/// FCM runs over HTTP/1.1 and with a service account's access tokens, as a user types them.
@Suite(.serialized) struct HTTP1RunTests {
    /// `pushbench credentials fcm` into `dir`; returns the service-account path.
    static func credentials(_ dir: URL, tokenURI: String = "http://127.0.0.1:9/token") throws -> String {
        let r = try PushbenchBinary.run(["credentials", "fcm", "--out", dir.path, "--token-uri", tokenURI])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("--fcm-service-account"), "\(r.out)")
        let path = dir.appendingPathComponent("service-account.json").path
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        return path
    }

    @Test func anFCMRunWithCredentialsOverHTTP1WritesACompleteResultsFolder() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let account = try Self.credentials(out)
        // Tokens that live 2 s: a 4 s run needs refreshes, and the embedded gateway (--fcm-auth oauth, set
        // by --credentials) answers 401 to any request whose token expired.
        let r = try PushbenchBinary.run(["--protocol", "fcm", "--http1", "--credentials", account, "--rps", "1000",
                                         "--duration", "4s", "--warmup", "0s", "--connections", "4", "--out", out.path,
                                         "--gateway-arg=--fcm-token-lifetime=2s", "--json"])
        #expect(r.status == 0, "\(r.err)")
        let latest = out.appendingPathComponent("latest")
        for file in ["summary.json", "latency.hgrm", "latency.hlog", "service_time.hlog", "timeline.csv", "report.svg"] {
            #expect(FileManager.default.fileExists(atPath: latest.appendingPathComponent(file).path), "\(file)")
        }
        let summary = try PushbenchBinary.summary(out)
        let requests = try #require(summary["requests"] as? [String: Any])
        let sent = requests["sent"] as? Int ?? -1
        #expect(sent == 4000)
        #expect(sent == (requests["completed"] as? Int ?? 0) + (requests["transport_errors"] as? Int ?? 0)
                + (requests["unfinished"] as? Int ?? 0))
        #expect((requests["by_status"] as? [String: Int]) == ["200": 4000], "\(requests)")
        let config = try #require(summary["config"] as? [String: Any])
        #expect(config["http"] as? String == "1.1" && config["credentials"] as? Bool == true && config["streams"] as? Int == 1)
        #expect((summary["reconciliation"] as? [String: Any])?["consistent"] as? Bool == true)
        // No key or token anywhere in the folder.
        for file in try FileManager.default.contentsOfDirectory(atPath: latest.path) {
            let text = (try? String(contentsOfFile: latest.appendingPathComponent(file).path, encoding: .utf8)) ?? ""
            #expect(!text.contains("ya29."), "\(file) holds an access token")
            #expect(!text.contains("BEGIN PRIVATE KEY"), "\(file) holds the key")
        }
    }

    @Test func http1OverTLSFetchesItsTokenOverHTTPSToo() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let account = try Self.credentials(out)
        // --tls: the embedded gateway over TLS, its token endpoint https, its CA trusted; ALPN http/1.1.
        let r = try PushbenchBinary.run(["--protocol", "fcm", "--http1", "--tls", "--credentials", account, "--rps", "500",
                                         "--duration", "1s", "--warmup", "0s", "--connections", "4", "--out", out.path, "--quiet"])
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.accountingHolds(s))
        #expect(PushbenchBinary.int(s, "requests", "succeeded") == 500)
        let tls = try #require(s["tls"] as? [String: Any])
        #expect(tls["alpn"] as? String == "http/1.1" && tls["verified"] as? Bool == true && tls["handshakes"] as? Int == 4, "\(tls)")
        let gateway = try #require(s["gateway"] as? [String: Any])
        #expect(PushbenchBinary.int(gateway, "http1", "requests") == 501, "\(gateway)")   // the token fetch and the sends
    }

    @Test func http2AndHTTP1RunsOfOneRateCompare() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        for http1 in [false, true] {
            let r = try PushbenchBinary.run(["--protocol", "fcm", "--rps", "500", "--duration", "1s", "--warmup", "0s",
                                             "--out", out.path, "--label", http1 ? "h1" : "h2", "--quiet"] + (http1 ? ["--http1"] : []))
            #expect(r.status == 0, "\(r.err)")
            let s = try PushbenchBinary.summary(out)
            #expect((s["config"] as? [String: Any])?["http"] as? String == (http1 ? "1.1" : "2"))
            #expect(PushbenchBinary.int(s, "requests", "succeeded") == 500)
        }
    }

    @Test func badCredentialsAreOneLineBeforeAnyTraffic() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let bad = out.appendingPathComponent("bad.json")
        try #"{"type":"service_account"}"#.write(to: bad, atomically: true, encoding: .utf8)
        var r = try PushbenchBinary.run(["--protocol", "fcm", "--credentials", bad.path, "--out", out.path])
        #expect(r.status == 2 && r.err.contains("--credentials: \(bad.path): field 'project_id'"), "\(r.err)")
        r = try PushbenchBinary.run(["--http1", "--out", out.path])
        #expect(r.status == 2 && r.err.contains("--http1: APNs is HTTP/2 only"), "\(r.err)")
        // A token endpoint nobody listens on: exit 3, naming it.
        let account = try Self.credentials(out)
        r = try PushbenchBinary.run(["--protocol", "fcm", "--credentials", account, "--target", "http://127.0.0.1:9",
                                     "--duration", "1s", "--out", out.path])
        #expect(r.status == 3 && r.err.contains("token_uri http://127.0.0.1:9/token"), "\(r.err)")
    }
}
