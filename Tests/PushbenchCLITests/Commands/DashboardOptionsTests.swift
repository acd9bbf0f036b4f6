import CommandLineOptions
import Testing
@testable import PushbenchCLI

/// `--dashboard [HOST:]PORT` as `run` and `gateway` parse it: a port alone and `:PORT` are 127.0.0.1's,
/// a host is kept, and what is not an address is refused naming the option.
@Suite struct DashboardOptionsTests {
    private func run(_ args: [String]) throws(UsageError) -> MetricsAddress? {
        try RunCommand(arguments: ParsedArguments(args, options: RunCommand.options)).options.dashboard
    }

    private func gateway(_ args: [String]) throws(UsageError) -> MetricsAddress? {
        try GatewayCommand(arguments: ParsedArguments(args, options: GatewayCommand.options)).command.dashboard
    }

    private func refused(_ args: [String]) -> String? {
        do throws(UsageError) { _ = try run(args); return nil } catch { return error.message }
    }

    @Test func aPortAloneIsLoopbacks() throws {
        #expect(try run(["--dashboard", "8088"]) == MetricsAddress(host: "127.0.0.1", port: 8088))
        #expect(try run(["--dashboard", ":8088"]) == MetricsAddress(host: "127.0.0.1", port: 8088))
        #expect(try run(["--dashboard", "0"]) == MetricsAddress(host: "127.0.0.1", port: 0))
        #expect(try gateway(["--dashboard", "9000"]) == MetricsAddress(host: "127.0.0.1", port: 9000))
        #expect(try run(["--dashboard", "0.0.0.0:8088"]) == MetricsAddress(host: "0.0.0.0", port: 8088))
        #expect(try run(["--dashboard", "[::1]:8088"]) == MetricsAddress(host: "::1", port: 8088))
        #expect(try run([]) == nil)
    }

    @Test func whatIsNotAnAddressIsRefusedNamingTheOption() {
        for bad in ["99999", ":99999", "eighty", "8088x", "nowhere:80"] {
            let message = refused(["--dashboard", bad])
            #expect(message?.hasPrefix("--dashboard: ") == true, "\(bad): \(message ?? "accepted")")
        }
    }

    @Test func theHelpShowsTheSyntaxAndTheLingerDefault() {
        let options = DashboardOptions.options(\GatewayCommandOptions.dashboard, \.dashboardViewers, \.dashboardLingerSeconds,
                                               what: "gateway")
        let help = options.map { "\($0.name) \($0.valueName ?? "") \($0.defaultValue ?? "") \($0.help)" }
        #expect(help.contains { $0.hasPrefix("--dashboard [HOST:]PORT") && $0.contains("gateway events") })
        #expect(help.contains { $0.hasPrefix("--dashboard-linger T 0s ") })
    }
}
