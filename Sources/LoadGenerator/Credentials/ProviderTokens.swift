#if canImport(Glibc)
import Glibc
#endif
import PushCredentials
import PushTransport

/// How a run authenticates to APNs with provider tokens (`--auth-key`, `--key-id`, `--team-id`): the
/// key, its ids, how often a new token is signed, and the first token, signed when the settings are
/// made (so a key that cannot sign is an error before any traffic). Every driver starts from that one
/// token; each re-signs on the same schedule.
///
/// ```swift
/// let key = try ES256PrivateKey(contentsOfFile: "AuthKey_ABC123DEFG.p8")
/// config.providerTokens = try ProviderTokenSettings(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ",
///                                                   keyFile: "AuthKey_ABC123DEFG.p8")
/// ```
public struct ProviderTokenSettings: Sendable, Equatable {
    /// A new token every 50 minutes, as Pushy does: inside APNs' hour, and well over its 20-minute floor.
    public static let defaultRefreshNanos: UInt64 = 50 * 60 * 1_000_000_000
    /// The signing key.
    public let key: ES256PrivateKey
    /// `kid`.
    public let keyID: String
    /// `iss`.
    public let teamID: String
    /// Where the key came from (reported; never its contents).
    public let keyFile: String
    /// Time between two tokens, ns.
    public let refreshIntervalNanos: UInt64
    /// `bearer <first token>`.
    let firstHeader: [UInt8]
    /// Monotonic time (ns) the first token was signed.
    let firstSignedAt: UInt64

    /// Settings that sign with `key`; signs the first token now.
    public init(key: ES256PrivateKey, keyID: String, teamID: String, keyFile: String,
                refreshIntervalNanos: UInt64 = defaultRefreshNanos) throws(CredentialError) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.keyFile = keyFile
        self.refreshIntervalNanos = max(refreshIntervalNanos, 1_000_000)
        firstSignedAt = EventLoop.nowNanoseconds()
        firstHeader = try Self.header(key: key, keyID: keyID, teamID: teamID)
    }

    /// Equal when they sign with the same key, ids and interval (whichever first token each signed).
    public static func == (a: ProviderTokenSettings, b: ProviderTokenSettings) -> Bool {
        a.keyID == b.keyID && a.teamID == b.teamID && a.keyFile == b.keyFile && a.refreshIntervalNanos == b.refreshIntervalNanos
            && a.key.publicKey == b.key.publicKey
    }

    /// `bearer <token>` for a token issued now.
    static func header(key: ES256PrivateKey, keyID: String, teamID: String) throws(CredentialError) -> [UInt8] {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let token = try ProviderToken.sign(keyID: keyID, teamID: teamID, issuedAt: Int64(now.tv_sec), key: key)
        return Array("bearer ".utf8) + Array(token.utf8)
    }
}

/// One driver's `authorization` header value: the token every connection of the driver sends, swapped
/// for a newly signed one when the refresh interval has passed. Reading it allocates nothing; signing
/// happens once per interval, never per request. Loop-confined.
final class ProviderTokenHeader {
    /// Room for `bearer ` and a token (APNs tokens are about 200 bytes; a key id or team id would have
    /// to be absurdly long to overflow it, and then the old token stays).
    static let capacity = 1024
    private let settings: ProviderTokenSettings
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
    private var length = 0
    private var nextRefresh: UInt64
    /// Tokens this driver signed after the first (shared) one.
    private(set) var refreshes = 0
    /// Refreshes that failed (the previous token stayed in use).
    private(set) var refreshFailures = 0

    init(settings: ProviderTokenSettings) {
        self.settings = settings
        nextRefresh = settings.firstSignedAt &+ settings.refreshIntervalNanos
        store(settings.firstHeader)
    }

    deinit { buffer.deallocate() }

    /// The header value in force.
    @inline(__always)
    var value: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[0..<length]) }

    /// Signs a new token when the interval has passed since the last one (`now`: monotonic ns).
    @inline(__always)
    func refreshIfDue(now: UInt64) {
        if now >= nextRefresh { refresh(now: now) }
    }

    @inline(never)
    private func refresh(now: UInt64) {
        nextRefresh = now &+ settings.refreshIntervalNanos
        guard let header = try? ProviderTokenSettings.header(key: settings.key, keyID: settings.keyID, teamID: settings.teamID),
              header.count <= Self.capacity else {
            refreshFailures += 1
            return
        }
        store(header)
        refreshes += 1
    }

    private func store(_ header: [UInt8]) {
        precondition(header.count <= Self.capacity, "a provider token header of \(header.count) bytes")
        buffer.copyBytes(from: header)
        length = header.count
    }
}
