import Foundation
import PushMetrics
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `pushbench dashboard` over local agents, as a distributed run is watched: three `pushbench run
/// --dashboard` processes sharing `--start-at` against one gateway, the dashboard following them. Its
/// merged p99 of each second equals that second's p99 in the merged run folder (`pushbench merge` of
/// the agents' folders); an agent killed mid-run is named missing in the seconds after.
@Suite(.serialized) struct DashboardAgentsTests {
    typealias Child = DashboardBrowserTests.Child

    /// `pushbench args`, its output to files in `dir`.
    static func pushbench(_ args: [String], in dir: URL, name: String) throws -> Child {
        try Child(try #require(PushbenchBinary.url, "build pushbench first (swift build --build-tests)"), args, in: dir, name: name)
    }

    /// Unix seconds with milliseconds, `offset` seconds from now.
    static func startAt(_ offset: Double) -> String {
        String(format: "%.3f", Date().timeIntervalSince1970 + offset)
    }

    /// The merged seconds the dashboard printed (`--ndjson`), by second.
    static func printed(_ dashboard: Child) -> [Int: LiveSecond] {
        var out: [Int: LiveSecond] = [:]
        for line in dashboard.stdout.split(separator: "\n") {
            if let s = try? LiveSecond.parse(line: String(line)) { out[s.interval.second] = s }
        }
        return out
    }

    /// Polls `condition` every 100 ms for at most `seconds`.
    static func eventually(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let until = Date().addingTimeInterval(seconds)
        while Date() < until {
            if condition() { return true }
            usleep(100_000)
        }
        return condition()
    }

    /// The body of a GET (curl), failing the test on anything but 200.
    static func get(_ url: String) throws -> String {
        let r = try PushbenchBinary.run(["-sS", "--fail", "--max-time", "5", url], executable: URL(fileURLWithPath: "/usr/bin/curl"))
        #expect(r.status == 0, "GET \(url): \(r.err)")
        return r.out
    }

    /// timeline.csv's rows, each its numeric columns by name.
    static func timeline(_ url: URL) throws -> [[String: Int64]] {
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        let names = try #require(lines.first).map(String.init)
        return lines.dropFirst().map { fields in
            var row: [String: Int64] = [:]
            for (name, value) in zip(names, fields) { row[name] = Int64(value) }
            return row
        }
    }

    static func agentArgs(_ i: Int, of n: Int, gateway: String, rps: Int, duration: String, start: String, port: Int, out: URL) -> [String] {
        ["run", "--target", gateway, "--rps", "\(rps)", "--duration", duration, "--segment", "\(i)/\(n)", "--start-at", start,
         "--warmup", "0s", "--connections", "1", "--dashboard", "127.0.0.1:\(port)", "--dashboard-linger", "5s",
         "--label", "agent-\(i)", "--out", out.appendingPathComponent("agent-\(i)").path, "--quiet"]
    }

    @Test func theMergedLiveP99OfEachSecondIsTheMergedRunFoldersP99() throws {
        let gateway = try LoopbackGatewayProcess()
        defer { gateway.stop() }
        let dir = PushbenchBinary.tempDir("pushbench-dashboard")
        defer { try? FileManager.default.removeItem(at: dir) }
        let ports = (0..<3).map { _ in PipelineServiceTests.freePort() }
        let start = Self.startAt(3)
        var agents: [Child] = []
        defer { for a in agents { a.kill() } }
        for i in 0..<3 {
            agents.append(try Self.pushbench(Self.agentArgs(i, of: 3, gateway: gateway.url, rps: 900, duration: "4s", start: start, port: ports[i], out: dir),
                                    in: dir, name: "agent-\(i)"))
        }
        let listen = PipelineServiceTests.freePort()
        let dashboard = try Self.pushbench(["dashboard"] + ports.map { "http://127.0.0.1:\($0)" }
                                  + ["--listen", "127.0.0.1:\(listen)", "--wait", "10s", "--ndjson", "--quiet", "--dashboard-linger", "30s"],
                                  in: dir, name: "dashboard")
        defer { dashboard.kill() }
        // A dashboard can follow dashboards: this one follows the first as its one agent.
        let outer = try Self.pushbench(["dashboard", "http://127.0.0.1:\(listen)", "--listen", "127.0.0.1:0", "--ndjson", "--quiet"],
                                       in: dir, name: "outer")
        defer { outer.kill() }
        for (i, a) in agents.enumerated() {
            #expect(a.wait(40), "agent \(i) did not end")
            #expect(a.process.terminationStatus == 0, "agent \(i): \(a.stderr)")
        }
        // Every agent said it is done: the dashboard merged its last second and says so.
        #expect(Self.eventually(15) { dashboard.stderr.contains(" merged seconds, 3 of 3 agents done") }, "\(dashboard.stderr)")
        #expect(dashboard.process.isRunning, "it keeps serving the final page for --dashboard-linger")
        // The merged seconds as a viewer (or another dashboard) reads them: GET /seconds, and /state done.
        let served = try Self.get("http://127.0.0.1:\(listen)/seconds?after=-1")
        var live: [Int: LiveSecond] = [:]
        for line in served.split(separator: "\n") {
            let s = try LiveSecond.parse(line: String(line))
            live[s.interval.second] = s
            #expect(line.contains("\"p99_us\":\(s.interval.latency.decode().valueAtPercentile(99)),"), "the page's figure is the histogram's")
        }
        #expect(live == Self.printed(dashboard), "--ndjson prints what /seconds serves")
        // The outer dashboard ends once the first says it is done, with the same seconds, bucket for bucket.
        #expect(outer.wait(15) && outer.process.terminationStatus == 0, "\(outer.stderr)")
        let outerSeconds = Self.printed(outer)
        #expect(outerSeconds.keys.sorted() == live.keys.sorted())
        #expect(outerSeconds.allSatisfy { k, s in s.interval.latency.decode().valueAtPercentile(99) == live[k]?.interval.latency.decode().valueAtPercentile(99)
                                          && s.interval.completed == live[k]?.interval.completed && s.agents == 1 })
        let state = try #require(try JSONSerialization.jsonObject(with: Data(try Self.get("http://127.0.0.1:\(listen)/state").utf8)) as? [String: Any])
        #expect(state["done"] as? Bool == true && state["kind"] as? String == "dashboard" && state["label"] as? String == "3 agents", "\(state)")

        let merge = try PushbenchBinary.run(["merge"] + (0..<3).map { dir.appendingPathComponent("agent-\($0)/latest").path }
                                            + ["--out", dir.appendingPathComponent("merged").path])
        #expect(merge.status == 0, "\(merge.err)")
        let rows = try Self.timeline(dir.appendingPathComponent("merged/timeline.csv"))
        let agentRows = try (0..<3).map { try Self.timeline(dir.appendingPathComponent("agent-\($0)/latest/timeline.csv")) }
        var compared = 0
        for row in rows where row["completed"] ?? 0 > 0 {
            let second = Int(row["second"] ?? -1)
            let s = try #require(live[second], "second \(second) of the merged folder is not on the dashboard: \(live.keys.sorted())")
            // Every agent that has the second in its own folder is in it (an agent's last answers may
            // fall in one more second than another's), and nobody is missing.
            let having = agentRows.filter { rows in rows.contains { $0["second"] == Int64(second) } }.count
            #expect(s.agents == Int64(having) && s.missingAgents == [], "second \(second): \(s.jsonLine().prefix(200))")
            #expect(s.interval.completed == row["completed"] && s.interval.sent == row["sent"], "second \(second)")
            let h = s.interval.latency.decode()
            #expect(h.valueAtPercentile(99) == row["p99_us"], "second \(second): the dashboard's p99 is the merged folder's")
            #expect(h.valueAtPercentile(50) == row["p50_us"], "second \(second)")
            compared += 1
        }
        #expect(compared >= 3, "\(rows.count) rows, \(live.count) live seconds")
        // The merged histograms are the merged folder's, bucket for bucket: the whole run's p99.9 agrees too.
        let log = try IntervalLog.parse(String(contentsOf: dir.appendingPathComponent("merged/latency.hlog"), encoding: .utf8))
        let folderWhole = HdrHistogram.latencyMicroseconds(), liveWhole = HdrHistogram.latencyMicroseconds()
        for i in log.intervals { folderWhole.add(i.histogram.decode()) }
        for s in live.values { liveWhole.add(s.interval.latency.decode()) }
        #expect(liveWhole.totalCount == folderWhole.totalCount)
        #expect(liveWhole.valueAtPercentile(99.9) == folderWhole.valueAtPercentile(99.9))
    }

    /// Before any agent answers the dashboard serves its page and state; a stop signal ends it, status 0,
    /// saying what it merged and who never answered.
    @Test func aStopSignalEndsTheDashboardSayingWhoNeverAnswered() throws {
        let dir = PushbenchBinary.tempDir("pushbench-dashboard")
        defer { try? FileManager.default.removeItem(at: dir) }
        let dashboard = try Self.pushbench(["dashboard", "http://127.0.0.1:9", "--listen", "127.0.0.1:0"], in: dir, name: "dashboard")
        defer { dashboard.kill() }
        let port = try DashboardBrowserTests.dashboardPort(dashboard)
        let state = try #require(try JSONSerialization.jsonObject(with: Data(try Self.get("http://127.0.0.1:\(port)/state").utf8)) as? [String: Any])
        #expect(state["kind"] as? String == "dashboard" && state["done"] as? Bool == false && state["label"] as? String == "1 agent")
        #expect(try Self.get("http://127.0.0.1:\(port)/").contains("<html"))
        #expect(try Self.get("http://127.0.0.1:\(port)/seconds?after=-1").isEmpty)
        #expect(Self.eventually(10) { dashboard.stderr.contains("pushbench dashboard: agent 127.0.0.1:9 does not answer: ") }, "\(dashboard.stderr)")
        kill(dashboard.process.processIdentifier, SIGINT)
        #expect(dashboard.wait(10), "a stop signal ends it")
        #expect(dashboard.process.terminationStatus == 0)
        #expect(dashboard.stderr.contains("pushbench dashboard: 0 merged seconds, 0 of 1 agents done; not answering: 127.0.0.1:9 (stopped by a signal)\n"),
                "\(dashboard.stderr)")
    }

    @Test func anAgentKilledMidRunIsNamedMissingInTheSecondsAfter() throws {
        let gateway = try LoopbackGatewayProcess()
        defer { gateway.stop() }
        let dir = PushbenchBinary.tempDir("pushbench-dashboard")
        defer { try? FileManager.default.removeItem(at: dir) }
        let ports = (0..<2).map { _ in PipelineServiceTests.freePort() }
        let start = Self.startAt(3)
        let agents = try (0..<2).map { i in
            try Self.pushbench(Self.agentArgs(i, of: 2, gateway: gateway.url, rps: 400, duration: "6s", start: start, port: ports[i], out: dir),
                      in: dir, name: "agent-\(i)")
        }
        defer { for a in agents { a.kill() } }
        let dashboard = try Self.pushbench(["dashboard", "http://127.0.0.1:\(ports[0])", "http://127.0.0.1:\(ports[1])",
                                   "--listen", "127.0.0.1:\(PipelineServiceTests.freePort())", "--wait", "3s", "--give-up", "2s", "--ndjson"],
                                  in: dir, name: "dashboard")
        defer { dashboard.kill() }
        let name = "127.0.0.1:\(ports[1])"
        // Two whole seconds first, then agent 1 dies.
        #expect(Self.eventually(20) { Self.printed(dashboard).values.filter { $0.agents == 2 }.count >= 2 }, "\(dashboard.stderr)")
        agents[1].kill()
        #expect(agents[0].wait(30) && agents[0].process.terminationStatus == 0, "\(agents[0].stderr)")
        // Agent 0's seconds after the kill go out after the wait, agent 1 named in each.
        #expect(Self.eventually(10) { Self.printed(dashboard).values.contains { $0.interval.second >= 5 } }, "\(dashboard.stderr)")
        let live = Self.printed(dashboard)
        let after = live.values.filter { $0.missingAgents == [name] }
        #expect(!after.isEmpty, "\(live.values.map { "\($0.interval.second): \($0.missingAgents ?? [])" })")
        #expect(after.allSatisfy { $0.agents == 1 && $0.interval.completed > 0 })
        let firstMissing = after.map(\.interval.second).min() ?? 0
        #expect(live.values.filter { $0.interval.second > firstMissing }.allSatisfy { $0.missingAgents == [name] },
                "once gone, missing in every second after")
        #expect(live.values.filter { $0.interval.second < firstMissing }.allSatisfy { $0.agents == 2 && $0.missingAgents == [] })
        #expect(dashboard.stderr.contains("pushbench dashboard: agent \(name) does not answer: "), "\(dashboard.stderr)")
        #expect(dashboard.stderr.contains("; missing: \(name)"), "the line of a second names it")
        // It never said it is done: once agent 0 is done and agent 1 has been silent for --give-up, the
        // dashboard ends without it, naming it.
        #expect(dashboard.wait(20) && dashboard.process.terminationStatus == 0, "\(dashboard.stderr)")
        #expect(dashboard.stderr.contains("pushbench dashboard: agent \(name) has not answered for 2s and every other agent is done: giving up on it"),
                "\(dashboard.stderr)")
        #expect(dashboard.stderr.contains(" merged seconds, 1 of 2 agents done; not answering: \(name); ended without: \(name); seconds missing: \(name) "),
                "\(dashboard.stderr)")
    }
}
