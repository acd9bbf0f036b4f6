import PushVocabulary

/// APNs provider authentication tokens: JWTs signed with ES256 (`{"alg":"ES256","kid":KEY}` over
/// `{"iss":TEAM,"iat":SECONDS}`), sent as `authorization: bearer <token>`.
///
/// ```swift
/// let key = try ES256PrivateKey(contentsOfFile: "AuthKey_ABC123DEFG.p8")
/// let jwt = try ProviderToken.sign(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: 1_700_000_000, key: key)
/// switch ProviderToken.parse(jwt) { case .success(let t): … t.keyID, t.teamID, t.issuedAt … }
/// ```
public enum ProviderToken {
    /// A signed token, `header.claims.signature` in base64url, as Apple's documentation builds it.
    public static func sign(keyID: String, teamID: String, issuedAt: Int64, key: ES256PrivateKey) throws(CredentialError) -> String {
        var header = JSONWriter(), claims = JSONWriter()
        header.object { h in
            h.member("alg", "ES256")
            h.member("kid", keyID)
        }
        claims.object { c in
            c.member("iss", teamID)
            c.member("iat", issuedAt)
        }
        return try sign(header: header.bytes, claims: claims.bytes, key: key)
    }

    /// A token with any header and claims JSON (tests use it for the forms real clients send).
    public static func sign(header: [UInt8], claims: [UInt8], key: ES256PrivateKey) throws(CredentialError) -> String {
        let input = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        return input + "." + Base64URL.encode(try key.sign(Array(input.utf8)))
    }

    /// Reads `token` (the JWT alone, without `bearer `) leniently, as APNs has to from real clients: JSON
    /// with whitespace, `iat` as an integer, a float or a decimal string, `kid` in the claims when the header
    /// has none, the signature as r ‖ s or in DER (``ES256Signature``). The signature is not checked here (``ParsedProviderToken/isSigned(by:)`` does it).
    public static func parse(_ token: UnsafeRawBufferPointer) -> Result<ParsedProviderToken, ProviderTokenProblem> {
        var dots: [Int] = []
        for i in 0..<token.count where token[i] == 0x2E { dots.append(i) }
        guard dots.count == 2 else { return .failure(.notThreeParts) }
        let headerText = UnsafeRawBufferPointer(rebasing: token[0..<dots[0]])
        let claimsText = UnsafeRawBufferPointer(rebasing: token[(dots[0] + 1)..<dots[1]])
        let signatureText = UnsafeRawBufferPointer(rebasing: token[(dots[1] + 1)...])
        guard let header = decodeJSON(headerText) else { return .failure(.headerNotJSON) }
        guard let claims = decodeJSON(claimsText) else { return .failure(.claimsNotJSON) }
        var decoded = [UInt8](repeating: 0, count: ES256Signature.maxDERLength)
        guard let n = decoded.withUnsafeMutableBytes({ Base64URL.decode(signatureText, into: $0) }) else {
            return .failure(.signatureNotES256)
        }
        // DER first: a DER signature can be 64 bytes long too, while 64 raw bytes that happen to be one
        // strict DER SEQUENCE of two in-range INTEGERs are not a signature anyone makes.
        let signature: [UInt8]
        if let fromDER = decoded.withUnsafeBytes({ ES256Signature.raw(fromDER: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }) {
            signature = fromDER
        } else if n == 64 {
            signature = Array(decoded[0..<64])
            guard ES256Signature.inRange(signature) else { return .failure(.signatureNotES256) }
        } else {
            return .failure(.signatureNotES256)
        }

        guard let alg = header.string("alg") else { return .failure(.noAlgorithm) }
        guard alg == "ES256" else { return .failure(.algorithmNotES256) }
        guard let kid = header.string("kid") ?? claims.string("kid"), !kid.isEmpty else { return .failure(.noKeyID) }
        guard let iss = claims.string("iss"), !iss.isEmpty else { return .failure(.noIssuer) }
        guard let iat = claims.seconds("iat") else { return .failure(.noIssuedAt) }
        return .success(ParsedProviderToken(keyID: kid, teamID: iss, issuedAt: iat, signingInput: Array(token[0..<dots[1]]),
                                            signature: signature))
    }

    /// ``parse(_:)`` for a token in a String.
    public static func parse(_ token: String) -> Result<ParsedProviderToken, ProviderTokenProblem> {
        var t = token
        return t.withUTF8 { parse(UnsafeRawBufferPointer($0)) }
    }

    private static func decodeJSON(_ text: UnsafeRawBufferPointer) -> DecodedJSON? {
        guard let bytes = Base64URL.decode(String(decoding: text, as: UTF8.self)) else { return nil }
        var tape = JSONTape(capacity: 16)
        let ok = bytes.withUnsafeBytes { tape.parse($0) == nil && tape[tape.root].kind == .object }
        return ok ? DecodedJSON(bytes: bytes, tape: tape) : nil
    }
}

/// A JSON object decoded from a token part, with the lookups the claims need.
private struct DecodedJSON {
    let bytes: [UInt8]
    let tape: JSONTape

    func string(_ key: StaticString) -> String? {
        bytes.withUnsafeBytes { b in
            tape.member(key, of: tape.root, in: b).flatMap { tape.string(at: $0, in: b) }
        }
    }

    /// A number of seconds given as an integer, a float (its whole part) or a decimal string of either.
    func seconds(_ key: StaticString) -> Int64? {
        bytes.withUnsafeBytes { b -> Int64? in
            guard let i = tape.member(key, of: tape.root, in: b) else { return nil }
            let value: Double?
            switch tape[i].kind {
            case .number:
                if let n = tape.int64(at: i, in: b) { return n >= 0 ? n : nil }
                value = tape.double(at: i, in: b)
            case .string:
                let text = tape.string(at: i, in: b) ?? ""
                if let n = Int64(text) { return n >= 0 ? n : nil }
                value = text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x65 || $0 == 0x45 || $0 == 0x2B || $0 == 0x2D })
                    ? Double(text) : nil
            default:
                return nil
            }
            guard let v = value, v.isFinite, v >= 0, v < 1e15 else { return nil }
            return Int64(v)
        }
    }
}

/// A provider token's parts, read by ``ProviderToken/parse(_:)``.
public struct ParsedProviderToken: Equatable, Sendable {
    /// `kid`: the key id (header, or claims when the header has none).
    public var keyID: String
    /// `iss`: the team id.
    public var teamID: String
    /// `iat` in whole seconds since the epoch.
    public var issuedAt: Int64
    /// The signed bytes: `header.claims` as sent.
    var signingInput: [UInt8]
    /// The signature, r ‖ s (read from either form the token carried it in).
    var signature: [UInt8]

    /// Whether the signature is `key`'s.
    public func isSigned(by key: ES256PublicKey) -> Bool {
        signature.withUnsafeBytes { s in signingInput.withUnsafeBytes { key.verify(signature: s, message: $0) } }
    }
}

/// Why a provider token could not be read (APNs answers all of them InvalidProviderToken).
public enum ProviderTokenProblem: String, Error, Sendable, CaseIterable {
    case notThreeParts = "not three base64url parts separated by dots"
    case headerNotJSON = "the header is not a base64url JSON object"
    case claimsNotJSON = "the claims are not a base64url JSON object"
    case signatureNotES256 = "the signature is neither 64 base64url-encoded bytes (ES256 r‖s) nor a strict DER ECDSA signature, or r or s is out of range"
    case noAlgorithm = "the header has no alg"
    case algorithmNotES256 = "alg is not ES256"
    case noKeyID = "no kid"
    case noIssuer = "the claims have no iss"
    case noIssuedAt = "the claims have no iat in seconds (an integer, a float or a decimal string)"
}
