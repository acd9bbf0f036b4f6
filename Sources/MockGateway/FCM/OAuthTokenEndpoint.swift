import PushCredentials
import PushVocabulary

/// How the FCM route checks `authorization: Bearer <token>` (`--fcm-auth`).
public enum FCMAuthMode: String, Sendable, Equatable, CaseIterable, CustomStringConvertible {
    /// Any well-formed bearer token is accepted.
    case off
    /// Only access tokens this gateway's token endpoint issued and that have not expired.
    case oauth

    public var description: String { rawValue }
}

/// The access tokens a gateway issues: `ya29.pushbench.<expiry>.<serial>.<mac>`, hex fields, the MAC a
/// keyed hash of expiry and serial with a secret its event loops share. Any loop checks any token in a
/// few nanoseconds with no table and no allocation; a token from another gateway (another secret), a
/// forged one or an expired one fails.
struct AccessTokens: Sendable, Equatable {
    let secret: (UInt64, UInt64)

    static func == (a: AccessTokens, b: AccessTokens) -> Bool { a.secret == b.secret }

    /// One secret per process, mixed with each gateway's clock anchor (which its loops share).
    private static let processSecret = UInt64.random(in: 1...UInt64.max)

    /// The tokens of the gateway whose loops share `clock`.
    init(clock: GatewayClock) {
        secret = (mix(Self.processSecret ^ UInt64(bitPattern: clock.wallMillis)),
                  mix(Self.processSecret &+ clock.monotonicNanos &* 0x9E37_79B9_7F4A_7C15))
    }

    static let prefix: StaticString = "ya29.pushbench."
    /// prefix + 3 × (16 hex digits) + 2 dots.
    static let length = 15 + 16 * 3 + 2

    @inline(__always) private func mac(_ expiry: UInt64, _ serial: UInt64) -> UInt64 {
        mix(mix(secret.0 ^ expiry) ^ serial ^ secret.1)
    }

    /// A token valid until `expiryMillis` (wall clock).
    func issue(expiryMillis: Int64, serial: UInt64) -> String {
        let e = UInt64(max(expiryMillis, 0))
        func hex(_ v: UInt64) -> String {
            let s = String(v, radix: 16)
            return String(repeating: "0", count: 16 - s.count) + s
        }
        return "ya29.pushbench.\(hex(e)).\(hex(serial)).\(hex(mac(e, serial)))"
    }

    /// Whether `token` was issued here and is still valid at `nowMillis`. Allocates nothing.
    func isValid(_ token: UnsafeRawBufferPointer, nowMillis: Int64) -> Bool {
        guard token.count == Self.length, hasPrefix(token, Self.prefix) else { return false }
        @inline(__always) func field(_ at: Int) -> UInt64? {
            var v: UInt64 = 0
            var i = at
            while i < at + 16 {
                guard let d = hexValue(token[i]) else { return nil }
                v = v << 4 | UInt64(d)
                i += 1
            }
            return v
        }
        guard token[31] == 0x2E, token[48] == 0x2E, let e = field(15), let serial = field(32), let m = field(49) else {
            return false
        }
        return m == mac(e, serial) && Int64(bitPattern: e) > nowMillis
    }
}

/// Google's OAuth2 token endpoint for service accounts (`POST /token`, `--fcm-token-path`): a form with
/// `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` and an RS256 `assertion` whose claims are
/// `iss` (the account's client_email), `scope`, `aud` (always `https://oauth2.googleapis.com/token`),
/// `iat` and `exp` (at most an hour after iat). With `--fcm-service-account` the signature is checked
/// with that account's key; without, any well-formed assertion passes. Answers as Google does:
/// `{"access_token":…,"expires_in":3599,"token_type":"Bearer"}`, or 400 with `error` and
/// `error_description`. Off the push path (one exchange per client per hour): it may allocate.
struct OAuthTokenEndpoint {
    let configuration: FCMConfiguration
    let tokens: AccessTokens
    private let key: RS256Key?
    private var serial: UInt64

    init(configuration: FCMConfiguration, tokens: AccessTokens, loopIndex: Int) {
        self.configuration = configuration
        self.tokens = tokens
        key = try? configuration.serviceAccount?.key()
        serial = UInt64(loopIndex) << 48
    }

    /// The answer: status and JSON body.
    mutating func answer(method: UnsafeRawBufferPointer?, body: UnsafeRawBufferPointer, nowMillis: Int64) -> (UInt16, String) {
        guard let method, equals(method, "POST") else {
            return Self.error(405, "invalid_request", "The token endpoint takes POST.")
        }
        let form = Self.form(body)
        guard let grant = form["grant_type"], grant == ServiceAccount.grantType else {
            return Self.error(400, "unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            return Self.error(400, "invalid_request", "Missing required parameter: assertion")
        }
        if let refusal = check(assertion, nowMillis: nowMillis) { return Self.error(400, refusal.0, refusal.1) }
        serial &+= 1
        let lifetime = configuration.accessTokenLifetimeSeconds
        let token = tokens.issue(expiryMillis: nowMillis + Int64(lifetime) * 1000, serial: serial)
        var w = JSONWriter()
        w.object { o in
            o.member("access_token", token)
            o.member("expires_in", lifetime)
            o.member("token_type", "Bearer")
        }
        return (200, w.text)
    }

    static let shortLived = "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."

    /// Why `assertion` is refused (error, description), or nil when it is good.
    private func check(_ assertion: String, nowMillis: Int64) -> (String, String)? {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let header = (try? JSONValue.parse(headerBytes))?.object,
              let claims = (try? JSONValue.parse(claimBytes))?.object else {
            return ("invalid_grant", "Invalid JWT: the assertion is not three base64url parts with JSON header and claims.")
        }
        guard header["alg"]?.string == "RS256" else {
            return ("invalid_grant", "Invalid JWT: the signing algorithm must be RS256.")
        }
        guard let iss = claims["iss"]?.string, !iss.isEmpty else {
            return ("invalid_grant", "Invalid JWT: No issuer (iss) claim.")
        }
        guard let iat = Self.seconds(claims["iat"]), let exp = Self.seconds(claims["exp"]) else {
            return ("invalid_grant", Self.shortLived)
        }
        if let account = configuration.serviceAccount {
            guard iss == account.clientEmail else { return ("invalid_grant", "Invalid grant: account not found") }
            let signed = Array(assertion.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
            guard let key, key.verify(signature: signature, message: signed) else {
                return ("invalid_grant", "Invalid JWT Signature.")
            }
        }
        guard claims["aud"]?.string == ServiceAccount.audience else {
            return ("invalid_grant", "Invalid JWT: Failed audience check. The right audience is \(ServiceAccount.audience)")
        }
        // Google allows a few minutes of clock skew on iat.
        let now = Double(nowMillis) / 1000
        guard exp > iat, exp - iat <= 3600, exp > now, iat <= now + 300 else { return ("invalid_grant", Self.shortLived) }
        guard let scope = claims["scope"]?.string, !scope.isEmpty else {
            return ("invalid_scope", "Empty or missing scope not allowed.")
        }
        return nil
    }

    private static func seconds(_ v: JSONValue?) -> Double? {
        if let n = v?.number { return n }
        if let s = v?.string { return Double(s) }
        return nil
    }

    private static func error(_ status: UInt16, _ error: String, _ description: String) -> (UInt16, String) {
        var w = JSONWriter()
        w.object { o in
            o.member("error", error)
            o.member("error_description", description)
        }
        return (status, w.text)
    }

    /// An `application/x-www-form-urlencoded` body as name → value (the last of a repeated name wins).
    static func form(_ body: UnsafeRawBufferPointer) -> [String: String] {
        var out: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&")) {
            let kv = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(kv[0]) else { continue }
            out[name] = kv.count > 1 ? decode(kv[1]) ?? "" : ""
        }
        return out
    }

    /// Percent-decoding with `+` as a space, or nil for a bad escape.
    private static func decode(_ bytes: some Collection<UInt8>) -> String? {
        var out: [UInt8] = []
        var it = Array(bytes).makeIterator()
        while let c = it.next() {
            switch c {
            case UInt8(ascii: "+"): out.append(0x20)
            case UInt8(ascii: "%"):
                guard let h = it.next().flatMap(hexValue), let l = it.next().flatMap(hexValue) else { return nil }
                out.append(h << 4 | l)
            default: out.append(c)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
