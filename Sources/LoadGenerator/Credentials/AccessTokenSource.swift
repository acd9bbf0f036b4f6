import Synchronization

/// The OAuth2 access token FCM requests carry (`authorization: Bearer <token>`), shared by the driver
/// threads and replaced by the run's refresher before it expires. A driver reads ``generation`` (one
/// relaxed atomic load) per request and copies the token only when it changed, so the request path
/// neither locks nor allocates.
public final class AccessTokenSource: Sendable {
    private let value: Mutex<String>
    private let counter = Atomic<UInt64>(1)

    /// A source holding `token`.
    public init(token: String) { value = Mutex(token) }

    /// Changes each time the token is replaced.
    @inline(__always) var generation: UInt64 { counter.load(ordering: .acquiring) }

    /// The token now and its generation.
    public func current() -> (token: String, generation: UInt64) {
        value.withLock { t in (t, counter.load(ordering: .acquiring)) }
    }

    /// Replaces the token.
    func update(_ token: String) {
        value.withLock { t in
            t = token
            counter.add(1, ordering: .releasing)
        }
    }
}
