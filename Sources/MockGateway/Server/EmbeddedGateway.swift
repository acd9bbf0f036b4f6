import PushTransport

/// The gateway could not start (the address is taken, a thread could not be created, …).
public struct GatewayStartError: Error, CustomStringConvertible {
    /// What failed, e.g. `listen 127.0.0.1:8080: address already in use`.
    public var message: String
    /// Whether the listening address was the problem (in use, not this machine's, not allowed): a bad
    /// `--listen`, exit status 2.
    public var cannotListen: Bool
    /// Creates an error.
    init(_ message: String, cannotListen: Bool = false) { self.message = message; self.cannotListen = cannotListen }
    /// The message.
    public var description: String { message }
}

/// The mock gateway running inside another program (the load generator starts one when the user gives no
/// `--target`): its own event-loop thread(s), listening on loopback.
///
/// ```swift
/// let config = try GatewayConfiguration.parse(gatewayArgs)     // the same flags as `pushbench gateway`
/// let gateway = try EmbeddedGateway.start(config)              // 127.0.0.1, a free port
/// let target = "http://127.0.0.1:\(gateway.port)"
/// …
/// let seen = gateway.stats()                                  // the numbers of GET /stats
/// gateway.stop()                                              // graceful; joins the threads
/// ```
public final class EmbeddedGateway: Sendable {
    /// The port the gateway listens on.
    public let port: Int
    /// The address it listens on.
    public let host: String
    /// The most connections it serves at once (`--max-connections`, or derived from the descriptor limit).
    public var maxConnections: Int { server.connectionCap.limit }
    /// Whether it serves TLS (else h2c).
    public var isTLS: Bool { server.tls != nil }
    /// The certificate a client must trust when the gateway generated its own (`--tls`): its CA's, PEM.
    public var trustedCertificatePEM: String? { server.tls?.trustedCertificatePEM }
    private let server: GatewayServer

    private init(server: GatewayServer) {
        self.server = server
        port = server.port
        host = server.host
    }

    /// Starts the gateway with `configuration`'s behaviours and thread count, listening on `host:port`
    /// (default 127.0.0.1 and a free port; the configuration's `--listen` is not used), and returns once
    /// it accepts connections.
    public static func start(_ configuration: GatewayConfiguration, host: String = "127.0.0.1",
                             port: Int = 0) throws -> EmbeddedGateway {
        var config = configuration
        config.host = host
        config.port = port
        return EmbeddedGateway(server: try GatewayServer.start(config))
    }

    /// The numbers `GET /stats` answers, summed over every event loop.
    public func stats() -> GatewayStats { server.stats() }

    /// How long the loop threads have waited for a CPU since they started, summed, in ns (see
    /// `currentThreadCPUWaitNanoseconds()`), or nil where the kernel does not keep it.
    public func cpuWaitNanoseconds() -> UInt64? {
        var sum: UInt64 = 0
        for tid in server.threadIDs {
            guard let w = threadCPUWaitNanoseconds(tid: tid) else { return nil }
            sum += w
        }
        return sum
    }

    /// ``stats()`` as the JSON `GET /stats` answers.
    func statsJSON() -> String { server.stats().json }

    /// Stops gracefully: no new streams, the streams in flight are answered, GOAWAY is sent, connections
    /// close, and the event-loop threads are joined. Returns the final numbers. Safe to call twice.
    @discardableResult
    public func stop() -> GatewayStats { server.stop() }

    /// Runs the gateway in the foreground (`pushbench gateway`) on `configuration.host:port` until SIGINT,
    /// SIGTERM or SIGHUP, then shuts down gracefully and returns the final numbers. `onListening` receives
    /// the address actually bound (`127.0.0.1:8080`) and the connection cap once connections are accepted.
    /// `log` receives lines worth logging (refused connections and why) from the loop threads; `tick`, the
    /// numbers about once a second on the calling thread while the gateway serves.
    public static func runUntilSignalled(_ configuration: GatewayConfiguration, log: (@Sendable (String) -> Void)? = nil,
                                         tick: ((GatewayStats) -> Void)? = nil,
                                         onListening: (String, Int) -> Void) throws -> GatewayStats {
        try GatewayServer.runUntilSignalled(configuration, log: log, tick: tick, onListening: onListening)
    }
}
