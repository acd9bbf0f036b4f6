import Foundation
@testable import PushCredentials
import Testing
@testable import MockGateway

/// The OAuth2 token endpoint and `--fcm-auth oauth`, driven through the state machine (no socket).
@Suite struct OAuthTokenEndpointTests {
    /// One account for the suite (RSA key generation takes a moment).
    static let account = try! ServiceAccount.generate(projectID: "pushbench", tokenURI: "http://127.0.0.1:8080/token")
    static let other = try! ServiceAccount.generate(projectID: "other-project", tokenURI: "http://127.0.0.1:8080/token")
    /// The account's name and key id with another key: a bad signature.
    static let otherKey = ServiceAccount(projectID: account.projectID, privateKeyID: account.privateKeyID,
                                         privateKeyPEM: other.privateKeyPEM, clientEmail: account.clientEmail,
                                         clientID: account.clientID, tokenURI: account.tokenURI)
    /// The harness's wall clock at `now`: 1_700_000_000 s.
    static let nowSeconds: Int64 = 1_700_000_000

    static func config(_ flags: [String] = [], account: ServiceAccount? = OAuthTokenEndpointTests.account) throws -> GatewayConfiguration {
        var c = try GatewayConfiguration.parse(flags)
        c.fcm.serviceAccount = account
        return c
    }

    static func form(_ assertion: String?, grant: String? = ServiceAccount.grantType) -> String {
        var parts: [String] = []
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        if let grant { parts.append("grant_type=" + grant.addingPercentEncoding(withAllowedCharacters: allowed)!) }
        if let assertion { parts.append("assertion=" + assertion) }
        return parts.joined(separator: "&")
    }

    /// (status, JSON object) of a POST to `path` with `body`.
    static func post(_ h: inout Harness, _ body: String, path: String = "/token") throws -> (UInt16, [String: Any]) {
        let action = TestRequest(path: path, headers: [("content-type", "application/x-www-form-urlencoded")], body: body)
            .with { h.machine.answer($0, connection: &h.connection, now: h.now) }
        guard case .oauthToken(let status, let text) = action.decision else { throw ProbeError(message: "not a token answer: \(action)") }
        let o = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        return (status, o)
    }

    @Test func aValidAssertionGetsAnAccessTokenAsGoogleAnswers() throws {
        var h = Harness(try Self.config())
        let (status, o) = try Self.post(&h, Self.form(try Self.account.assertion(issuedAt: Self.nowSeconds)))
        #expect(status == 200)
        #expect(o["token_type"] as? String == "Bearer" && o["expires_in"] as? Int == 3599)
        #expect((o["access_token"] as? String)?.hasPrefix("ya29.") == true)
        #expect(Set(o.keys) == ["access_token", "expires_in", "token_type"])
        let stats = GatewayStats(summing: [h.machine.counters])
        #expect(stats.fcm.tokenRequests == 1 && stats.fcm.tokensIssued == 1 && stats.fcm.tokenRefusals == 0)
        #expect(stats.fcm.json.contains("\"oauth\":{\"token_requests\":1,\"tokens_issued\":1,\"refused\":0}"))
    }

    /// The account's assertion with no `scope` claim at all (``ServiceAccount/assertion`` always writes one).
    static func assertionWithoutScope(issuedAt iat: Int64) throws -> String {
        let header = #"{"typ":"JWT","alg":"RS256","kid":"\#(account.privateKeyID)"}"#
        let claims = #"{"iat":\#(iat),"exp":\#(iat + 3600),"iss":"\#(account.clientEmail)","aud":"\#(ServiceAccount.audience)"}"#
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let key = try RS256Key(pem: Array(account.privateKeyPEM.utf8))
        return input + "." + Base64URL.encode(try key.sign(Array(input.utf8)))
    }

    @Test func everyRefusalIsGooglesError() throws {
        var h = Harness(try Self.config())
        let good = try Self.account.assertion(issuedAt: Self.nowSeconds)
        let cases: [(String, String, String)] = [
            (Self.form(try Self.otherKey.assertion(issuedAt: Self.nowSeconds)), "invalid_grant", "Invalid JWT Signature."),
            (Self.form(String(good.dropLast(4)) + "AAAA"), "invalid_grant", "Invalid JWT Signature."),
            (Self.form(try Self.account.assertion(issuedAt: Self.nowSeconds - 7200)), "invalid_grant", OAuthTokenEndpoint.shortLived),
            (Self.form(try Self.account.assertion(issuedAt: Self.nowSeconds, lifetime: 7200)), "invalid_grant", OAuthTokenEndpoint.shortLived),
            (Self.form(try Self.account.assertion(issuedAt: Self.nowSeconds, audience: "http://127.0.0.1:8080/token")), "invalid_grant",
             "Invalid JWT: Failed audience check. The right audience is https://oauth2.googleapis.com/token"),
            (Self.form(good, grant: nil), "unsupported_grant_type", "Invalid grant_type: "),
            (Self.form(good, grant: "client_credentials"), "unsupported_grant_type", "Invalid grant_type: client_credentials"),
            (Self.form(nil), "invalid_request", "Missing required parameter: assertion"),
            (Self.form("not-a-jwt"), "invalid_grant", ""),
            (Self.form(try Self.other.assertion(issuedAt: Self.nowSeconds)), "invalid_grant", "Invalid grant: account not found"),
            (Self.form(try Self.assertionWithoutScope(issuedAt: Self.nowSeconds)), "invalid_scope", "Empty or missing scope not allowed."),
            (Self.form(try Self.account.assertion(issuedAt: Self.nowSeconds, scope: "")), "invalid_scope", "Empty or missing scope not allowed."),
        ]
        for (body, error, description) in cases {
            let (status, o) = try Self.post(&h, body)
            #expect(status == 400, "\(error) \(description)")
            #expect(o["error"] as? String == error, "\(o)")
            if !description.isEmpty { #expect(o["error_description"] as? String == description, "\(o)") }
        }
        #expect(GatewayStats(summing: [h.machine.counters]).fcm.tokenRefusals == UInt64(cases.count))
    }

    @Test func withoutAnAccountAnyWellFormedAssertionIsAccepted() throws {
        var h = Harness(try Self.config(account: nil))
        let (status, _) = try Self.post(&h, Self.form(try Self.other.assertion(issuedAt: Self.nowSeconds)))
        #expect(status == 200)
        let (late, o) = try Self.post(&h, Self.form(try Self.other.assertion(issuedAt: Self.nowSeconds - 7200)))
        #expect(late == 400 && o["error_description"] as? String == OAuthTokenEndpoint.shortLived)
    }

    @Test func anotherTokenPathAnswersToo() throws {
        var h = Harness(try Self.config(["--fcm-token-path", "/oauth2/v4/token"]))
        let (status, _) = try Self.post(&h, Self.form(try Self.account.assertion(issuedAt: Self.nowSeconds)), path: "/oauth2/v4/token")
        #expect(status == 200)
        #expect(throws: GatewayConfigurationError.self) { try GatewayConfiguration.parse(["--fcm-token-path", "/v1/x"]) }
    }

    /// The FCM send's status with `authorization`.
    static func send(_ h: inout Harness, authorization: String) -> UInt16? {
        TestRequest(path: fcmPath, headers: [("authorization", authorization)], body: fcmMessage(""))
            .with { h.machine.answer($0, connection: &h.connection, now: h.now) }.response?.status
    }

    @Test func oauthModeAcceptsOnlyUnexpiredTokensItIssued() throws {
        var h = Harness(try Self.config(["--fcm-auth", "oauth", "--fcm-token-lifetime", "60s"]))
        let (_, o) = try Self.post(&h, Self.form(try Self.account.assertion(issuedAt: Self.nowSeconds)))
        let token = try #require(o["access_token"] as? String)
        #expect(o["expires_in"] as? Int == 60)
        #expect(Self.send(&h, authorization: "Bearer \(token)") == 200)
        #expect(Self.send(&h, authorization: "bearer \(token)") == 200)
        #expect(Self.send(&h, authorization: "Bearer pushbench") == 401)
        // Google's plain google.rpc error: code, message and status, no FcmError details.
        let refused = h.fcm(fcmRequest(fcmMessage(""), headers: [("authorization", "Bearer pushbench")]))
        let body = try #require(try JSONSerialization.jsonObject(with: Data(refused.body.utf8)) as? [String: Any], "\(refused.body)")
        let error = try #require(body["error"] as? [String: Any])
        #expect(Array(body.keys) == ["error"] && Set(error.keys) == ["code", "message", "status"], "\(refused.body)")
        #expect(error["code"] as? Int == 401 && error["status"] as? String == "UNAUTHENTICATED")
        #expect((error["message"] as? String)?.hasPrefix("Request had invalid authentication credentials. Expected OAuth 2 access token") == true)
        // One hex digit of the MAC changed: a forgery.
        let forged = String(token.dropLast()) + (token.last == "0" ? "1" : "0")
        #expect(Self.send(&h, authorization: "Bearer \(forged)") == 401)
        // A token from another gateway (another clock, so another secret).
        var other = Harness(try Self.config(["--fcm-auth", "oauth"]))
        other.machine = GatewayStateMachine(configuration: other.machine.configuration, counters: GatewayCounters(),
                                            clock: GatewayClock(wallMillis: 1_700_000_000_000, monotonicNanos: 7))
        let (_, o2) = try Self.post(&other, Self.form(try Self.account.assertion(issuedAt: Self.nowSeconds)))
        #expect(Self.send(&h, authorization: "Bearer \(o2["access_token"] as! String)") == 401)
        // 61 s later it has expired.
        h.now += 61_000_000_000
        #expect(Self.send(&h, authorization: "Bearer \(token)") == 401)
        let stats = GatewayStats(summing: [h.machine.counters])
        #expect(stats.fcm.byCode["UNAUTHENTICATED"] == 5)
    }

    @Test func offModeAcceptsAnyBearerToken() throws {
        var h = Harness(try Self.config())
        #expect(Self.send(&h, authorization: "Bearer anything") == 200)
    }

    @Test func serviceAccountErrorsNameTheFileAndField() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pb-sa-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let bad = dir.appendingPathComponent("bad.json").path
        try #"{"type":"service_account","project_id":"p"}"#.write(toFile: bad, atomically: true, encoding: .utf8)
        #expect(throws: GatewayConfigurationError("--fcm-service-account: \(bad): field 'private_key_id' is missing or not a string (is this a service-account key file?)")) {
            try GatewayConfiguration.parse(["--fcm-service-account", bad])
        }
        let good = dir.appendingPathComponent("sa.json").path
        try Self.account.json.write(toFile: good, atomically: true, encoding: .utf8)
        let c = try GatewayConfiguration.parse(["--fcm-service-account", good])
        #expect(c.fcm.serviceAccount == Self.account)
    }
}
