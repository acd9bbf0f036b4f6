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

    @Test func credentialsFCMWritesAServiceAccountAndTheFlagsThatGoWithIt() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try PushbenchBinary.run(["credentials", "fcm", "--out", dir.path, "--project", "my-proj",
                                         "--token-uri", "https://127.0.0.1:8443/token"])
        #expect(r.status == 0, "\(r.err)")
        let path = dir.appendingPathComponent("service-account.json").path
        let account = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        #expect(account["type"] as? String == "service_account")
        #expect(account["project_id"] as? String == "my-proj")
        let keyID = try #require(account["private_key_id"] as? String)
        #expect(keyID.count == 40 && keyID.allSatisfy(\.isHexDigit), "\(keyID)")
        let email = try #require(account["client_email"] as? String)
        #expect(email == "pushbench@my-proj.iam.gserviceaccount.com")
        #expect(account["token_uri"] as? String == "https://127.0.0.1:8443/token")
        let pem = try #require(account["private_key"] as? String)
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n") && pem.hasSuffix("-----END PRIVATE KEY-----\n"))
        // The key is a 2048-bit RSA key as OpenSSL reads it.
        let keyFile = dir.appendingPathComponent("key.pem")
        try pem.write(to: keyFile, atomically: true, encoding: .utf8)
        let openssl = try PushbenchBinary.run(["pkey", "-in", keyFile.path, "-noout", "-text"], executable: URL(fileURLWithPath: "/usr/bin/openssl"))
        #expect(openssl.status == 0 && openssl.out.contains("Private-Key: (2048 bit"), "\(openssl.err)")
        // The lines printed: the account, and the gateway, run and firebase-admin settings for this token_uri.
        let lines = r.out.split(separator: "\n").map(String.init)
        #expect(lines.first == "pushbench credentials: service account \(path) (client_email \(email), private_key_id \(keyID))")
        #expect(lines.contains("  gateway:        pushbench gateway --listen 127.0.0.1:8443 --fcm-auth oauth --fcm-service-account \(path) --tls --tls-cert-out gateway-ca.pem"), "\(r.out)")
        #expect(lines.contains("  run:            pushbench --target https://127.0.0.1:8443 --protocol fcm --project my-proj --credentials \(path) --cacert gateway-ca.pem"), "\(r.out)")
        #expect(lines.contains("  firebase-admin: credentials.Certificate('\(path)'), messaging._MessagingService.FCM_URL = 'https://127.0.0.1:8443/v1/projects/{0}/messages:send'"), "\(r.out)")
        // Cleartext, on a token path of its own: the gateway is told that path.
        let plain = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: plain) }
        let h = try PushbenchBinary.run(["credentials", "fcm", "--out", plain.path, "--token-uri", "http://127.0.0.1:8080/oauth2/token"])
        let plainPath = plain.appendingPathComponent("service-account.json").path
        #expect(h.out.contains("  gateway:        pushbench gateway --listen 127.0.0.1:8080 --fcm-auth oauth --fcm-service-account \(plainPath) --fcm-token-path /oauth2/token\n"), "\(h.out)")
        #expect(h.out.contains("  run:            pushbench --target http://127.0.0.1:8080 --protocol fcm --project pushbench --credentials \(plainPath)\n"), "\(h.out)")
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

    @Test(arguments: [["--encoder", "foundation", "--rps", "500"], ["--encoder", "copy", "--rps", "500"], ["--rps", "max"]])
    func http1WithAnotherEncoderOrClosedLoopKeepsTheAccounting(_ options: [String]) throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--protocol", "fcm", "--http1", "--duration", "1s", "--warmup", "0s", "--connections", "4",
                                         "--out", out.path, "--quiet"] + options)
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.accountingHolds(s), "\(s["requests"] ?? "")")
        let config = try #require(s["config"] as? [String: Any])
        #expect(config["http"] as? String == "1.1")
        let sent = PushbenchBinary.int(s, "requests", "sent")
        #expect(PushbenchBinary.int(s, "requests", "succeeded") == sent && sent > 0, "\(s["requests"] ?? "")")
        if let encoder = options.firstIndex(of: "--encoder").map({ options[$0 + 1] }) {
            #expect(config["encoder"] as? String == encoder)
            #expect(sent == 500)
        } else {
            #expect(config["rps"] as? String == "max", "closed loop: \(config)")
        }
        // The embedded gateway received over HTTP/1.1 exactly what the run sent.
        let gateway = try #require(s["gateway"] as? [String: Any])
        let received = PushbenchBinary.int(gateway, "http1", "requests")
        #expect(received >= PushbenchBinary.int(s, "requests", "completed") && received <= sent, "\(gateway)")
    }

    @Test(arguments: [true, false])
    func aSegmentSendsTheSingleRunsTokensAndMessageIDs(http1: Bool) throws {
        // The embedded gateway captures the Apple push of each FCM message, with the message's data (the default
        // template's {{message_id}}) and its token; one connection keeps the capture in request order.
        func captured(_ extra: [String]) throws -> [String] {
            let out = PushbenchBinary.tempDir()
            defer { try? FileManager.default.removeItem(at: out) }
            let r = try PushbenchBinary.run(["--protocol", "fcm", "--requests", "6", "--rps", "200", "--connections", "1", "--streams", "1",
                                             "--capture", "10", "--out", out.path, "--quiet"] + (http1 ? ["--http1"] : []) + extra)
            #expect(r.status == 0, "\(r.err)")
            let data = try Data(contentsOf: out.appendingPathComponent("latest/capture.json"))
            let pushes = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
            return pushes.map { p in
                let payload = p["payload"] as? [String: Any] ?? [:]
                return "\(p["target"] ?? "?") \(payload["message_id"] ?? "?")"
            }
        }
        let single = try captured([])
        #expect(single.count == 6 && Set(single).count == 6, "\(single)")
        let start = String(format: "%.3f", Date().timeIntervalSince1970 + 1.5)
        let segment = try captured(["--segment", "1/2", "--start-at", start])
        #expect(segment == [single[1], single[3], single[5]], "\(segment) against \(single)")
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
