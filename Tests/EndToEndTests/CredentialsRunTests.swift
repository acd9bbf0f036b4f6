import Foundation
import PushCredentials
import Testing

/// `pushbench credentials apns` and runs that sign provider tokens, as a user types them; and what a run
/// leaves behind holds no secret.
@Suite(.serialized) struct CredentialsRunTests {
    /// Writes credentials into a new folder; returns it, the key id, the team id and the printed lines.
    func credentials(_ extra: [String] = []) throws -> (dir: URL, keyID: String, teamID: String, out: String) {
        let dir = PushbenchBinary.tempDir("pushbench-creds")
        let r = try PushbenchBinary.run(["credentials", "apns", "--out", dir.path] + extra)
        #expect(r.status == 0, "\(r.err)")
        let keyID = try String(contentsOf: dir.appendingPathComponent("key_id"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let teamID = try String(contentsOf: dir.appendingPathComponent("team_id"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return (dir, keyID, teamID, r.out + r.err)
    }

    @Test func credentialsWritesAKeyItsIdsAndTheFlags() throws {
        let c = try credentials(["--client-cert", "--topic", "com.example.shop"])
        defer { try? FileManager.default.removeItem(at: c.dir) }
        #expect(c.keyID.count == 10 && c.teamID.count == 10)
        let keyPath = c.dir.appendingPathComponent("AuthKey_\(c.keyID).p8").path
        let key = try ES256PrivateKey(contentsOfFile: keyPath)
        #expect(try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as? Int == 0o600)
        // The printed flags name the files and ids.
        #expect(c.out.contains("pushbench gateway --apns-key \(c.keyID)=\(keyPath) --apns-team \(c.teamID)"))
        #expect(c.out.contains("--auth-key \(keyPath) --key-id \(c.keyID) --team-id \(c.teamID)"))
        // The client certificate: from the CA, with the topic as its UID; the bundle holds it and its key.
        let ca = c.dir.appendingPathComponent("ca.pem").path
        let cert = try X509Certificate(contentsOfFile: c.dir.appendingPathComponent("client-cert.pem").path)
        #expect(cert.uid == "com.example.shop")
        #expect(try ClientCertificateVerifier(caFile: ca).problem(with: cert) == nil)
        let bundle = try String(contentsOf: c.dir.appendingPathComponent("client.pem"), encoding: .utf8)
        #expect(bundle.contains("BEGIN CERTIFICATE") && bundle.contains("BEGIN PRIVATE KEY"))
        #expect(c.out.contains("pushbench gateway --tls --tls-cert-out gateway-ca.pem --client-ca \(ca)"))
        #expect(c.out.contains("--cacert gateway-ca.pem --cert \(c.dir.appendingPathComponent("client-cert.pem").path) --key \(c.dir.appendingPathComponent("client-key.pem").path)"))
        // Nothing secret on the terminal.
        #expect(!c.out.contains("PRIVATE KEY"))
        for line in try key.pkcs8PEM().split(separator: "\n") where !line.hasPrefix("-----") {
            #expect(!c.out.contains(line), "a line of the key was printed")
        }
        // A second time without --force changes nothing.
        let again = try PushbenchBinary.run(["credentials", "apns", "--out", c.dir.path, "--key-id", c.keyID])
        #expect(again.status == 2)
        #expect(again.err.contains("already holds AuthKey_\(c.keyID).p8, key_id, team_id") && again.err.contains("--force"))
        #expect(try ES256PrivateKey(contentsOfFile: keyPath).publicKey == key.publicKey)
    }

    /// Over h2c and, with `--tls`, over TLS on loopback: the realistic sender end to end.
    @Test(arguments: [[], ["--tls"]])
    func aRunSignsTokensTheEmbeddedGatewayAccepts(_ transport: [String]) throws {
        let c = try credentials()
        defer { try? FileManager.default.removeItem(at: c.dir) }
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let keyPath = c.dir.appendingPathComponent("AuthKey_\(c.keyID).p8").path
        let r = try PushbenchBinary.run(transport + ["--auth-key", keyPath, "--key-id", c.keyID, "--team-id", c.teamID,
                                                     "--rps", "1000", "--duration", "1s", "--warmup", "0s", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.int(s, "requests", "succeeded") == 1000)
        #expect((s["tls"] as? [String: Any])?["alpn"] as? String == (transport.isEmpty ? nil : "h2"))
        let token = try #require(s["provider_token"] as? [String: Any])
        #expect(token["key_id"] as? String == c.keyID && token["team_id"] as? String == c.teamID)
        #expect(token["key_file"] as? String == keyPath && token["refresh_s"] as? Double == 3000 && token["refreshes"] as? Int == 0)
        #expect(r.out.contains("  auth       provider tokens: key \(c.keyID) (\(keyPath)), team \(c.teamID)"))
    }

    @Test(arguments: [
        (["--auth-key", "KEY"], "pushbench run: --auth-key: provider tokens need --auth-key, --key-id and --team-id together (missing --key-id, --team-id)"),
        (["--key-id", "ABC", "--team-id", "DEF"], "pushbench run: --key-id: provider tokens need --auth-key, --key-id and --team-id together (missing --auth-key)"),
        (["--auth-key", "/nonexistent/AuthKey.p8", "--key-id", "A", "--team-id", "B"], "pushbench run: --auth-key: /nonexistent/AuthKey.p8: cannot read (No such file or directory)"),
        (["--auth-key", "KEY", "--key-id", "A", "--team-id", "B", "--protocol", "fcm"], "pushbench run: --auth-key: APNs provider tokens apply to --protocol apns"),
        (["--auth-key", "KEY", "--key-id", "A", "--team-id", "B", "--gateway-arg=--apns-auth=off"], "pushbench run: --auth-key: the embedded gateway checks the run's own key; leave --apns-* and --client-ca out of --gateway-arg"),
        (["--auth-refresh", "0s"], "pushbench run: --auth-refresh: '0s' is under a millisecond"),
    ])
    func badProviderTokenOptionsExitTwo(_ c: ([String], String)) throws {
        let creds = try credentials()
        defer { try? FileManager.default.removeItem(at: creds.dir) }
        let args = c.0.map { $0 == "KEY" ? creds.dir.appendingPathComponent("AuthKey_\(creds.keyID).p8").path : $0 }
        let r = try PushbenchBinary.run(args + ["--requests", "1", "--out", PushbenchBinary.tempDir().path])
        #expect(r.status == 2)
        #expect(r.err.hasPrefix(c.1), "\(r.err)")
        #expect(r.err.split(separator: "\n").count == 1)
    }

    @Test func inputEchoedInAnErrorCannotDriveTheTerminal() throws {
        let r = try PushbenchBinary.run(["--key-id", "\u{1B}[31mRED\u{07}", "--requests", "1"])
        #expect(r.status == 2)
        #expect(!r.err.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 })
        #expect(r.err.contains(#"'\x1b[31mRED\x07' is not a key id"#))
        let g = try PushbenchBinary.run(["gateway", "--apns-key", "\u{9B}31m=k.p8"])
        #expect(g.status == 2 && g.err.contains(#"'\u{9b}31m' is not a key id"#))
    }

    /// No key material, JWT or bearer token in a run folder, in capture files, or on the terminal of
    /// the run, the gateway or the credentials helper: key files and ids only.
    @Test func secretsStaySecret() throws {
        let c = try credentials(["--client-cert"])
        defer { try? FileManager.default.removeItem(at: c.dir) }
        let keyPath = c.dir.appendingPathComponent("AuthKey_\(c.keyID).p8").path
        var secrets: [String] = ["PRIVATE KEY", "bearer ", "Bearer ", "eyJ"]   // every JWT starts with eyJ ({")
        for file in ["AuthKey_\(c.keyID).p8", "client-key.pem"] {
            let pem = try String(contentsOf: c.dir.appendingPathComponent(file), encoding: .utf8)
            secrets += pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
        }
        var seen: [(String, String)] = [("credentials output", c.out)]

        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let flags = ["--auth-key", keyPath, "--key-id", c.keyID, "--team-id", c.teamID]
        let run = try PushbenchBinary.run(flags + ["--tls", "--rps", "500", "--duration", "1s", "--warmup", "0s", "--out", out.path,
                                                   "--auth-refresh", "200ms", "--gateway-arg=--apns-token-interval=1ms"])
        #expect(run.status == 0, "\(run.err)")
        seen.append(("run output", run.out + run.err))
        let json = try PushbenchBinary.run(flags + ["--requests", "50", "--out", out.path, "--json"])
        seen.append(("run --json output", json.out + json.err))
        // An FCM run with --capture writes capture.json into the run folder (no APNs token there to leak, but
        // the folder is read whole below).
        let fcm = try PushbenchBinary.run(["--protocol", "fcm", "--requests", "20", "--capture", "5", "--out", out.path])
        #expect(fcm.status == 0, "\(fcm.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(s["run_id"] != nil)

        // The gateway alone, with the same key, until SIGTERM.
        let gateway = Process()
        gateway.executableURL = try #require(PushbenchBinary.url)
        gateway.arguments = ["gateway", "--listen", "127.0.0.1:0", "--apns-key", "\(c.keyID)=\(keyPath)", "--apns-team", c.teamID]
        let gout = Pipe()
        gateway.standardOutput = gout
        gateway.standardError = gout
        try gateway.run()
        Thread.sleep(forTimeInterval: 1)
        gateway.terminate()
        gateway.waitUntilExit()
        let gatewayText = String(decoding: gout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(gatewayText.contains("authentication: provider tokens of team \(c.teamID) signed by \(c.keyID) (\(keyPath))"))
        seen.append(("gateway output", gatewayText))

        let files = FileManager.default.enumerator(at: out, includingPropertiesForKeys: nil)!.compactMap { $0 as? URL }
            .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
        #expect(files.count >= 10)
        for f in files { seen.append((f.path, String(decoding: (try? Data(contentsOf: f)) ?? Data(), as: UTF8.self))) }
        for (place, text) in seen {
            for secret in secrets {
                #expect(!text.contains(secret), "\(place) holds \(secret.prefix(12))…")
            }
        }
        #expect(seen.contains { $0.1.contains(c.keyID) }, "the key id is reported")
    }
}
