import Foundation
import PushCredentials
import Testing
@testable import MockGateway

/// Provider tokens over real sockets (h2c): the python h2 probe sends them, sees the reasons and the
/// SETTINGS the gateway sends as the first valid token arrives.
@Suite(.serialized) struct AuthLoopbackTests {
    let keyFile = temporaryFile(try! AuthFixture.key.pkcs8PEM(), suffix: ".p8")

    @Test func tokensOverH2C() throws {
        let now = Int64(Date().timeIntervalSince1970)
        try withGateway(["--apns-key", "\(AuthFixture.keyID)=\(keyFile)", "--apns-team", AuthFixture.teamID, "--max-streams", "500"]) { gateway in
            let valid = AuthFixture.token(iat: "\(now)")
            let r = try probe(port: gateway.port, [
                probeRequest(),
                probeRequest(headers: [("apns-topic", "t"), ("authorization", "bearer " + AuthFixture.token(key: AuthFixture.otherKey))]),
                probeRequest(headers: [("apns-topic", "t"), ("authorization", "bearer " + AuthFixture.token(iat: "\(now - 7200)"))]),
                probeRequest(headers: [("apns-topic", "t"), ("authorization", "bearer " + valid)], body: ""),
                probeRequest(headers: [("apns-topic", "t"), ("authorization", "Bearer " + valid)]),
                probeRequest(headers: [("apns-topic", "t"), ("authorization", "bearer " + AuthFixture.token(iat: "\(now + 1)"))]),
            ], sequential: true)
            let got = r.streams.map { ($0.status ?? 0, $0.body) }
            let expected: [(Int, String)] = [
                (403, #"{"reason":"MissingProviderToken"}"#), (403, #"{"reason":"InvalidProviderToken"}"#),
                (403, #"{"reason":"ExpiredProviderToken"}"#), (400, #"{"reason":"PayloadEmpty"}"#), (200, ""),
                (429, #"{"reason":"TooManyProviderTokenUpdates"}"#),
            ]
            #expect(got.map(\.0) == expected.map(\.0))
            #expect(got.map(\.1) == expected.map(\.1))
            // SETTINGS_MAX_CONCURRENT_STREAMS (0x3): 1 at the start, --max-streams once a valid token came.
            let limits = r.settings.filter { $0.0 == 3 }.map(\.1)
            #expect(limits == [1, 500])
            #expect(gateway.stats().byReason["TooManyProviderTokenUpdates"] == 1)
        }
    }

    @Test func missingTokensDERSignaturesAndBadOnesOverH2C() throws {
        let now = Int64(Date().timeIntervalSince1970)
        try withGateway(["--apns-key", "\(AuthFixture.keyID)=\(keyFile)", "--apns-team", AuthFixture.teamID]) { gateway in
            func bearer(_ value: String) -> [String: Any] {
                probeRequest(headers: [("apns-topic", "t"), ("authorization", value)])
            }
            let r = try probe(port: gateway.port, [
                bearer("bearer"),
                bearer("bearer "),
                bearer("basic abc"),
                probeRequest(headers: [("apns-topic", "t")]),
                bearer("bearer nope"),
                bearer("bearer " + AuthFixture.derSignedToken(.trailingByte, iat: now)),
                bearer("bearer " + AuthFixture.derSignedToken(.nonMinimalInteger, iat: now)),
                bearer("bearer " + AuthFixture.derSignedToken(iat: now, key: AuthFixture.otherKey)),
                bearer("bearer " + AuthFixture.derSignedToken(iat: now)),
            ], sequential: true)
            let missing = (403, #"{"reason":"MissingProviderToken"}"#), invalid = (403, #"{"reason":"InvalidProviderToken"}"#)
            // `bearer ` with its trailing space is answered as APNs answers it, MissingProviderToken: the
            // gateway's server takes `authorization` with trailing whitespace trimmed rather than reset the
            // stream as RFC 9113 §8.2.1 would (and as every other field still is).
            let expected = [missing, missing, missing, missing, invalid, invalid, invalid, invalid, (200, "")]
            let got = r.streams.map { ($0.status ?? 0, $0.body) }
            #expect(got.map(\.0) == expected.map(\.0))
            #expect(got.map(\.1) == expected.map(\.1))
            #expect(gateway.stats().byReason["MissingProviderToken"] == 4)
            #expect(gateway.stats().byReason["InvalidProviderToken"] == 4)
        }
    }
}
