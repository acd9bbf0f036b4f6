import COpenSSL
import Foundation
@testable import PushCredentials
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

    /// How ``derSignedToken(_:key:)`` spoils the DER signature.
    enum DERFlaw { case none, trailingByte, nonMinimalInteger, rOutOfRange, sOutOfRange }

    /// A token like ``token(kid:team:iat:key:)`` whose signature is DER (an ASN.1 SEQUENCE of two
    /// INTEGERs), as Java's SHA256withECDSA signs, made by OpenSSL (EVP_DigestSign, whose output is
    /// i2d_ECDSA_SIG's), then spoiled by `flaw`.
    static func derSignedToken(_ flaw: DERFlaw = .none, iat: Int64 = now, key: ES256PrivateKey = key) -> String {
        let input = Base64URL.encode(Array("{\"alg\":\"ES256\",\"kid\":\"\(keyID)\"}".utf8)) + "."
            + Base64URL.encode(Array("{\"iss\":\"\(teamID)\",\"iat\":\(iat)}".utf8))
        let message = Array(input.utf8)
        let md = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(md) }
        var der = [UInt8](repeating: 0, count: 80)
        var length = der.count
        precondition(EVP_DigestSignInit(md, nil, EVP_sha256(), nil, key.pkey) == 1
                     && EVP_DigestSign(md, &der, &length, message, message.count) == 1)
        der.removeLast(der.count - length)
        // The two INTEGERs: tag, length, content each.
        let rLength = Int(der[3])
        let r = Array(der[4..<(4 + rLength)]), s = Array(der[(6 + rLength)...])
        func sequence(_ r: [UInt8], _ s: [UInt8]) -> [UInt8] {
            let body = [0x02, UInt8(r.count)] + r + [0x02, UInt8(s.count)] + s
            return [0x30, UInt8(body.count)] + body
        }
        let order: [UInt8] = [0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                              0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51]
        switch flaw {
        case .none: break
        case .trailingByte: der.append(0)
        case .nonMinimalInteger: der = sequence([0x00] + r, s)
        case .rOutOfRange: der = sequence(order, s)
        case .sOutOfRange: der = sequence(r, order)
        }
        return input + "." + Base64URL.encode(der)
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
                    topics: [String] = [], days: Int = 365, notBeforeDays: Int = 1) -> X509Certificate {
            try! authority.issueClientCertificate(topic: topic, key: try! ES256PrivateKey.generate(), environments: environments,
                                                  topics: topics, days: days, notBeforeDays: notBeforeDays)
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
