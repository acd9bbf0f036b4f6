import Foundation
import Testing
@testable import MockGateway

/// firebase-admin (Python, from PyPI via scripts/setup), unmodified apart from its endpoint attribute
/// (`messaging._MessagingService.FCM_URL`) and a service-account JSON written by `pushbench credentials fcm`
/// (the binary), against gateways over TLS (their generated CAs trusted through `REQUESTS_CA_BUNDLE` and
/// `SSL_CERT_FILE`, as a user would): it fetches an access token from the gateway's https token endpoint,
/// sends the reference message with `send()` (requests: ALPN http/1.1) and `send_each_async()` (httpx:
/// ALPN h2), which the gateway turns into the Apple push it captures (`--capture`), and meets every FCM
/// error, through both calls, as the exception class it raises for Google's. A missing firebase-admin
/// fails the test.
@Suite(.serialized) struct FirebaseAdminTests {
    static let script = #"""
    import asyncio, json, os, sys, traceback
    spec = json.loads(sys.argv[1])
    os.environ["REQUESTS_CA_BUNDLE"] = spec["ca"]
    os.environ["SSL_CERT_FILE"] = spec["ca"]
    try:
        import firebase_admin
        from firebase_admin import credentials, exceptions, messaging
    except Exception as e:
        print(json.dumps({"missing": str(e)})); sys.exit(0)
    messaging._MessagingService.FCM_URL = spec["base"] + "/v1/projects/{0}/messages:send"
    app = firebase_admin.initialize_app(credentials.Certificate(spec["account"]))
    def message():
        return messaging.Message(token="fcm-token-1",
            notification=messaging.Notification(title="Portugal vs. Denmark", body="great match!"),
            apns=messaging.APNSConfig(payload=messaging.APNSPayload(aps=messaging.Aps(badge=1), customKey="customValue")))
    out = {}
    try:
        out["send"] = messaging.send(message())
        batch = asyncio.run(messaging.send_each_async([message(), message()]))
        out["async"] = [r.message_id for r in batch.responses]
        out["async_errors"] = [repr(r.exception) for r in batch.responses if r.exception]
        import requests
        out["stats"] = requests.get(spec["base"] + "/stats", timeout=30).json()
    except Exception as e:
        out["error"] = traceback.format_exc()
    classes = {"UNREGISTERED": messaging.UnregisteredError, "INVALID_ARGUMENT": exceptions.InvalidArgumentError,
               "SENDER_ID_MISMATCH": messaging.SenderIdMismatchError, "QUOTA_EXCEEDED": messaging.QuotaExceededError,
               "UNAVAILABLE": exceptions.UnavailableError, "INTERNAL": exceptions.InternalError,
               "THIRD_PARTY_AUTH_ERROR": messaging.ThirdPartyAuthError}
    out["raised"] = {}
    out["raised_async"] = {}
    for code, base in spec["failing"].items():
        messaging._MessagingService.FCM_URL = base + "/v1/projects/{0}/messages:send"
        other = firebase_admin.initialize_app(credentials.Certificate(spec["account"]), name=code)
        try:
            messaging.send(message(), app=other)
            out["raised"][code] = "nothing"
        except Exception as e:
            out["raised"][code] = type(e).__name__ if isinstance(e, classes[code]) else "wrong: " + repr(e)
        try:
            e = asyncio.run(messaging.send_each_async([message()], app=other)).responses[0].exception
            out["raised_async"][code] = "nothing" if e is None else type(e).__name__ if isinstance(e, classes[code]) else "wrong: " + repr(e)
        except Exception as e:
            out["raised_async"][code] = "raised by the call: " + repr(e)
    print(json.dumps(out))
    """#

    @Test func firebaseAdminSendsAndRaisesEveryErrorAsGoogles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pb-firebase-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        // The service account as a user makes it; the gateway needs its key and client_email, not its token_uri.
        let bin = try #require(GatewayTLSTests.binary, "build pushbench first (swift build --build-tests)")
        let made = try runProcess(bin, ["credentials", "fcm", "--out", dir.path, "--token-uri", "https://127.0.0.1:1/token"])
        try #require(made.status == 0, "\(made.stderr)")
        let gatewayFile = dir.appendingPathComponent("service-account.json").path
        let main = try EmbeddedGateway.start(try GatewayConfiguration.parse(["--tls", "--fcm-auth", "oauth",
                                                                             "--fcm-service-account", gatewayFile, "--capture", "10"]))
        defer { main.stop() }
        let codes = ["UNREGISTERED", "INVALID_ARGUMENT", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL",
                     "THIRD_PARTY_AUTH_ERROR"]
        var failing: [String: EmbeddedGateway] = [:]
        for code in codes { failing[code] = try EmbeddedGateway.start(try GatewayConfiguration.parse(["--tls", "--fcm-fail", "\(code)=1"])) }
        defer { for g in failing.values { g.stop() } }
        // Each gateway generated its own CA: the clients trust them all.
        let caFile = dir.appendingPathComponent("gateways-ca.pem").path
        let cas = ([main] + Array(failing.values)).compactMap(\.trustedCertificatePEM)
        #expect(cas.count == codes.count + 1)
        try cas.joined().write(toFile: caFile, atomically: true, encoding: .utf8)
        // The client's copy names the main gateway's token endpoint, where every app fetches its token; the
        // failing gateways accept any bearer token and answer every send with their code.
        var account = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: gatewayFile))) as? [String: Any])
        account["token_uri"] = "https://127.0.0.1:\(main.port)/token"
        let clientFile = dir.appendingPathComponent("client-account.json").path
        try JSONSerialization.data(withJSONObject: account).write(to: URL(fileURLWithPath: clientFile))
        let spec: [String: Any] = ["base": "https://127.0.0.1:\(main.port)", "account": clientFile, "ca": caFile,
                                   "failing": failing.mapValues { "https://127.0.0.1:\($0.port)" }]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: spec), as: UTF8.self)
        let r = try runProcess(which("python3") ?? "/usr/bin/python3", ["-c", Self.script, json], timeout: 240)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any],
                             "python: \(r.status) \(r.stdout) \(r.stderr)")
        #expect(o["missing"] == nil, "firebase-admin is not installed (scripts/setup installs it): \(o["missing"] ?? "")")
        #expect(o["error"] == nil, "\(o["error"] ?? "")")
        let sent = try #require(o["send"] as? String)
        #expect(sent.hasPrefix("projects/pushbench/messages/0:"))
        let async = try #require(o["async"] as? [Any])
        #expect(async.count == 2 && async.allSatisfy { ($0 as? String)?.hasPrefix("projects/pushbench/messages/0:") == true },
                "\(o["async_errors"] ?? "")")
        let raised = try #require(o["raised"] as? [String: String])
        let expected = ["UNREGISTERED": "UnregisteredError", "INVALID_ARGUMENT": "InvalidArgumentError",
                        "SENDER_ID_MISMATCH": "SenderIdMismatchError", "QUOTA_EXCEEDED": "QuotaExceededError",
                        "UNAVAILABLE": "UnavailableError", "INTERNAL": "InternalError", "THIRD_PARTY_AUTH_ERROR": "ThirdPartyAuthError"]
        #expect(raised == expected)
        // send_each_async() (HTTP/2) reports each code in its response as the same class.
        #expect(o["raised_async"] as? [String: String] == expected, "\(o["raised_async"] ?? "")")
        // /stats, fetched by the client over HTTPS: the token fetches and the three sends.
        let seen = try #require(o["stats"] as? [String: Any])
        let fcm = try #require(seen["fcm"] as? [String: Any])
        let oauth = try #require(fcm["oauth"] as? [String: Any])
        #expect((oauth["tokens_issued"] as? Int ?? 0) >= 1 && oauth["refused"] as? Int == 0, "\(oauth)")
        #expect(fcm["messages_accepted"] as? Int == 3, "\(fcm)")
        // Over HTTP/1.1 came the token fetches, send() and the /stats request; send_each_async()'s two
        // sends came over HTTP/2.
        let stats = main.stats()
        #expect(stats.fcm.messagesAccepted == 3)
        #expect(stats.http1Requests == stats.fcm.tokenRequests + 2, "HTTP/1.1 requests \(stats.http1Requests), token requests \(stats.fcm.tokenRequests)")
        let unregistered = try #require(failing["UNREGISTERED"]).stats()
        #expect(unregistered.fcm.byCode["UNREGISTERED"] == 2)
        // What arrived: the three messages, each captured as the Apple push FCM would send, with the
        // reference message's title, body, badge and custom key, under the id the client was given.
        let captured = stats.fcm.captured
        #expect(captured.map(\.name).sorted() == ([sent] + async.compactMap { $0 as? String }).sorted())
        for push in captured {
            #expect(push.target == "token:fcm-token-1")
            let payload = try #require(try JSONSerialization.jsonObject(with: Data(push.payload.utf8)) as? [String: Any], "\(push.payload)")
            let aps = try #require(payload["aps"] as? [String: Any], "\(push.payload)")
            let alert = aps["alert"] as? [String: Any]
            #expect(alert?["title"] as? String == "Portugal vs. Denmark" && alert?["body"] as? String == "great match!", "\(push.payload)")
            #expect(aps["badge"] as? Int == 1 && payload["customKey"] as? String == "customValue", "\(push.payload)")
            #expect(push.name.hasSuffix(payload["gcm.message_id"] as? String ?? "?"), "\(push.payload)")
            #expect(push.headers.contains { $0 == ("apns-push-type", "alert") } && push.headers.contains { $0 == ("apns-priority", "10") },
                    "\(push.headers)")
        }
    }
}
