import Foundation
import PushCredentials
@testable import MockGateway

/// Keys, tokens and certificates for the authentication tests (made fresh per test process; they sign
/// nothing real).
enum AuthFixture {
    static let key = try! ES256PrivateKey.generate()
    static let otherKey = try! ES256PrivateKey.generate()
    static let keyID = "KEY1234567"
    static let teamID = "TEAM123456"
    /// The wall clock of ``Harness``'s gateway at its `now`, in seconds.
    static let now: Int64 = 1_700_000_000

    /// `--apns-auth token` with ``key`` under ``keyID`` and ``teamID``.
    static func tokenAuth(interval: UInt64 = 20 * 60 * 1_000_000_000) -> APNsAuthConfiguration {
        var auth = APNsAuthConfiguration()
        auth.requestedMode = .token
        auth.keys = [APNsProviderKey(keyID: keyID, publicKey: key.publicKey)]
        auth.teamID = teamID
        auth.tokenUpdateIntervalNanos = interval
        return auth
    }

    static func configuration(_ auth: APNsAuthConfiguration) -> GatewayConfiguration {
        var c = GatewayConfiguration()
        c.auth = auth
        return c
    }

    /// A token with claims `iss` and `iat` (a JSON literal: `17`, `17.5`, `"17"`), signed by `key`.
    static func token(kid: String = keyID, team: String = teamID, iat: String = "\(now)", key: ES256PrivateKey = key) -> String {
        try! ProviderToken.sign(header: Array("{\"alg\":\"ES256\",\"kid\":\"\(kid)\"}".utf8),
                                claims: Array("{\"iss\":\"\(team)\",\"iat\":\(iat)}".utf8), key: key)
    }

    /// The `authorization` header value for `token`.
    static func bearer(_ token: String = token()) -> (String, String) { ("authorization", "bearer " + token) }

    /// A CA, the PEM file of its certificate, and a verifier of it.
    final class CA {
        let authority = try! TestCertificateAuthority.generate()
        let file: String
        init() {
            file = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-ca-\(UUID().uuidString).pem").path
            try! Data(try! authority.certificate.pem().utf8).write(to: URL(fileURLWithPath: file))
        }
        deinit { try? FileManager.default.removeItem(atPath: file) }

        func certAuth(environment: APNsEnvironment = .production) -> APNsAuthConfiguration {
            var auth = APNsAuthConfiguration()
            auth.requestedMode = .cert
            auth.clientCAFile = file
            auth.environment = environment
            return auth
        }

        func client(topic: String? = "com.example.app", environments: APNsCertificateEnvironments = .both,
                    days: Int = 365, notBeforeDays: Int = 1) -> X509Certificate {
            try! authority.issueClientCertificate(topic: topic, key: try! ES256PrivateKey.generate(), environments: environments,
                                                  days: days, notBeforeDays: notBeforeDays)
        }
    }
}

extension Harness {
    /// A harness whose connection presented `certificate` at the TLS handshake, judged against the CAs
    /// of `--client-ca` as the TLS server does.
    init(_ config: GatewayConfiguration, certificate: X509Certificate?) {
        self.init(config)
        let problem = certificate.flatMap { try! ClientCertificateVerifier(caFile: config.auth.clientCAFile!).problem(with: $0) }
        connection = machine.connectionOpened(now: now, certificate: certificate, verificationError: problem)
    }
}
