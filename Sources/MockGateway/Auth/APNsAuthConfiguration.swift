import PushCredentials

/// How the gateway authenticates APNs requests (`--apns-auth`).
public enum APNsAuthMode: String, Sendable, CaseIterable {
    /// No authentication: every request is accepted as if it carried good credentials (the default).
    case off
    /// Provider tokens: `authorization: bearer <ES256 JWT>` signed by a configured key.
    case token
    /// Client certificates: a TLS client certificate issued by `--client-ca`.
    case cert
}

/// The APNs environment the gateway plays (`--apns-environment`): a push certificate issued only for
/// the other one is answered BadCertificateEnvironment.
enum APNsEnvironment: String, Sendable, CaseIterable {
    case production, development
}

/// A provider key the gateway accepts (`--apns-key KEYID=FILE`): its id and the public half of the
/// key, read from the `.p8` the sender signs with (or from a public-key PEM).
public struct APNsProviderKey: Equatable, Sendable {
    /// The key id (`kid`).
    public var keyID: String
    /// The file it was read from (shown, never its contents).
    public var path: String
    /// The key that checks signatures.
    public var publicKey: ES256PublicKey

    /// A key with id `keyID` read from the PEM file at `path`.
    public init(keyID: String, path: String) throws(CredentialError) {
        self.keyID = keyID
        self.path = path
        publicKey = try ES256PublicKey(contentsOfFile: path)
    }

    /// A key with id `keyID` (tests and the embedded gateway, which already hold the key).
    public init(keyID: String, publicKey: ES256PublicKey, path: String = "") {
        self.keyID = keyID
        self.publicKey = publicKey
        self.path = path
    }
}

/// The gateway's authentication settings: the `--apns-*` and `--client-ca` flags.
public struct APNsAuthConfiguration: Equatable, Sendable {
    /// `--apns-auth`; nil when not given: token auth when keys are given, cert auth with a client CA,
    /// otherwise off (see ``mode``).
    public var requestedMode: APNsAuthMode?
    /// `--apns-key` (repeatable).
    public var keys: [APNsProviderKey] = []
    /// `--apns-team`: the team id every token's `iss` must name.
    public var teamID: String?
    /// `--apns-token-interval`: a connection may change its provider token at most once per this many
    /// ns; more often is answered 429 TooManyProviderTokenUpdates (APNs: 20 minutes).
    var tokenUpdateIntervalNanos: UInt64 = 20 * 60 * 1_000_000_000
    /// A token older than this (its `iat`) is answered 403 ExpiredProviderToken (APNs: one hour).
    var tokenLifetimeSeconds: Int64 = 3600
    /// `--client-ca`: the PEM file of the CAs client certificates must chain to (the TLS server asks
    /// for a certificate and checks it against them).
    var clientCAFile: String?
    /// `--apns-environment`.
    var environment = APNsEnvironment.production

    /// Defaults: authentication off.
    init() {}

    /// The mode in force.
    public var mode: APNsAuthMode {
        requestedMode ?? (!keys.isEmpty ? .token : clientCAFile != nil ? .cert : .off)
    }

    /// One line for the terminal saying what is checked, naming key ids and files only (never key
    /// material); nil when authentication is off.
    public var summary: String? {
        switch mode {
        case .off: return nil
        case .token:
            let keyList = keys.map { $0.path.isEmpty ? $0.keyID : "\($0.keyID) (\($0.path))" }.joined(separator: ", ")
            let interval = tokenUpdateIntervalNanos % 60_000_000_000 == 0 ? "\(tokenUpdateIntervalNanos / 60_000_000_000)m"
                : "\(Double(tokenUpdateIntervalNanos) / 1e9)s"
            return "provider tokens of team \(teamID ?? "-") signed by \(keyList); one token change per connection per \(interval)"
        case .cert:
            return "client certificates from the CAs in \(clientCAFile ?? "-") (\(environment.rawValue) environment)"
        }
    }

    /// Checks the combinations one flag cannot.
    func validate() throws(GatewayConfigurationError) {
        switch mode {
        case .off:
            if !keys.isEmpty { throw GatewayConfigurationError("--apns-key: provider keys need --apns-auth token") }
            if clientCAFile != nil { throw GatewayConfigurationError("--client-ca: client certificates need --apns-auth cert") }
        case .token:
            if keys.isEmpty {
                throw GatewayConfigurationError("--apns-auth token: give the provider keys with --apns-key KEYID=FILE.p8")
            }
            if teamID == nil { throw GatewayConfigurationError("--apns-auth token: give the team id with --apns-team TEAMID") }
            if clientCAFile != nil { throw GatewayConfigurationError("--client-ca: client certificates need --apns-auth cert") }
        case .cert:
            if clientCAFile == nil {
                throw GatewayConfigurationError("--apns-auth cert: give the CA client certificates must chain to with --client-ca FILE")
            }
            if !keys.isEmpty { throw GatewayConfigurationError("--apns-key: provider keys need --apns-auth token") }
        }
    }
}
