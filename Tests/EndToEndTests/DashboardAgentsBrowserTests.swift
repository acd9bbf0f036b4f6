import Foundation
import PushMetrics
import Testing

extension DashboardAgentsTests {
    /// `pushbench dashboard` over three local agents in a real browser (the harness of
    /// ``DashboardBrowserTests``): seconds arrive one after another, each shows every agent and nobody
    /// missing, the p99 of the last second on the page is that second's p99 in the merged run folder,
    /// and the final figures are the merged folder's seconds added up; no console error, a screenshot kept.
    @Test func threeAgentsAreWatchedAsOneRunInChromium() throws {
        let gateway = try LoopbackGatewayProcess()
        defer { gateway.stop() }
        let dir = PushbenchBinary.tempDir("pushbench-dashboard")
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("dashboard_browser.py")
        try dashboardBrowserSource.write(to: script, atomically: true, encoding: .utf8)
        // The browser first (its start is the slow part), then the agents and the dashboard.
        let browser = try Child(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, dir.path, "run", "90"], in: dir, name: "browser")
        defer { browser.kill() }
        let ready = dir.appendingPathComponent("ready")
        for _ in 0..<1200 where !FileManager.default.fileExists(atPath: ready.path) && browser.process.isRunning { usleep(100_000) }
        try #require(FileManager.default.fileExists(atPath: ready.path), "the browser did not start: \(browser.stderr)")

        let ports = (0..<3).map { _ in PipelineServiceTests.freePort() }
        let start = Self.startAt(3)
        var agents: [Child] = []
        defer { for a in agents { a.kill() } }
        for i in 0..<3 {
            agents.append(try Self.pushbench(Self.agentArgs(i, of: 3, gateway: gateway.url, rps: 600, duration: "6s", start: start,
                                                            port: ports[i], out: dir), in: dir, name: "agent-\(i)"))
        }
        let dashboard = try Self.pushbench(["dashboard"] + ports.map { "http://127.0.0.1:\($0)" }
                                           + ["--listen", "127.0.0.1:0", "--wait", "10s", "--dashboard-linger", "2m"],
                                           in: dir, name: "dashboard")
        defer { dashboard.kill() }
        let port = try DashboardBrowserTests.dashboardPort(dashboard)
        try "http://127.0.0.1:\(port)/\n".write(to: dir.appendingPathComponent("url"), atomically: true, encoding: .utf8)

        #expect(browser.wait(120), "the browser script did not end: \(browser.stderr)")
        #expect(browser.process.terminationStatus == 0, "\(browser.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(browser.stdout.utf8)) as? [String: Any],
                                  "browser said: \(browser.stdout) \(browser.stderr)")
        for (i, a) in agents.enumerated() {
            #expect(a.wait(30) && a.process.terminationStatus == 0, "agent \(i): \(a.stderr)")
        }
        #expect(dashboard.process.isRunning, "it keeps serving the final page: \(dashboard.stderr)")
        #expect(report["done"] as? Bool == true, "the page shows the final figures once every agent is done")
        let seen = (report["seen"] as? [String] ?? []).compactMap(Int.init)
        #expect(zip(seen, seen.dropFirst()).filter { $0.1 == $0.0 + 1 }.count >= 2, "seconds seen on the page: \(seen)")

        let merge = try PushbenchBinary.run(["merge"] + (0..<3).map { dir.appendingPathComponent("agent-\($0)/latest").path }
                                            + ["--out", dir.appendingPathComponent("merged").path])
        #expect(merge.status == 0, "\(merge.err)")
        let rows = try Self.timeline(dir.appendingPathComponent("merged/timeline.csv"))
        let texts = report["texts"] as? [String: Any] ?? [:]
        let text = { (id: String) in texts[id] as? String }
        // The last second on the page is the merged folder's, p99 and all.
        let last = try #require(text("last-second").flatMap { Int($0) }, "no second on the page: \(texts)")
        let row = try #require(rows.first { $0["second"] == Int64(last) }, "second \(last) is not in the merged folder")
        #expect(DashboardBrowserTests.digits(text("last-p99")).map(Int64.init) == row["p99_us"], "\(text("last-p99") ?? "none") vs \(row)")
        #expect(DashboardBrowserTests.digits(text("last-completed")).map(Int64.init) == row["completed"])
        #expect(text("last-missing") == "none", "\(texts)")
        let agentsRows = try (0..<3).map { try Self.timeline(dir.appendingPathComponent("agent-\($0)/latest/timeline.csv")) }
        let having = agentsRows.filter { rows in rows.contains { $0["second"] == Int64(last) } }.count
        #expect(text("last-agents") == "\(having) of \(having)")
        // The final figures: every merged second added, the folder's seconds added the same way.
        let log = try IntervalLog.parse(String(contentsOf: dir.appendingPathComponent("merged/latency.hlog"), encoding: .utf8))
        let whole = HdrHistogram.latencyMicroseconds()
        for i in log.intervals { whole.add(i.histogram.decode()) }
        #expect(DashboardBrowserTests.digits(text("final-p99")) == Int(whole.valueAtPercentile(99)), "\(text("final-p99") ?? "none")")
        #expect(DashboardBrowserTests.digits(text("final-max")) == Int(whole.max))
        #expect(DashboardBrowserTests.digits(text("final-sent")).map(Int64.init) == rows.compactMap { $0["sent"] }.reduce(0, +))
        let console = report["console"] as? [[String: Any]] ?? [[:]]
        #expect(console.filter { ($0["level"] as? String) == "SEVERE" }.isEmpty, "console: \(console)")

        try FileManager.default.createDirectory(at: DashboardBrowserTests.artifacts, withIntermediateDirectories: true)
        let kept = DashboardBrowserTests.artifacts.appendingPathComponent("dashboard-agents.png")
        try? FileManager.default.removeItem(at: kept)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: try #require(report["screenshot"] as? String)), to: kept)
        print("agents dashboard screenshot: \(kept.path)")
    }
}
