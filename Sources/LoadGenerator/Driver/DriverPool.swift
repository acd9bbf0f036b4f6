import PushTransport

/// What a ``DriverThread`` needs of its connections: the ``RequestPort`` its core sends through, plus
/// connecting, counters and shutdown. ``ConnectionPool`` speaks HTTP/2 (many streams per connection),
/// ``HTTP1ConnectionPool`` HTTP/1.1 (one request in flight per connection).
protocol DriverPool: RequestPort {
    /// A pool for one driver thread; `onChange` is called when streams free up or connections change,
    /// `onResponse` (when given) instead of `onChange` for the streams responses freed: after each
    /// response (HTTP/1.1), or once at the end of a loop turn in which responses came (HTTP/2).
    init(loop: EventLoop, config: LoadConfiguration, core: DriverCore, thread: Int, onResponse: (() -> Void)?,
         onChange: @escaping () -> Void) throws
    /// Opens every connection.
    func connectAll()
    /// Ends the current send batch.
    func endBatch()
    /// Connections that connected at the first attempt, those that could not, and the first error.
    var initialConnected: Int { get }
    var initialFailed: Int { get }
    var firstError: String? { get }
    /// Connection counters.
    var stats: ConnectionStats { get }
    /// Connections connected now.
    var connectedCount: Int { get }
    /// The counters at the end of the run, the peer's stream limit as it stands then.
    var finalStats: ConnectionStats { get }
    /// Tokens pruned as gone, and whether every one was.
    var pruned: TokenSet { get }
    var tokensExhausted: Bool { get }
    /// Provider tokens signed again during the run (APNs `--auth-key`).
    var providerTokenRefreshes: Int { get }
    /// Closes every connection without reporting more to the driver.
    func closeAll()
    /// Drops the connections and timers before the loop closes.
    func release()
}

extension DriverPool {
    var finalStats: ConnectionStats { stats }
}
