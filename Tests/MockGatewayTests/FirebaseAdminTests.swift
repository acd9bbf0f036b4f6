import Foundation
import PushCredentials
import Testing
@testable import MockGateway

/// firebase-admin (Python, from PyPI via scripts/setup), unmodified apart from its endpoint attribute
/// (`messaging._MessagingService.FCM_URL`) and a service-account JSON from `pushbench credentials`'s code,
/// against gateways over TLS (their generated CAs trusted through `REQUESTS_CA_BUNDLE` and
/// `SSL_CERT_FILE`, as a user would): it fetches an access token from the gateway's https token endpoint,
/// sends the reference message with `send()` (requests: ALPN http/1.1) and `send_each_async()` (httpx:
/// ALPN h2), and meets every FCM error as the exception class it raises for Google's. A missing
/// firebase-admin fails the test.
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
    for code, base in spec["failing"].items():
        messaging._MessagingService.FCM_URL = base + "/v1/projects/{0}/messages:send"
        other = firebase_admin.initialize_app(credentials.Certificate(spec["account"]), name=code)
        try:
            messaging.send(message(), app=other)
            out["raised"][code] = "nothing"
        except Exception as e:
            out["raised"][code] = type(e).__name__ if isinstance(e, classes[code]) else "wrong: " + repr(e)
    print(json.dumps(out))
    """#

    @Test func firebaseAdminSendsAndRaisesEveryErrorAsGoogles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pb-firebase-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var account = try ServiceAccount.generate(projectID: "pushbench", tokenURI: "http://127.0.0.1:1/token")
        let gatewayFile = dir.appendingPathComponent("gateway-account.json").path
        try account.json.write(toFile: gatewayFile, atomically: true, encoding: .utf8)
        let main = try EmbeddedGateway.start(try GatewayConfiguration.parse(["--tls", "--fcm-auth", "oauth",
                                                                             "--fcm-service-account", gatewayFile]))
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
        account.tokenURI = "https://127.0.0.1:\(main.port)/token"
        let clientFile = dir.appendingPathComponent("service-account.json").path
        try account.json.write(toFile: clientFile, atomically: true, encoding: .utf8)
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
        #expect(unregistered.fcm.byCode["UNREGISTERED"] == 1)
    }
}
