import Foundation
@testable import MockGateway
import Testing

/// aioapns, a real APNs client library, against `pushbench gateway --tls` with the credentials
/// `pushbench credentials apns` writes: every answer reaches the library as the exact reason APNs gives,
/// with an ssl context that offers h2 and with one that offers no ALPN (aioapns' default).
@Suite(.serialized) struct AioapnsTests {
    static let topic = "com.example.app"
    nonisolated(unsafe) static let reference: [String: Any] = ["aps": ["alert": ["title": "Portugal vs. Denmark", "body": "great match!"], "badge": 1],
                                           "customKey": "customValue"]

    /// Credentials from the helper, as a user makes them.
    struct Credentials {
        let dir: URL
        let keyID: String
        let teamID: String
        var key: String { dir.appendingPathComponent("AuthKey_\(keyID).p8").path }
        var ca: String { dir.appendingPathComponent("ca.pem").path }
        var clientBundle: String { dir.appendingPathComponent("client.pem").path }
        var clientCert: String { dir.appendingPathComponent("client-cert.pem").path }
        var clientKey: String { dir.appendingPathComponent("client-key.pem").path }

        init() throws {
            let bin = try #require(GatewayTLSTests.binary, "build pushbench first (swift build --build-tests)")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-aioapns-\(UUID().uuidString)")
            let r = try runProcess(bin, ["credentials", "apns", "--out", folder.path, "--client-cert", "--topic", AioapnsTests.topic])
            try #require(r.status == 0, "\(r.stderr)")
            let read = { (name: String) throws -> String in
                try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            dir = folder
            keyID = try read("key_id")
            teamID = try read("team_id")
        }

        func remove() { try? FileManager.default.removeItem(at: dir) }
    }

    /// Runs the driver with `clients` against `gateway`; returns each push's outcome by case name.
    func drive(_ gateway: GatewayTLSTests.TLSGateway, _ credentials: Credentials, token: String = validToken,
               _ clients: [[String: Any]]) throws -> [String: [String: Any]] {
        let spec: [String: Any] = ["port": gateway.port, "cafile": gateway.caFile, "topic": Self.topic, "token": token,
                                   "reference": Self.reference, "key_id": credentials.keyID, "team_id": credentials.teamID,
                                   "clients": clients]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: spec), as: UTF8.self)
        let r = try runProcess(try GatewayTLSTests.peer("python3"), [temporaryScript("aioapns", aioapnsSource), json], timeout: 120)
        try #require(r.status == 0, "aioapns driver: \(r.stderr)")
        var outcomes: [String: [String: Any]] = [:]
        for line in r.stdout.split(separator: "\n") {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            outcomes[o["case"] as! String] = o
        }
        return outcomes
    }

    /// `outcome` is `status` with `reason` (nil: none), the apns-id echoed, over ALPN `alpn`.
    func check(_ outcomes: [String: [String: Any]], _ name: String, _ status: String, _ reason: String?, alpn: String?) {
        guard let o = outcomes[name] else { Issue.record("\(name): no outcome in \(outcomes.keys.sorted())"); return }
        #expect(o["error"] == nil, "\(name): \(o["error"] ?? "")")
        #expect(o["status"] as? String == status, "\(name): \(o)")
        #expect(o["reason"] as? String == reason, "\(name): \(o)")
        #expect(o["apns_id_echoed"] as? Bool == true, "\(name): \(o)")
        #expect(o["alpn"] as? String == alpn, "\(name): \(o)")
    }

    @Test func providerTokens() throws {
        let c = try Credentials()
        defer { c.remove() }
        let other = try Credentials()
        defer { other.remove() }
        let unregisteredFlags = ["--unregistered", "0.5"]
        let predictor = try GatewayConfiguration.parse(unregisteredFlags)
        let registered = try #require((1...64).lazy.map { String(repeating: String(format: "%02x", $0), count: 32) }
            .first { !predictor.isUnregistered(token: $0) })
        let unregistered = try #require((1...64).lazy.map { String(repeating: String(format: "%02x", $0), count: 32) }
            .first { predictor.isUnregistered(token: $0) })
        let g = try GatewayTLSTests.TLSGateway(["--apns-key", "\(c.keyID)=\(c.key)", "--apns-team", c.teamID] + unregisteredFlags)

        var clients: [[String: Any]] = []
        for (context, alpn) in [("h2", true), ("no-alpn", false)] {
            clients += [
                ["name": "\(context) token", "alpn": alpn, "key": c.key, "pushes": [
                    ["name": "reference"], ["name": "bad device token", "token": "not-hex"],
                    ["name": "unregistered", "token": unregistered], ["name": "too large", "payload_bytes": 5000],
                ]],
                ["name": "\(context) no token", "alpn": alpn, "cert": c.clientBundle, "pushes": [["name": "push"]]],
                ["name": "\(context) another key", "alpn": alpn, "key": other.key, "pushes": [["name": "push"]]],
                ["name": "\(context) old iat", "alpn": alpn, "key": c.key, "clock_offset": -7200, "pushes": [["name": "push"]]],
                // aioapns re-signs its token once it is 30 minutes old: on the same connection, within
                // the gateway's 20 minutes, that is one update too many.
                ["name": "\(context) refresh", "alpn": alpn, "key": c.key, "pushes": [
                    ["name": "first"], ["name": "31 minutes later", "clock_offset": 31 * 60],
                ]],
            ]
        }
        let outcomes = try drive(g, c, token: registered, clients)
        for (context, alpn) in [("h2", "h2"), ("no-alpn", nil)] {
            check(outcomes, "\(context) token/reference", "200", nil, alpn: alpn)
            check(outcomes, "\(context) token/bad device token", "400", "BadDeviceToken", alpn: alpn)
            check(outcomes, "\(context) token/unregistered", "410", "Unregistered", alpn: alpn)
            let stamp = try #require(outcomes["\(context) token/unregistered"]?["timestamp"] as? Int, "410 carries a timestamp")
            let nowMillis = Int(Date().timeIntervalSince1970 * 1000)
            #expect(stamp < nowMillis && stamp > nowMillis - 31 * 86_400_000)
            check(outcomes, "\(context) token/too large", "413", "PayloadTooLarge", alpn: alpn)
            check(outcomes, "\(context) no token/push", "403", "MissingProviderToken", alpn: alpn)
            check(outcomes, "\(context) another key/push", "403", "InvalidProviderToken", alpn: alpn)
            check(outcomes, "\(context) old iat/push", "403", "ExpiredProviderToken", alpn: alpn)
            check(outcomes, "\(context) refresh/first", "200", nil, alpn: alpn)
            check(outcomes, "\(context) refresh/31 minutes later", "429", "TooManyProviderTokenUpdates", alpn: alpn)
        }
        let r = g.stop()
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.split(separator: "\n").last?.contains(#""TooManyProviderTokenUpdates":2"#) == true, "\(r.stdout)")
    }

    /// Certificate authentication with the helper's CA and client certificate: aioapns with the bundle,
    /// curl without `apns-topic` (the certificate's UID is the topic), and the refusals.
    @Test func clientCertificates() throws {
        let c = try Credentials()
        defer { c.remove() }
        let other = try Credentials()
        defer { other.remove() }
        let g = try GatewayTLSTests.TLSGateway(["--apns-auth", "cert", "--client-ca", c.ca])
        let outcomes = try drive(g, c, [
            ["name": "h2 certificate", "alpn": true, "cert": c.clientBundle, "pushes": [["name": "reference"]]],
            ["name": "no-alpn certificate", "alpn": false, "cert": c.clientBundle, "pushes": [["name": "reference"]]],
            ["name": "another CA", "cert": other.clientBundle, "pushes": [["name": "push"]]],
            ["name": "token, no certificate", "key": c.key, "pushes": [["name": "push"]]],
        ])
        check(outcomes, "h2 certificate/reference", "200", nil, alpn: "h2")
        check(outcomes, "no-alpn certificate/reference", "200", nil, alpn: nil)
        check(outcomes, "another CA/push", "403", "BadCertificate", alpn: "h2")
        check(outcomes, "token, no certificate/push", "403", "MissingProviderToken", alpn: "h2")

        let url = "https://api.push.apple.com:\(g.port)/3/device/\(validToken)"
        let noTopic = try g.curl(["--cacert", g.caFile, "--cert", c.clientCert, "--key", c.clientKey, "-w", "%{http_code}",
                                  "-d", #"{"aps":{"alert":"hi"}}"#, url])
        #expect(noTopic.stdout == "200", "the certificate's UID is the topic: \(noTopic.stdout) \(noTopic.stderr)")
        let otherTopic = try g.curl(["--cacert", g.caFile, "--cert", c.clientCert, "--key", c.clientKey, "-H", "apns-topic: org.other.app",
                                     "-w", " %{http_code}", "-d", #"{"aps":{"alert":"hi"}}"#, url])
        #expect(otherTopic.stdout == #"{"reason":"BadTopic"} 400"#, "a topic the certificate does not cover: \(otherTopic.stdout) \(otherTopic.stderr)")
        let noCertificate = try g.curl(["--cacert", g.caFile, "-H", "apns-topic: \(Self.topic)", "-d", #"{"aps":{"alert":"hi"}}"#, url])
        #expect(noCertificate.stdout == #"{"reason":"MissingProviderToken"}"#, "\(noCertificate.stdout) \(noCertificate.stderr)")

        // pushbench itself as a certificate-authenticated sender, with the flags the helper printed.
        let bin = try #require(GatewayTLSTests.binary)
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-cert-run-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        for (flags, status, reason) in [(["--cert", c.clientCert, "--key", c.clientKey, "--topic", Self.topic], "200", nil),
                                        (["--cert", c.clientCert, "--key", c.clientKey, "--topic", "org.other.app"], "400", "BadTopic"),
                                        ([], "403", "MissingProviderToken")] as [([String], String, String?)] {
            let run = try runProcess(bin, ["run", "--target", "https://localhost:\(g.port)", "--cacert", g.caFile] + flags
                                     + ["--requests", "50", "--quiet", "--out", out.path], timeout: 120)
            #expect(run.status == 0, "\(run.stderr)")
            let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("latest/summary.json"))) as? [String: Any]
            let requests = summary?["requests"] as? [String: Any]
            #expect((requests?["by_status"] as? [String: Any])?[status] as? Int == 50, "\(flags): \(requests ?? [:])")
            if let reason { #expect((requests?["by_reason"] as? [String: Any])?[reason] as? Int == 50, "\(requests ?? [:])") }
        }
        let r = g.stop()
        #expect(r.status == 0, "\(r.stderr)")
    }
}
