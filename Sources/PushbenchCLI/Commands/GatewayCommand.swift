import Foundation
import MockGateway
import PushTransport

/// `pushbench gateway`: runs the mock APNs gateway alone until SIGINT/SIGTERM, then prints its final stats.
struct GatewayCommand: PushbenchCommand {
    static let name = "gateway"
    static let abstract = "run the mock APNs/FCM gateway alone (--listen, behaviours)"
    static let usage = """
    USAGE: pushbench gateway [options]

    Emulates the APNs provider API (POST /3/device/<token>) and FCM HTTP v1 (POST
    /v1/projects/<id>/messages:send) with its OAuth2 token endpoint (POST /token) on one port:
    HTTP/2 cleartext (prior knowledge) and HTTP/1.1 by default, TLS with --tls (a certificate
    generated at start) or --tls-cert/--tls-key, where ALPN chooses h2 or http/1.1. APNs refuses
    HTTP/1.1 as the real one does.
    Every behaviour is off by default: a valid request is answered 200 at once. GET /stats answers JSON
    counts, GET /metrics the same in Prometheus's text format. SIGINT/SIGTERM/SIGHUP: finish the streams
    in flight, GOAWAY, print the final stats, exit 0.
    It is a test double: no authentication unless an auth option is on. Listening beyond loopback
    prints a warning naming the interfaces reached.
    The same options configure the embedded gateway of a run: pushbench run --gateway-arg=--latency=2ms.
    """

    /// The gateway's own table (MockGateway/Configuration/GatewayOptions.swift), shared with `run --gateway-arg`,
    /// and the dashboard's options, which are the command's own.
    static var options: OptionTable<GatewayCommandOptions> {
        OptionTable(GatewayConfiguration.options.options.map { $0.lifted(\GatewayCommandOptions.gateway) }
                    + DashboardOptions.options(\.dashboard, \.dashboardViewers, \.dashboardLingerSeconds, what: "gateway"))
    }

    /// The validated configuration.
    let configuration: GatewayConfiguration
    /// The dashboard's options (the configuration in it is not used).
    let command: GatewayCommandOptions
    /// The gateway's options as given, which the dashboard shows as the behaviours in force.
    let given: [String]

    init(arguments a: ParsedArguments) throws(UsageError) {
        try a.expectPositionals(0...0, "nothing")
        configuration = try GatewayConfiguration.parse(a)
        var command = GatewayCommandOptions()
        try OptionTable(DashboardOptions.options(\GatewayCommandOptions.dashboard, \.dashboardViewers, \.dashboardLingerSeconds,
                                                 what: "gateway")).apply(a, to: &command)
        self.command = command
        given = a.given.filter { !$0.name.hasPrefix("--dashboard") }.map { option in
            option.value.map { "\(option.name)=\($0)" } ?? option.name
        }
    }

    func run() -> Int32 {
        var configuration = self.configuration
        if configuration.tls.generates && configuration.tls.certificateOut == nil && configuration.tls.caDirectory == nil {
            configuration.tls.certificateOut = GatewayTLS.defaultCertificateOut
        }
        let mode: String
        if !configuration.tls.isEnabled {
            mode = "h2c with prior knowledge, and HTTP/1.1"
        } else if let out = configuration.tls.certificateOut ?? configuration.tls.keptCertificateFile {
            mode = "TLS, h2 and http/1.1; a generated certificate for \(configuration.tls.generatedNames.joined(separator: ", ")): clients trust \(out)"
        } else {
            mode = "TLS, h2 and http/1.1; certificate \(configuration.tls.certificateFile ?? "-")"
        }
        let mailbox = configuration.correlatePrefix.map { CorrelationMailbox(prefix: Array($0.utf8), loops: configuration.threads) }
        configuration.mailbox = mailbox
        configuration.correlator = mailbox?.correlator
        defer { mailbox.map { printOut("pushbench gateway: correlated pushes: \($0.stop())") } }
        let descriptors = DescriptorLimit.raiseToHard()
        if let warning = ListenWarning.message(host: configuration.host, port: configuration.port,
                                                authenticated: configuration.auth.summary != nil) {
            printError("pushbench gateway: \(warning)")
        }
        let usable = GatewayConfiguration.defaultMaxConnections(descriptorLimit: descriptors)
        if let asked = configuration.maxConnections, asked > usable {
            printError("pushbench gateway: warning: --max-connections \(asked) is more than the descriptor limit (\(descriptors)) "
                       + "leaves room for (\(usable)); connections past it are closed at once (raise ulimit -n)")
        }
        let dashboard: RunDashboard?
        do throws(RunExecution.Failure) { dashboard = try startDashboard() } catch {
            printError("pushbench gateway: \(error.message)")
            return error.status
        }
        defer { dashboard?.stop() }
        var feed = GatewayDashboardFeed()
        let tick: ((GatewayStats) -> Void)? = dashboard.map { d in { stats in
            let (second, json) = feed.next(stats)
            d.publish(event: "gateway", json: json, second: second)
        } }
        do {
            let final = try EmbeddedGateway.runUntilSignalled(configuration, log: { printError("pushbench gateway: \($0)") },
                                                              tick: tick) {
                address, maxConnections in
                printOut("pushbench gateway: listening on \(address) (\(mode)); GET /stats for counts")
                if let auth = configuration.auth.summary { printOut("pushbench gateway: authentication: \(auth)") }
                printOut("pushbench gateway: at most \(maxConnections) connections (descriptor limit \(descriptors); --max-connections)")
            }
            printOut(final.json)
            if let dashboard {
                dashboard.finish(summaryJSON: final.json)
                var options = RunOptions()
                options.dashboardLingerSeconds = command.dashboardLingerSeconds
                RunExecution(options: options, dashboard: dashboard).lingerDashboard(command: "gateway")
            }
            return 0
        } catch let error as GatewayStartError where error.cannotListen {
            printError("pushbench gateway: --listen: cannot \(error.message)")
            return 2
        } catch {
            printError("pushbench gateway: \(error)")
            return 1
        }
    }
}

extension GatewayCommand {
    /// The `--dashboard` of the gateway, listening before the gateway does (exit 2 when it cannot), or nil.
    func startDashboard() throws(RunExecution.Failure) -> RunDashboard? {
        var options = RunOptions()
        options.dashboard = command.dashboard
        options.dashboardViewers = command.dashboardViewers
        options.warmupSeconds = 0
        options.requests = nil
        let behaviours = given.isEmpty ? "no behaviour: every valid request answered 200 at once" : given.joined(separator: " ")
        let dashboard = try RunExecution(options: options).startDashboard(kind: "gateway", label: behaviours, command: "gateway",
                                                                          stepSeconds: 0)
        dashboard?.measuredStart(Date())
        return dashboard
    }
}
