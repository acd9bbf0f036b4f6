import Foundation
import PushVocabulary

/// A Google service account as its JSON key file has it (what firebase-admin's
/// `credentials.Certificate(path)` and google-auth read), and the signed assertion (an RS256 JWT) a
/// client exchanges for an OAuth2 access token at `token_uri`.
///
/// ```swift
/// let account = try ServiceAccount(contentsOfFile: "service-account.json")
/// let jwt = try account.assertion(issuedAt: 1_700_000_000)   // grant_type=…jwt-bearer&assertion=<jwt>
/// ```
public struct ServiceAccount: Sendable, Equatable {
    /// `project_id`.
    public var projectID: String
    /// `private_key_id`: the JWT header's `kid`.
    public var privateKeyID: String
    /// `private_key`: PEM (PKCS #8).
    public var privateKeyPEM: String
    /// `client_email`: the assertion's `iss`.
    public var clientEmail: String
    /// `client_id`.
    var clientID: String
    /// `token_uri`: where the assertion is exchanged.
    public var tokenURI: String

    /// The audience every assertion names, whatever `token_uri` says (google-auth always sends it).
    public static let audience = "https://oauth2.googleapis.com/token"
    /// The scope FCM's send API needs.
    @usableFromInline static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The grant type of the exchange (RFC 7523).
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// An account with these fields.
    public init(projectID: String, privateKeyID: String, privateKeyPEM: String, clientEmail: String, clientID: String,
                tokenURI: String) {
        self.projectID = projectID
        self.privateKeyID = privateKeyID
        self.privateKeyPEM = privateKeyPEM
        self.clientEmail = clientEmail
        self.clientID = clientID
        self.tokenURI = tokenURI
    }

    /// Reads a service-account JSON file; errors name the file and the field, never a key.
    public init(contentsOfFile path: String) throws(CredentialError) {
        try self.init(json: try readFile(path), source: path)
    }

    /// Reads service-account JSON text; `source` names it in errors.
    public init(json: [UInt8], source: String) throws(CredentialError) {
        let parsed: JSONValue
        do throws(JSONError) { parsed = try JSONValue.parse(json) } catch {
            throw CredentialError("\(source):\(error.line):\(error.column): not valid JSON: \(error.code.reason) (expected a service-account key file)")
        }
        guard let o = parsed.object else {
            throw CredentialError("\(source): not a JSON object (expected a service-account key file)")
        }
        func field(_ name: String) throws(CredentialError) -> String {
            guard let v = o[name]?.string, !v.isEmpty else {
                throw CredentialError("\(source): field '\(name)' is missing or not a string (is this a service-account key file?)")
            }
            return v
        }
        if let type = o["type"]?.string, type != "service_account" {
            throw CredentialError("\(source): field 'type' is '\(type)', expected 'service_account'")
        }
        projectID = try field("project_id")
        privateKeyID = try field("private_key_id")
        privateKeyPEM = try field("private_key")
        clientEmail = try field("client_email")
        clientID = o["client_id"]?.string ?? ""
        tokenURI = try field("token_uri")
        guard tokenURI.hasPrefix("http://") || tokenURI.hasPrefix("https://") else {
            throw CredentialError("\(source): field 'token_uri' is '\(tokenURI)', not an http:// or https:// URL")
        }
        _ = try key(source: source)
    }

    /// The account's RSA key (from `private_key`).
    public func key(source: String = "service account") throws(CredentialError) -> RS256Key {
        let k = try RS256Key(pem: Array(privateKeyPEM.utf8), source: "\(source): field 'private_key'")
        guard k.canSign else { throw CredentialError("\(source): field 'private_key' holds a public key, not a private one") }
        return k
    }

    /// The key file's JSON, in Google's field order (`type` first), pretty-printed as Google writes it.
    public var json: String {
        let fields: [(String, String)] = [
            ("type", "service_account"), ("project_id", projectID), ("private_key_id", privateKeyID),
            ("private_key", privateKeyPEM), ("client_email", clientEmail), ("client_id", clientID),
            ("auth_uri", "https://accounts.google.com/o/oauth2/auth"), ("token_uri", tokenURI),
            ("auth_provider_x509_cert_url", "https://www.googleapis.com/oauth2/v1/certs"),
            ("client_x509_cert_url", "https://www.googleapis.com/robot/v1/metadata/x509/"
                + (clientEmail.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? clientEmail)),
            ("universe_domain", "googleapis.com"),
        ]
        return JSONValue.object(fields.map { ($0.0, .string($0.1)) }).render()
    }

    /// The signed assertion google-auth sends: header `{"alg":"RS256","typ":"JWT","kid":<private_key_id>}`,
    /// claims `iat`, `exp` (iat + `lifetime`), `iss` (client_email), `aud` (``audience``), `scope`.
    public func assertion(issuedAt iat: Int64, lifetime: Int64 = 3600, scope: String = ServiceAccount.messagingScope,
                          audience: String = ServiceAccount.audience) throws(CredentialError) -> String {
        var header = JSONWriter(), claims = JSONWriter()
        header.object { h in
            h.member("typ", "JWT")
            h.member("alg", "RS256")
            h.member("kid", privateKeyID)
        }
        claims.object { c in
            c.member("iat", iat)
            c.member("exp", iat + lifetime)
            c.member("iss", clientEmail)
            c.member("aud", audience)
            c.member("scope", scope)
        }
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(claims.bytes)
        let signature = try key().sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// A new test account: a fresh RSA-2048 key, `client_email` `pushbench@<project>.iam.gserviceaccount.com`,
    /// a random 40-hex-digit `private_key_id`, and `tokenURI`.
    public static func generate(projectID: String, tokenURI: String) throws(CredentialError) -> ServiceAccount {
        let key = try RS256Key.generate()
        var random = SystemRandomNumberGenerator()
        let hex = (0..<20).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &random)) }.joined()
        let clientID = String((0..<21).map { i in Character(String(i == 0 ? Int.random(in: 1...9) : Int.random(in: 0...9))) })
        return ServiceAccount(projectID: projectID, privateKeyID: hex, privateKeyPEM: try key.pkcs8PEM(),
                              clientEmail: "pushbench@\(projectID).iam.gserviceaccount.com", clientID: clientID,
                              tokenURI: tokenURI)
    }
}
