import Foundation
import PushCredentials
import Testing
@testable import MockGateway

/// firebase-admin (Python, from PyPI via scripts/setup), unmodified apart from its endpoint attribute
/// (`messaging._MessagingService.FCM_URL`) and a service-account JSON from `pushbench credentials`'s code:
/// it fetches an access token from the gateway's token endpoint, sends the reference message with
/// `send()` (requests, HTTP/1.1) and `send_each_async()` (httpx), and meets every FCM error as the
/// exception class it raises for Google's. A missing firebase-admin fails the test.
@Suite(.serialized) struct FirebaseAdminTests {
    static let script = #"""
    import asyncio, json, sys, traceback
    try:
        import firebase_admin
        from firebase_admin import credentials, exceptions, messaging
    except Exception as e:
        print(json.dumps({"missing": str(e)})); sys.exit(0)
    spec = json.loads(sys.argv[1])
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
        let common = ["--fcm-auth", "oauth", "--fcm-service-account", gatewayFile]
        let main = try EmbeddedGateway.start(try GatewayConfiguration.parse(common))
        defer { main.stop() }
        let codes = ["UNREGISTERED", "INVALID_ARGUMENT", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL",
                     "THIRD_PARTY_AUTH_ERROR"]
        var failing: [String: EmbeddedGateway] = [:]
        for code in codes { failing[code] = try EmbeddedGateway.start(try GatewayConfiguration.parse(["--fcm-fail", "\(code)=1"])) }
        defer { for g in failing.values { g.stop() } }
        // The client's copy names the main gateway's token endpoint, where every app fetches its token; the
        // failing gateways accept any bearer token and answer every send with their code.
        account.tokenURI = "http://127.0.0.1:\(main.port)/token"
        let clientFile = dir.appendingPathComponent("service-account.json").path
        try account.json.write(toFile: clientFile, atomically: true, encoding: .utf8)
        let spec: [String: Any] = ["base": "http://127.0.0.1:\(main.port)", "account": clientFile,
                                   "failing": failing.mapValues { "http://127.0.0.1:\($0.port)" }]
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
        let stats = main.stats()
        #expect(stats.fcm.tokensIssued >= 1 && stats.fcm.tokenRefusals == 0)
        #expect(stats.fcm.messagesAccepted == 3)
        #expect(stats.http1Requests >= 2)
        let unregistered = try #require(failing["UNREGISTERED"]).stats()
        #expect(unregistered.fcm.byCode["UNREGISTERED"] == 1)
    }
}
