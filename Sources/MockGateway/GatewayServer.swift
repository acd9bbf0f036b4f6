/// The gateway's event loops on top of PushTransport (filled in when the transport lands).
final class GatewayServer: Sendable {
    let host: String
    let port: Int
    private let counters: [GatewayCounters]

    private init(host: String, port: Int, counters: [GatewayCounters]) {
        self.host = host
        self.port = port
        self.counters = counters
    }

    static func start(_ configuration: GatewayConfiguration) throws -> GatewayServer {
        throw GatewayStartError("the mock gateway needs PushTransport, which has not landed on this branch yet")
    }

    func stats() -> GatewayStats { GatewayStats(summing: counters) }

    func stop() -> GatewayStats { stats() }

    static func runUntilSignalled(_ configuration: GatewayConfiguration,
                                  onListening: (String) -> Void) throws -> GatewayStats {
        let server = try start(configuration)
        onListening("\(server.host):\(server.port)")
        return server.stop()
    }
}
