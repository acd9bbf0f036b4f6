import PushTransport

/// The gateway on an event loop the caller owns and runs (single-thread tools, benchmarks, tests).
/// Loop-confined like everything on an `EventLoop`; `EmbeddedGateway` is the usual way to run one.
///
/// ```swift
/// let loop = try EventLoop()
/// let gateway = try GatewayLoopHandler(loop: loop, configuration: GatewayConfiguration())
/// let port = try gateway.listen(host: "127.0.0.1", port: 0)
/// loop.run()
/// ```
public final class GatewayLoopHandler {
    private let gateway: GatewayLoop
    private let server: HTTP2Server
    /// This loop's counters.
    let counters: GatewayCounters

    /// A gateway on `loop` with `configuration`'s behaviours (its host, port and thread count are not used).
    public init(loop: EventLoop, configuration: GatewayConfiguration, counters: GatewayCounters = GatewayCounters()) throws {
        self.counters = counters
        gateway = GatewayLoop(loop: loop, machine: GatewayStateMachine(configuration: configuration, counters: counters),
                              allCounters: [counters])
        server = HTTP2Server(loop: loop, configuration: GatewayLoop.serverConfiguration(configuration, reusePort: false,
                                                                                      connectionCap: configuration.maxConnections.map(ConnectionCap.init)),
                             delegate: gateway)
        gateway.server = server
    }

    /// Listens on `host:port` (0 picks a free port); returns the port.
    public func listen(host: String, port: Int) throws -> Int { try server.listen(host: host, port: port) }

    /// Serves one connection over `transport`, one end of an `InMemoryTransport` pair (no socket).
    func accept(_ transport: InMemoryTransport) { server.accept(transport) }

    /// Connections open now.
    public var connectionsOpen: Int { server.connectionsOpen }

    /// This loop's numbers.
    public func stats() -> GatewayStats { GatewayStats(summing: [counters]) }

    /// Graceful shutdown: GOAWAY, the streams in flight finish; `done` runs when every connection closed.
    func shutdownGracefully(_ done: (() -> Void)? = nil) { server.shutdownGracefully(done) }

    /// Closes the listener and every connection now, and drops the responses still held back.
    public func close() {
        server.close()
        gateway.tearDown()
    }
}

@available(*, unavailable) extension GatewayLoopHandler: Sendable {}
