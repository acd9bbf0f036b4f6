#if canImport(Glibc)
import Glibc
#endif
import PushCredentials
import PushVocabulary

/// What one connection's provider tokens have been: the token in force, the last other token seen, and
/// when the token last changed. Owned by the connection; ``ProviderTokenAuthenticator`` updates it.
struct ProviderTokenConnectionState: Sendable {
    /// The token in force (empty before the first valid one).
    var current = CachedToken()
    /// The last token that is not the one in force, with its verdict: a rejected token sent again is
    /// answered from here, and a valid one becomes current once the update interval allows.
    var candidate = CachedToken()
    /// Monotonic time (ns) the current token was adopted.
    var changedAt: UInt64 = 0
    /// Whether a valid token has been accepted on this connection (the stream limit is 1 until then).
    private(set) var hasValidToken = false

    /// State for a new connection: room for tokens of up to ``ProviderTokenAuthenticator/maxTokenLength``
    /// bytes, so caching one allocates nothing later.
    init(reserving capacity: Int) {
        current.bytes.reserveCapacity(capacity)
        candidate.bytes.reserveCapacity(capacity)
    }

    mutating func adopt(now: UInt64) {
        swap(&current, &candidate)
        changedAt = now
        hasValidToken = true
    }
}

/// A token and the verdict on it that does not depend on time: signed by a configured key for the team
/// (with its `iat`), or not.
struct CachedToken: Sendable {
    var bytes: [UInt8] = []
    /// The token's `iat` when it is signed by a known key of the team; nil when it is invalid.
    var issuedAt: Int64?

    @inline(__always)
    func holds(_ token: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count == token.count, !bytes.isEmpty else { return false }
        return bytes.withUnsafeBytes { memcmp($0.baseAddress!, token.baseAddress!, token.count) == 0 }
    }
}

/// APNs provider-token authentication as a state machine without I/O: a request's `authorization`
/// header, the connection's state and the time in, nil (accepted) or the reason APNs answers out.
///
/// - no header, an empty one, one without the bearer scheme (`basic …`), or `bearer` with no token
///   after it → 403 MissingProviderToken (Apple: "no provider token was specified");
/// - a token that does not parse, `alg` other than ES256, a `kid` no `--apns-key` has, an `iss` other
///   than `--apns-team`, a signature that is neither r ‖ s nor strict DER, or is not the key's → 403
///   InvalidProviderToken;
/// - `iat` more than ``APNsAuthConfiguration/tokenLifetimeSeconds`` ago → 403 ExpiredProviderToken;
/// - a new valid token less than ``APNsAuthConfiguration/tokenUpdateIntervalNanos`` after the
///   connection's previous change → 429 TooManyProviderTokenUpdates (replacing an expired token is
///   always allowed).
///
/// Each distinct token is parsed and its signature checked once per connection; the verdict is cached
/// in the connection's state, so a request with the token in force costs one comparison and allocates
/// nothing.
///
/// ```swift
/// let auth = ProviderTokenAuthenticator(configuration.auth)
/// var state = auth.newConnection()
/// auth.check(request.authorization, &state, now: now, wallSeconds: seconds)   // nil or .invalidProviderToken, …
/// ```
struct ProviderTokenAuthenticator: Sendable {
    /// Tokens longer than this are answered InvalidProviderToken unread (an APNs token is ~200 bytes).
    static let maxTokenLength = 2048
    private let keys: [APNsProviderKey]
    private let teamID: String
    private let updateIntervalNanos: UInt64
    private let lifetimeSeconds: Int64

    /// An authenticator for `configuration`'s keys, team and intervals.
    init(_ configuration: APNsAuthConfiguration) {
        keys = configuration.keys
        teamID = configuration.teamID ?? ""
        updateIntervalNanos = configuration.tokenUpdateIntervalNanos
        lifetimeSeconds = configuration.tokenLifetimeSeconds
    }

    /// The state of a new connection.
    func newConnection() -> ProviderTokenConnectionState {
        ProviderTokenConnectionState(reserving: Self.maxTokenLength)
    }

    /// The reason to refuse a request whose `authorization` header is `authorization`, or nil to accept
    /// it. `now` is the monotonic time (ns) and `wallSeconds` the wall clock (seconds since the epoch)
    /// of the request.
    @inline(__always)
    func check(_ authorization: UnsafeRawBufferPointer?, _ state: inout ProviderTokenConnectionState,
                      now: UInt64, wallSeconds: Int64) -> APNsReason? {
        guard let header = authorization, let token = Self.bearerToken(header) else { return .missingProviderToken }
        if state.current.holds(token) {
            return isExpired(state.current.issuedAt!, wallSeconds) ? .expiredProviderToken : nil
        }
        if !state.candidate.holds(token) {
            guard token.count <= Self.maxTokenLength else { return .invalidProviderToken }
            state.candidate.bytes.removeAll(keepingCapacity: true)
            state.candidate.bytes.append(contentsOf: token)
            state.candidate.issuedAt = verify(token)
        }
        guard let issuedAt = state.candidate.issuedAt else { return .invalidProviderToken }
        if isExpired(issuedAt, wallSeconds) { return .expiredProviderToken }
        if state.hasValidToken, now &- state.changedAt < updateIntervalNanos,
           !isExpired(state.current.issuedAt!, wallSeconds) {
            return .tooManyProviderTokenUpdates
        }
        state.adopt(now: now)
        return nil
    }

    @inline(__always)
    private func isExpired(_ issuedAt: Int64, _ wallSeconds: Int64) -> Bool {
        wallSeconds - issuedAt > lifetimeSeconds
    }

    /// The token's `iat` when it is signed by a configured key and names the team; nil otherwise. Parses
    /// and allocates: called once per distinct token per connection.
    func verify(_ token: UnsafeRawBufferPointer) -> Int64? {
        guard case .success(let parsed) = ProviderToken.parse(token), parsed.teamID == teamID,
              let key = keys.first(where: { $0.keyID == parsed.keyID }), parsed.isSigned(by: key.publicKey) else { return nil }
        return parsed.issuedAt
    }

    /// The JWT of `bearer <JWT>` (the scheme in any case, one or more spaces, trailing spaces ignored);
    /// nil when the header has no bearer scheme or no token after it.
    @inline(__always)
    static func bearerToken(_ header: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard header.count > 7 else { return nil }
        let scheme: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0x62, 0x65, 0x61, 0x72, 0x65, 0x72)  // "bearer"
        guard header[0] | 0x20 == scheme.0, header[1] | 0x20 == scheme.1, header[2] | 0x20 == scheme.2,
              header[3] | 0x20 == scheme.3, header[4] | 0x20 == scheme.4, header[5] | 0x20 == scheme.5,
              header[6] == 0x20 else { return nil }
        var start = 7
        var end = header.count
        while start < end && header[start] == 0x20 { start += 1 }
        while end > start && header[end - 1] == 0x20 { end -= 1 }
        guard start < end else { return nil }
        return UnsafeRawBufferPointer(rebasing: header[start..<end])
    }
}
