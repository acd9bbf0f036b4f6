import CAllocCounter
@testable import PushCredentials
import PushVocabulary
import Testing
@testable import MockGateway

/// The provider-token state machine alone: header in, reason out.
@Suite struct ProviderTokenAuthenticatorTests {
    let auth = ProviderTokenAuthenticator(AuthFixture.tokenAuth())
    let t0: UInt64 = 5_000_000_000
    static let minute: UInt64 = 60_000_000_000

    func check(_ header: String?, _ state: inout ProviderTokenConnectionState, at now: UInt64? = nil,
               wall: Int64 = AuthFixture.now) -> APNsReason? {
        guard var h = header else { return auth.check(nil, &state, now: now ?? t0, wallSeconds: wall) }
        return h.withUTF8 { auth.check(UnsafeRawBufferPointer($0), &state, now: now ?? t0, wallSeconds: wall) }
    }

    @Test(arguments: ["1700000000", "1699999990.75", "\"1700000000\"", "\"1699999990.5\"", "1.7e9"])
    func acceptsEveryIatForm(_ iat: String) {
        var state = auth.newConnection()
        #expect(check("bearer " + AuthFixture.token(iat: iat), &state) == nil, "iat \(iat)")
        #expect(state.hasValidToken)
    }

    @Test func schemeInAnyCaseAndSpacing() {
        let token = AuthFixture.token()
        for header in ["bearer \(token)", "Bearer \(token)", "BEARER \(token)", "bearer   \(token)  "] {
            var state = auth.newConnection()
            #expect(check(header, &state) == nil, "\(header.prefix(10))")
        }
        // No bearer scheme, or no token after it: no provider token was specified.
        for header in ["Basic \(token)", "basic abc", "bearer", "bearer ", "bearer    ", "bearer\t\(token)", token, "bearerx \(token)"] {
            var state = auth.newConnection()
            #expect(check(header, &state) == .missingProviderToken, "\(header.prefix(10))")
        }
    }

    @Test func missingOrEmptyHeaderIsMissingProviderToken() {
        var state = auth.newConnection()
        #expect(check(nil, &state) == .missingProviderToken)
        #expect(check("", &state) == .missingProviderToken)
        #expect(!state.hasValidToken)
    }

    @Test func aDERSignatureIsAcceptedAndABadOneIsInvalid() {
        let der = AuthFixture.derSignedToken()
        var state = auth.newConnection()
        #expect(check("bearer " + der, &state) == nil)
        #expect(state.hasValidToken)
        #expect(check("bearer " + der, &state) == nil, "answered from the cache")
        for (what, token) in [("a trailing byte", AuthFixture.derSignedToken(.trailingByte)),
                              ("a non-minimal integer", AuthFixture.derSignedToken(.nonMinimalInteger)),
                              ("r out of range", AuthFixture.derSignedToken(.rOutOfRange)),
                              ("s out of range", AuthFixture.derSignedToken(.sOutOfRange)),
                              ("signed by another key", AuthFixture.derSignedToken(key: AuthFixture.otherKey))] {
            var fresh = auth.newConnection()
            #expect(check("bearer " + token, &fresh) == .invalidProviderToken, "\(what)")
            #expect(!fresh.hasValidToken, "\(what)")
        }
        var raw = auth.newConnection()
        #expect(check("bearer " + AuthFixture.token(), &raw) == nil, "r ‖ s still works")
    }

    @Test func everyInvalidTokenIsInvalidProviderToken() {
        let cases: [(String, String)] = [
            ("unknown kid", AuthFixture.token(kid: "OTHERKEY00")),
            ("wrong team", AuthFixture.token(team: "OTHERTEAM0")),
            ("signed by another key", AuthFixture.token(key: AuthFixture.otherKey)),
            ("not a JWT", "hello"),
            ("two parts", "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJUIn0"),
            ("HS256", try! ProviderToken.sign(header: Array(#"{"alg":"HS256","kid":"KEY1234567"}"#.utf8),
                                               claims: Array(#"{"iss":"TEAM123456","iat":1700000000}"#.utf8), key: AuthFixture.key)),
            ("no iat", try! ProviderToken.sign(header: Array(#"{"alg":"ES256","kid":"KEY1234567"}"#.utf8),
                                                claims: Array(#"{"iss":"TEAM123456"}"#.utf8), key: AuthFixture.key)),
            ("signature cut", String(AuthFixture.token().dropLast(3))),
            ("over 2048 bytes", AuthFixture.token() + String(repeating: "A", count: 2048)),
        ]
        for (what, token) in cases {
            var state = auth.newConnection()
            #expect(check("bearer " + token, &state) == .invalidProviderToken, "\(what)")
            #expect(check("bearer " + token, &state) == .invalidProviderToken, "\(what), sent again")
            #expect(!state.hasValidToken, "\(what)")
        }
    }

    @Test func olderThanAnHourIsExpired() {
        var state = auth.newConnection()
        #expect(check("bearer " + AuthFixture.token(iat: "\(AuthFixture.now - 3601)"), &state) == .expiredProviderToken)
        #expect(!state.hasValidToken)
        var fresh = auth.newConnection()
        #expect(check("bearer " + AuthFixture.token(iat: "\(AuthFixture.now - 3600)"), &fresh) == nil)
        // The token in force expires as time passes, and is answered so from the cache.
        #expect(check("bearer " + AuthFixture.token(iat: "\(AuthFixture.now - 3600)"), &fresh, wall: AuthFixture.now + 1)
                == .expiredProviderToken)
    }

    @Test func changingTheTokenMoreOftenThanTheIntervalIsTooManyUpdates() {
        let a = "bearer " + AuthFixture.token(iat: "\(AuthFixture.now)")
        let b = "bearer " + AuthFixture.token(iat: "\(AuthFixture.now + 1)")
        var state = auth.newConnection()
        #expect(check(a, &state, at: t0) == nil)
        #expect(check(a, &state, at: t0 + Self.minute) == nil, "the same token again is no update")
        #expect(check(b, &state, at: t0 + 19 * Self.minute, wall: AuthFixture.now + 19 * 60) == .tooManyProviderTokenUpdates)
        #expect(check(a, &state, at: t0 + 19 * Self.minute, wall: AuthFixture.now + 19 * 60) == nil, "the token in force still works")
        #expect(check(b, &state, at: t0 + 20 * Self.minute, wall: AuthFixture.now + 20 * 60) == nil, "20 minutes later it may change")
        #expect(check(a, &state, at: t0 + 21 * Self.minute, wall: AuthFixture.now + 21 * 60) == .tooManyProviderTokenUpdates,
                "going back is a change too")
        #expect(check(b, &state, at: t0 + 21 * Self.minute, wall: AuthFixture.now + 21 * 60) == nil)
    }

    @Test func theIntervalIsConfigurable() {
        let quick = ProviderTokenAuthenticator(AuthFixture.tokenAuth(interval: 1_000_000_000))
        var state = quick.newConnection()
        var a = "bearer " + AuthFixture.token(iat: "\(AuthFixture.now)")
        var b = "bearer " + AuthFixture.token(iat: "\(AuthFixture.now + 1)")
        #expect(a.withUTF8 { quick.check(UnsafeRawBufferPointer($0), &state, now: t0, wallSeconds: AuthFixture.now) } == nil)
        #expect(b.withUTF8 { quick.check(UnsafeRawBufferPointer($0), &state, now: t0 + 999_999_999, wallSeconds: AuthFixture.now) }
                == .tooManyProviderTokenUpdates)
        #expect(b.withUTF8 { quick.check(UnsafeRawBufferPointer($0), &state, now: t0 + 1_000_000_000, wallSeconds: AuthFixture.now) } == nil)
    }

    @Test func replacingAnExpiredTokenIsAlwaysAllowed() {
        let old = "bearer " + AuthFixture.token(iat: "\(AuthFixture.now - 3500)")
        let new = "bearer " + AuthFixture.token(iat: "\(AuthFixture.now + 200)")
        var state = auth.newConnection()
        #expect(check(old, &state) == nil)
        let later = t0 + 200_000_000_000
        #expect(check(old, &state, at: later, wall: AuthFixture.now + 200) == .expiredProviderToken)
        #expect(check(new, &state, at: later, wall: AuthFixture.now + 200) == nil)
    }

    @Test func aTokenReusedAcrossConnectionsIsValidOnEach() {
        // The sender signs one token and shares it: each connection adopts it as its first, no update.
        let shared = "bearer " + AuthFixture.token()
        var one = auth.newConnection(), two = auth.newConnection()
        #expect(check(shared, &one, at: t0) == nil)
        #expect(check(shared, &two, at: t0 + Self.minute) == nil)
        // Updates are counted per connection: a new token on one does not count against the other.
        let next = "bearer " + AuthFixture.token(iat: "\(AuthFixture.now + 60)")
        #expect(check(next, &one, at: t0 + 2 * Self.minute) == .tooManyProviderTokenUpdates)
        var three = auth.newConnection()
        #expect(check(next, &three, at: t0 + 2 * Self.minute) == nil)
    }

    @Test func eachDistinctTokenIsCheckedOncePerConnection() {
        // The signature check allocates (OpenSSL); answering from the cache does not, for a valid or an
        // invalid token alike.
        for token in [AuthFixture.token(), AuthFixture.token(key: AuthFixture.otherKey)] {
            var state = auth.newConnection()
            var header = "bearer " + token
            let first = check(header, &state)
            let allocations = header.withUTF8 { h -> UInt64 in
                pb_alloc_reset()
                for _ in 0..<100 { _ = auth.check(UnsafeRawBufferPointer(h), &state, now: t0, wallSeconds: AuthFixture.now) }
                return pb_alloc_count()
            }
            #expect(allocations == 0, "\(first.map(\.rawValue) ?? "valid") token: \(allocations) allocations in 100 checks")
        }
    }
}

/// Token authentication inside the gateway's state machine: the stream limit, the order of checks.
@Suite struct TokenAuthStateMachineTests {
    let valid = AuthFixture.bearer()
    let topic = ("apns-topic", "com.example.app")

    @Test func oneStreamUntilTheFirstValidToken() {
        var h = Harness(AuthFixture.configuration(AuthFixture.tokenAuth()))
        #expect(h.machine.initialMaxConcurrentStreams == 1)
        #expect(h.connection.advertisedMaxStreams == 1)
        let missing = h.send(TestRequest(headers: [topic])).response!
        #expect(missing.status == 403 && missing.reason == .missingProviderToken && missing.maxConcurrentStreams == nil)
        let invalid = h.send(TestRequest(headers: [topic, AuthFixture.bearer(AuthFixture.token(key: AuthFixture.otherKey))])).response!
        #expect(invalid.status == 403 && invalid.reason == .invalidProviderToken && invalid.maxConcurrentStreams == nil)
        let first = h.send(TestRequest(headers: [topic, valid])).response!
        #expect(first.status == 200 && first.maxConcurrentStreams == 1000)
        #expect(h.connection.advertisedMaxStreams == 1000)
        let second = h.send(TestRequest(headers: [topic, valid])).response!
        #expect(second.status == 200 && second.maxConcurrentStreams == nil)
        // A fresh connection starts at 1 again.
        #expect(h.machine.connectionOpened(now: h.now).advertisedMaxStreams == 1)
    }

    @Test func aValidTokenRaisesTheLimitEvenWhenThePayloadIsRefused() {
        var h = Harness(AuthFixture.configuration(AuthFixture.tokenAuth()))
        let r = h.send(TestRequest(headers: [topic, valid], body: "")).response!
        #expect(r.status == 400 && r.reason == .payloadEmpty && r.maxConcurrentStreams == 1000)
    }

    @Test func withoutAuthenticationTheLimitIsTheConfiguredOne() {
        let h = Harness()
        #expect(h.machine.initialMaxConcurrentStreams == 1000 && h.connection.advertisedMaxStreams == 1000)
        #expect(h.connection.tokens == nil && h.connection.certificate == nil)
    }

    @Test func eachReasonWithItsStatus() {
        var h = Harness(AuthFixture.configuration(AuthFixture.tokenAuth()))
        #expect(h.status(TestRequest(headers: [topic])) == (403, "MissingProviderToken"))
        #expect(h.status(TestRequest(headers: [topic, AuthFixture.bearer(AuthFixture.token(team: "X"))])) == (403, "InvalidProviderToken"))
        #expect(h.status(TestRequest(headers: [topic, AuthFixture.bearer(AuthFixture.token(iat: "1"))])) == (403, "ExpiredProviderToken"))
        #expect(h.status(TestRequest(headers: [topic, valid])) == (200, nil))
        #expect(h.status(TestRequest(headers: [topic, AuthFixture.bearer(AuthFixture.token(iat: "1700000001"))]))
                == (429, "TooManyProviderTokenUpdates"))
        #expect(h.stats.byReason["TooManyProviderTokenUpdates"] == 1 && h.stats.byStatus[403] == 3)
    }

    /// Requests that fail several checks at once get the first in APNs' order: path and token, then
    /// authentication, then the payload.
    @Test(arguments: [
        ("no token, empty body", [("apns-topic", "a")], nil, "", 403, "MissingProviderToken"),
        ("no token, body too large", [("apns-topic", "a")], nil, String(repeating: "x", count: 5000), 403, "MissingProviderToken"),
        ("bad token, empty body", [("apns-topic", "a"), ("authorization", "bearer nope")], nil, "", 403, "InvalidProviderToken"),
        ("bad token, body too large", [("apns-topic", "a"), ("authorization", "bearer nope")], nil, String(repeating: "x", count: 5000), 403, "InvalidProviderToken"),
        ("bad token, body not JSON", [("apns-topic", "a"), ("authorization", "bearer nope")], nil, "[1]", 403, "InvalidProviderToken"),
        ("expired token, empty body", [("apns-topic", "a"), ("authorization", "bearer " + AuthFixture.token(iat: "1"))], nil, "", 403, "ExpiredProviderToken"),
        ("no token, bad device token", [("apns-topic", "a")], "/3/device/zz", "", 400, "BadDeviceToken"),
        ("no token, no device token", [("apns-topic", "a")], "/3/device/", "", 400, "MissingDeviceToken"),
        ("no token, bad path", [("apns-topic", "a")], "/3/other", "", 404, "BadPath"),
        ("no token, no topic", [], nil, "", 400, "MissingTopic"),
        ("no token, bad apns-id", [("apns-topic", "a"), ("apns-id", "x")], nil, "", 400, "BadMessageId"),
        ("no token, GET", [("apns-topic", "a")], nil, "", 405, "MethodNotAllowed"),
        ("no token, bad priority", [("apns-topic", "a"), ("apns-priority", "7")], nil, "", 400, "BadPriority"),
        ("bad token, duplicate header", [("apns-topic", "a"), ("apns-topic", "a"), ("authorization", "bearer nope")], nil, "", 400, "DuplicateHeaders"),
        ("valid token, empty body", [("apns-topic", "a"), ("authorization", "bearer " + AuthFixture.token())], nil, "", 400, "PayloadEmpty"),
        ("valid token, body too large", [("apns-topic", "a"), ("authorization", "bearer " + AuthFixture.token())], nil, String(repeating: "x", count: 5000), 413, "PayloadTooLarge"),
    ] as [(String, [(String, String)], String?, String, Int, String)])
    func validationOrder(_ c: (String, [(String, String)], String?, String, Int, String)) {
        var h = Harness(AuthFixture.configuration(AuthFixture.tokenAuth()))
        let method = c.0.hasSuffix("GET") ? "GET" : "POST"
        let r = h.send(TestRequest(method: method, path: c.2, headers: c.1, body: c.3)).response!
        #expect(r.status == UInt16(c.4), "\(c.0)")
        #expect(r.reason?.rawValue == c.5, "\(c.0)")
    }

    @Test func anUnregisteredTokenIsAnsweredBeforeAuthentication() throws {
        var config = AuthFixture.configuration(AuthFixture.tokenAuth())
        config.unregisteredFraction = 1
        var h = Harness(config)
        #expect(h.status(TestRequest(headers: [topic], body: "")) == (410, "Unregistered"))
    }

    @Test func theFCMRouteIsNotAPNsAuthenticated() {
        var h = Harness(AuthFixture.configuration(AuthFixture.tokenAuth()))
        let r = h.send(TestRequest(path: "/v1/projects/p/messages:send", headers: [("content-type", "application/json")],
                                   body: #"{"message":{"token":"t","notification":{"title":"x"}}}"#)).response!
        #expect(r.reason == nil && r.fcm != nil)
    }

    @Test func authenticatedRequestsAllocateNothing() {
        var h = Harness(AuthFixture.configuration(AuthFixture.tokenAuth()))
        let best = h.allocationsPer1000(TestRequest(headers: [topic, valid]))
        #expect(h.stats.byStatus[200] == 5000)
        #expect(best == 0, "\(best) allocations per 1000 authenticated requests")
    }
}

/// Certificate authentication: the verdict on the connection's client certificate, and its topic.
@Suite struct CertificateAuthStateMachineTests {
    let ca = AuthFixture.CA()

    @Test func aGoodCertificateIsAcceptedAndGivesTheTopic() {
        var h = Harness(AuthFixture.configuration(ca.certAuth()), certificate: ca.client())
        #expect(h.connection.certificate == ClientCertificateIdentity(problem: nil, detail: "ok", topic: "com.example.app",
                                                                      topics: ["com.example.app"]))
        #expect(h.machine.initialMaxConcurrentStreams == 1000)
        #expect(h.status(TestRequest(headers: [])) == (200, nil), "no apns-topic: the certificate's UID")
        #expect(h.status(TestRequest(headers: [("apns-topic", "com.example.app")])) == (200, nil))
        #expect(h.status(TestRequest(headers: [], body: "")) == (400, "PayloadEmpty"))
    }

    @Test func eachCertificateProblem() {
        let other = AuthFixture.CA()
        let cases: [(String, X509Certificate?, APNsEnvironment, Int, String)] = [
            ("no certificate", nil, .production, 403, "MissingProviderToken"),
            ("another CA's", other.client(), .production, 403, "BadCertificate"),
            ("expired", ca.client(days: 1, notBeforeDays: 2), .production, 403, "BadCertificate"),
            ("development only, gateway production", ca.client(environments: .development), .production, 403, "BadCertificateEnvironment"),
            ("production only, gateway development", ca.client(environments: .production), .development, 403, "BadCertificateEnvironment"),
            ("development only, gateway development", ca.client(environments: .development), .development, 200, ""),
            ("no Apple extension", ca.client(environments: []), .production, 200, ""),
        ]
        for (what, cert, environment, status, reason) in cases {
            var h = Harness(AuthFixture.configuration(ca.certAuth(environment: environment)), certificate: cert)
            let r = h.send(TestRequest(headers: [("apns-topic", "com.example.app")], body: status == 200 ? nil : "")).response!
            #expect(r.status == UInt16(status), "\(what)")
            #expect((r.reason?.rawValue ?? "") == reason, "\(what): a bad certificate comes before the empty payload")
        }
    }

    @Test func noTopicAndNoUIDIsMissingTopic() {
        var h = Harness(AuthFixture.configuration(ca.certAuth()), certificate: ca.client(topic: nil))
        #expect(h.status(TestRequest(headers: [])) == (400, "MissingTopic"))
        // A certificate naming no topic at all (not shaped like Apple's) limits none.
        #expect(h.status(TestRequest(headers: [("apns-topic", "com.example.app")])) == (200, nil))
        #expect(h.status(TestRequest(headers: [("apns-topic", "org.other.app")])) == (200, nil))
    }

    @Test func aTopicTheCertificateDoesNotCoverIsBadTopic() {
        let app = "com.example.app"
        let universal = ca.client(topic: app, topics: [app, app + ".voip", app + ".complication"])
        #expect(universal.topics == [app, app + ".voip", app + ".complication"])
        var h = Harness(AuthFixture.configuration(ca.certAuth()), certificate: universal)
        #expect(h.status(TestRequest(headers: [("apns-topic", app)])) == (200, nil))
        #expect(h.status(TestRequest(headers: [("apns-topic", app + ".voip"), ("apns-push-type", "voip")])) == (200, nil))
        #expect(h.status(TestRequest(headers: [("apns-topic", app + ".complication")])) == (200, nil))
        #expect(h.status(TestRequest(headers: [("apns-topic", "org.other.app")])) == (400, "BadTopic"))
        #expect(h.status(TestRequest(headers: [("apns-topic", app + ".voi")])) == (400, "BadTopic"))
        #expect(h.status(TestRequest(headers: [("apns-topic", "COM.EXAMPLE.APP")])) == (400, "BadTopic"))
        #expect(h.stats.byReason["BadTopic"] == 3)
        // Apple: with a certificate for several topics, apns-topic is required.
        #expect(h.status(TestRequest(headers: [])) == (400, "MissingTopic"))

        // A certificate with the UID alone covers that topic only.
        var uidOnly = Harness(AuthFixture.configuration(ca.certAuth()), certificate: ca.client(topic: app))
        #expect(uidOnly.status(TestRequest(headers: [("apns-topic", app)])) == (200, nil))
        #expect(uidOnly.status(TestRequest(headers: [("apns-topic", app + ".voip")])) == (400, "BadTopic"))
        #expect(uidOnly.status(TestRequest(headers: [])) == (200, nil), "no apns-topic: the certificate's own")
        // So does a certificate whose extension lists only its own topic.
        var single = Harness(AuthFixture.configuration(ca.certAuth()), certificate: ca.client(topic: app, topics: [app]))
        #expect(single.status(TestRequest(headers: [])) == (200, nil))
    }

    @Test func theTopicIsCheckedWithAuthenticationInAPNsOrder() {
        var h = Harness(AuthFixture.configuration(ca.certAuth()), certificate: ca.client(topic: "com.example.app"))
        // After the path and token checks, before the payload ones.
        #expect(h.status(TestRequest(headers: [("apns-topic", "org.other.app")], body: "")) == (400, "BadTopic"))
        #expect(h.status(TestRequest(path: "/3/device/zz", headers: [("apns-topic", "org.other.app")])) == (400, "BadDeviceToken"))
        // A bad certificate is answered as such whatever the topic.
        var expired = Harness(AuthFixture.configuration(ca.certAuth()), certificate: ca.client(days: 1, notBeforeDays: 2))
        #expect(expired.status(TestRequest(headers: [("apns-topic", "org.other.app")])) == (403, "BadCertificate"))
    }

    @Test func certificateAuthenticatedRequestsAllocateNothing() {
        let app = "com.example.app"
        var h = Harness(AuthFixture.configuration(ca.certAuth()),
                        certificate: ca.client(topic: app, topics: [app, app + ".voip", app + ".complication"]))
        let best = h.allocationsPer1000(TestRequest(headers: [("apns-topic", app + ".complication")]))
        #expect(h.stats.byStatus[200] == 5000)
        #expect(best == 0, "\(best) allocations per 1000 certificate-authenticated requests")
        let refused = h.allocationsPer1000(TestRequest(headers: [("apns-topic", "org.other.app")]))
        #expect(h.stats.byReason["BadTopic"] == 5000)
        #expect(refused == 0, "\(refused) allocations per 1000 BadTopic answers")
    }
}
