import PushMetrics
import Testing
@testable import PushbenchCLI

/// `pushbench dashboard URL...`: what it accepts, and one clear line for what it does not.
@Suite struct DashboardCommandTests {
    static func parse(_ args: [String]) throws(UsageError) -> DashboardCommand {
        try DashboardCommand(arguments: ParsedArguments(args, options: DashboardCommand.options))
    }

    static func refusal(_ args: [String]) -> String? {
        do throws(UsageError) { _ = try parse(args); return nil } catch { return error.message }
    }

    @Test func agentsAndOptionsAreRead() throws {
        let c = try Self.parse(["http://10.0.0.5:8088", "http://pb-agents-1.pb-agents.bench.svc:8088/", "http://[::1]:9000",
                                "--listen", "0.0.0.0:9090", "--wait", "5s", "--dashboard-viewers", "3", "--dashboard-linger", "1m",
                                "--give-up", "90s"])
        #expect(c.agents.map(\.name) == ["10.0.0.5:8088", "pb-agents-1.pb-agents.bench.svc:8088", "[::1]:9000"])
        #expect(c.agents[2].host == "::1" && c.agents[2].port == 9000)
        #expect(c.options.listen == DashboardCommandOptions.ListenAddress(host: "0.0.0.0", port: 9090))
        #expect(c.options.wait == 5 && c.options.viewers == 3 && c.options.linger == 60 && c.options.giveUp == 90)
        let defaults = try Self.parse(["http://127.0.0.1:8088"])
        #expect(defaults.options == DashboardCommandOptions())
        #expect(defaults.options.giveUp == 10, "a silent agent is given up on 10 s after the others are done")
        #expect(defaults.options.listen == DashboardCommandOptions.ListenAddress(host: "127.0.0.1", port: 8088))
        #expect(try Self.parse(["http://127.0.0.1:1", "--listen", "9000"]).options.listen.port == 9000, "a port alone is loopback's")
    }

    @Test(arguments: [
        ([], "missing URL (one or more agents' http://HOST:PORT)"),
        (["10.0.0.5:8088"], "'10.0.0.5:8088' is not an agent's URL http://HOST:PORT"),
        (["https://10.0.0.5:8088"], "'https://10.0.0.5:8088': https is not supported (an agent's dashboard serves plain HTTP: give http://HOST:PORT)"),
        (["http://10.0.0.5"], "'http://10.0.0.5': give the port, as in http://10.0.0.5:8088"),
        (["http://10.0.0.5:0"], "'http://10.0.0.5:0': '0' is not a port (1-65535)"),
        (["http://10.0.0.5:70000"], "'http://10.0.0.5:70000': '70000' is not a port (1-65535)"),
        (["http://10.0.0.5:http"], "'http://10.0.0.5:http': 'http' is not a port (1-65535)"),
        (["http://:8088"], "'http://:8088': the host is missing"),
        (["http://::1:8088"], "'http://::1:8088': write an IPv6 address in brackets, as in http://[::1]:8088"),
        (["http://10.0.0.5:8088/seconds"],
         "'http://10.0.0.5:8088/seconds' is not an agent's URL http://HOST:PORT (no path: the dashboard asks for /seconds and /state)"),
        (["http://a:1", "http://a:1/"], "'http://a:1/': the agent a:1 is given twice"),
        (["http://a:1", "--listen", "nowhere"], "--listen: 'nowhere' is not HOST:PORT (e.g. 127.0.0.1:8080, localhost:0, :8080)"),
        (["http://a:1", "--wait", "0s"], "--wait: '0s' is out of range (above 0s, at most 10m)"),
        (["http://a:1", "--dashboard-viewers", "0"], "--dashboard-viewers: 0 is out of range (1...1000)"),
        (["http://a:1", "--give-up", "0s"], "--give-up: '0s' is out of range (above 0s, at most 24h)"),
        (["http://a:1", "--give-up", "25h"], "--give-up: '25h' is out of range (above 0s, at most 24h)"),
    ])
    func badInputIsOneLineNamingIt(_ c: ([String], String)) {
        #expect(Self.refusal(c.0) == c.1)
    }

    /// The stderr line of a merged second: counts, percentiles, and the agents that did not answer.
    @Test func theLineOfASecondNamesWhoIsMissing() {
        var m = LiveMerge(agents: ["a:1", "b:2"], wait: 1)
        let h = HdrHistogram.latencyMicroseconds()
        for v in 1...100 { h.record(Int64(v) * 100) }
        m.add(LiveSecond(interval: TimelineInterval(second: 4, sent: 100, completed: 100, succeeded: 98, failed: 2, transportErrors: 0,
                                                    latency: h, serviceTime: h, target: 100), startUnix: 100), from: 0)
        let s = m.take(now: 200)[0]
        #expect(DashboardExecution.line(s, agents: 2)
                == "second 4: 1/2 agents, 100 answered of 100 due, p50 5.00 p99 9.90 p99.9 10.01 ms, 2 errors; missing: b:2")
    }
}
