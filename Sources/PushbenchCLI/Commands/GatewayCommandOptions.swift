import MockGateway

/// `pushbench gateway`'s options: the gateway's, and the dashboard's.
struct GatewayCommandOptions: Equatable, Sendable {
    var gateway = GatewayConfiguration()
    var dashboard: MetricsAddress?
    var dashboardViewers = 8
    var dashboardLingerSeconds = 0.0
}
