import Foundation
import Testing

/// `--dashboard` in a real browser: Debian's chromium, headless, driven by Selenium (scripts/setup
/// installs both; a missing browser fails these tests), opens the page of a live run, sees seconds
/// arrive, and at the end shows summary.json's figures; with no console error. The viewer limit and a
/// viewer that never reads, over raw sockets.
@Suite(.serialized) struct DashboardBrowserTests {
    /// A child process whose output goes to files (a pipe nobody reads could stall it).
    final class Child {
        let process = Process()
        let out: URL, err: URL

        init(_ executable: URL, _ arguments: [String], in folder: URL, name: String) throws {
            out = folder.appendingPathComponent("\(name).out")
            err = folder.appendingPathComponent("\(name).err")
            for f in [out, err] { _ = FileManager.default.createFile(atPath: f.path, contents: nil) }
            process.executableURL = executable
            process.arguments = arguments
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = try FileHandle(forWritingTo: err)
            try process.run()
        }

        var stdout: String { (try? String(contentsOf: out, encoding: .utf8)) ?? "" }
        var stderr: String { (try? String(contentsOf: err, encoding: .utf8)) ?? "" }

        /// Waits at most `seconds` for the exit; whether it exited.
        @discardableResult
        func wait(_ seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning && Date() < deadline { usleep(50_000) }
            return !process.isRunning
        }

        /// SIGKILL: Foundation starts children with SIGTERM blocked.
        func kill() {
            if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    /// The port of the "dashboard at http://127.0.0.1:PORT/" line, waiting at most 30 s for it.
    static func dashboardPort(_ child: Child) throws -> Int {
        for _ in 0..<300 {
            let text = child.stderr
            if let r = text.range(of: "dashboard at http://127.0.0.1:"), let end = text[r.upperBound...].firstIndex(of: "/"),
               let port = Int(text[r.upperBound..<end]) {
                return port
            }
            if !child.process.isRunning { break }
            usleep(100_000)
        }
        Issue.record("no 'dashboard at' line: \(child.stderr)")
        throw POSIXError(.ETIMEDOUT)
    }

    /// Where the screenshots are kept after the test (printed, not removed).
    static let artifacts = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-test-artifacts")

    /// The digits of a figure as the page shows it ("1,234 µs" is 1234).
    static func digits(_ text: String?) -> Int? { Int((text ?? "").filter(\.isNumber)) }

    @Test func aLiveRunIsWatchedInChromiumToItsFinalFigures() throws {
        let bin = try #require(PushbenchBinary.url)
        let folder = PushbenchBinary.tempDir("pushbench-dashboard")
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = folder.appendingPathComponent("dashboard_browser.py")
        try dashboardBrowserSource.write(to: script, atomically: true, encoding: .utf8)

        // The browser starts first (its start is the slow part), so it watches the run from its warm-up.
        let browser = try Child(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, folder.path, "run", "60"],
                                in: folder, name: "browser")
        defer { browser.kill() }
        let ready = folder.appendingPathComponent("ready")
        for _ in 0..<1200 where !FileManager.default.fileExists(atPath: ready.path) && browser.process.isRunning { usleep(100_000) }
        try #require(FileManager.default.fileExists(atPath: ready.path), "the browser did not start: \(browser.stderr)")

        let results = folder.appendingPathComponent("results")
        let run = try Child(bin, ["run", "--rps", "300", "--duration", "6s", "--warmup", "1s", "--connections", "1", "--threads", "1",
                                  "--gateway-arg=--fail=BadDeviceToken=5%",
                                  "--label", "watched", "--quiet", "--dashboard", "127.0.0.1:0", "--dashboard-linger", "2m",
                                  "--out", results.path], in: folder, name: "run")
        defer { run.kill() }
        let port = try Self.dashboardPort(run)
        try "http://127.0.0.1:\(port)/\n".write(to: folder.appendingPathComponent("url"), atomically: true, encoding: .utf8)

        #expect(browser.wait(120), "the browser script did not end: \(browser.stderr)")
        #expect(browser.process.terminationStatus == 0, "\(browser.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(browser.stdout.utf8)) as? [String: Any],
                                  "browser said: \(browser.stdout) \(browser.stderr)")
        // The run is lingering: its folder is written, its page final.
        #expect(run.process.isRunning)
        #expect(run.stderr.contains("keeps serving the final page for 2 min"))

        // Seconds arrived one after another while the page was open.
        let seen = (report["seen"] as? [String] ?? []).compactMap(Int.init)
        let successive = zip(seen, seen.dropFirst()).filter { $0.1 == $0.0 + 1 }.count
        #expect(successive >= 2, "seconds seen on the page: \(seen)")
        #expect(report["done"] as? Bool == true)

        // At the end the page shows summary.json's figures, exactly.
        let summary = try PushbenchBinary.summary(results)
        let texts = report["texts"] as? [String: Any] ?? [:]
        let text = { (id: String) in texts[id] as? String }
        let latency = summary["latency_us"] as? [String: Any] ?? [:]
        for (id, key) in [("final-p50", "p50"), ("final-p90", "p90"), ("final-p99", "p99"), ("final-p999", "p999"), ("final-max", "max")] {
            #expect(Self.digits(text(id)) == latency[key] as? Int, "\(id): \(text(id) ?? "none") vs \(latency[key] ?? "none")")
            #expect(text(id)?.hasSuffix(" µs") == true)
        }
        #expect(Self.digits(text("final-sent")) == PushbenchBinary.int(summary, "requests", "sent"))
        #expect(Self.digits(text("final-ok")) == PushbenchBinary.int(summary, "requests", "succeeded"))
        #expect(Self.digits(text("final-failed")) == PushbenchBinary.int(summary, "requests", "failed"))
        let achieved = (summary["throughput"] as? [String: Any])?["achieved_rps"] as? Double
        let shown = Double((text("final-achieved") ?? "").replacingOccurrences(of: ",", with: "").replacingOccurrences(of: " /s", with: ""))
        #expect(shown != nil && shown == achieved, "achieved: \(text("final-achieved") ?? "none") vs \(achieved ?? -1)")
        #expect(PushbenchBinary.int(summary, "requests", "sent") > 0)
        #expect((texts["charts"] as? Int ?? 0) >= 8)
        // The errors by reason, per second on the chart and in all at the end.
        let byReason = (summary["requests"] as? [String: Any])?["by_reason"] as? [String: Int] ?? [:]
        #expect((byReason["BadDeviceToken"] ?? 0) > 0)
        #expect(Self.digits(text("reason:BadDeviceToken")) == byReason["BadDeviceToken"])
        #expect((texts["series"] as? [String] ?? []).contains("BadDeviceToken"), "\(texts["series"] ?? "none")")

        let console = report["console"] as? [[String: Any]] ?? [[:]]
        #expect(console.filter { ($0["level"] as? String) == "SEVERE" }.isEmpty, "console: \(console)")

        // The screenshot outlives the test's folder.
        try FileManager.default.createDirectory(at: Self.artifacts, withIntermediateDirectories: true)
        let kept = Self.artifacts.appendingPathComponent("dashboard-run.png")
        try? FileManager.default.removeItem(at: kept)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: try #require(report["screenshot"] as? String)), to: kept)
        let size = (try FileManager.default.attributesOfItem(atPath: kept.path)[.size] as? Int) ?? 0
        #expect(size > 10_000)
        print("dashboard screenshot: \(kept.path)")
    }
}

extension DashboardBrowserTests {
    /// `pushbench gateway --dashboard` under traffic from a run: the seconds arrive, the behaviours in force
    /// are shown, and once the gateway is stopped the page shows its final stats, exactly.
    @Test func aGatewayIsWatchedInChromiumUnderTraffic() throws {
        let bin = try #require(PushbenchBinary.url)
        let folder = PushbenchBinary.tempDir("pushbench-dashboard")
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = folder.appendingPathComponent("dashboard_browser.py")
        try dashboardBrowserSource.write(to: script, atomically: true, encoding: .utf8)
        let browser = try Child(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, folder.path, "run", "90"],
                                in: folder, name: "browser")
        defer { browser.kill() }
        let ready = folder.appendingPathComponent("ready")
        for _ in 0..<1200 where !FileManager.default.fileExists(atPath: ready.path) && browser.process.isRunning { usleep(100_000) }
        try #require(FileManager.default.fileExists(atPath: ready.path), "the browser did not start: \(browser.stderr)")

        let gateway = try Child(bin, ["gateway", "--listen", "127.0.0.1:0", "--fail", "BadDeviceToken=0.1", "--latency", "1ms",
                                      "--dashboard", "127.0.0.1:0", "--dashboard-linger", "2m"], in: folder, name: "gateway")
        defer { gateway.kill() }
        let port = try Self.dashboardPort(gateway)
        var gatewayPort: Int?
        for _ in 0..<100 where gatewayPort == nil {
            let text = gateway.stdout
            if let r = text.range(of: "listening on 127.0.0.1:") {
                gatewayPort = Int(text[r.upperBound...].prefix { $0.isNumber })
            }
            if gatewayPort == nil { usleep(100_000) }
        }
        let target = try #require(gatewayPort, "\(gateway.stdout)")
        try "http://127.0.0.1:\(port)/\n".write(to: folder.appendingPathComponent("url"), atomically: true, encoding: .utf8)

        let traffic = try PushbenchBinary.run(["run", "--target", "http://127.0.0.1:\(target)", "--rps", "200", "--duration", "5s",
                                               "--warmup", "1s", "--threads", "1", "--connections", "2", "--quiet",
                                               "--out", folder.appendingPathComponent("results").path])
        #expect(traffic.status == 0, "\(traffic.err)")
        // Stopped as a user stops it; its final stats go to the page, which stays up (linger).
        kill(gateway.process.processIdentifier, SIGINT)
        #expect(browser.wait(120), "the browser script did not end: \(browser.stderr)")
        #expect(browser.process.terminationStatus == 0, "\(browser.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(browser.stdout.utf8)) as? [String: Any],
                                  "browser said: \(browser.stdout) \(browser.stderr)")
        let seen = (report["seen"] as? [String] ?? []).compactMap(Int.init)
        #expect(zip(seen, seen.dropFirst()).filter { $0.1 == $0.0 + 1 }.count >= 2, "seconds seen: \(seen)")
        #expect(report["done"] as? Bool == true)

        // The final stats the gateway printed, as the page shows them.
        let printed = try #require(gateway.stdout.split(separator: "\n").last { $0.hasPrefix("{\"requests\":") })
        let final = try #require(try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [String: Any])
        let texts = report["texts"] as? [String: Any] ?? [:]
        let requests = final["requests"] as? Int ?? -1
        #expect(requests >= 1200 && Self.digits(texts["final-requests"] as? String) == requests)
        let byReason = final["by_reason"] as? [String: Int] ?? [:]
        #expect((byReason["BadDeviceToken"] ?? 0) > 0)
        #expect(Self.digits(texts["reason:BadDeviceToken"] as? String) == byReason["BadDeviceToken"])
        let byStatus = final["by_status"] as? [String: Int] ?? [:]
        #expect(Self.digits(texts["reason:status:200"] as? String) == byStatus["200"])
        #expect((texts["gw-behaviours"] as? String ?? "").contains("--fail=BadDeviceToken=0.1 --latency=1ms"))
        #expect((texts["charts"] as? Int ?? 0) >= 6)
        let console = report["console"] as? [[String: Any]] ?? [[:]]
        #expect(console.filter { ($0["level"] as? String) == "SEVERE" }.isEmpty, "console: \(console)")

        try FileManager.default.createDirectory(at: Self.artifacts, withIntermediateDirectories: true)
        let kept = Self.artifacts.appendingPathComponent("dashboard-gateway.png")
        try? FileManager.default.removeItem(at: kept)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: try #require(report["screenshot"] as? String)), to: kept)
        print("gateway dashboard screenshot: \(kept.path)")
    }
}

extension DashboardBrowserTests {
    /// `pushbench pipeline --dashboard` through a relay (nghttpx) as the service: the run's charts and the
    /// pipeline's, and at the end the pipeline's figures of summary.json on the page.
    @Test func aPipelineIsWatchedInChromium() throws {
        let bin = try #require(PushbenchBinary.url)
        let folder = PushbenchBinary.tempDir("pushbench-dashboard")
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = folder.appendingPathComponent("dashboard_browser.py")
        try dashboardBrowserSource.write(to: script, atomically: true, encoding: .utf8)
        let egress = PipelineServiceTests.freePort()
        let relay = try PassThroughRelay(egress: egress, dir: folder, tlsFront: false, tlsBack: false)
        defer { relay.stop() }
        let request = folder.appendingPathComponent("apns.http")
        try PipelineRunTests.apnsRequest.write(to: request, atomically: true, encoding: .utf8)

        let browser = try Child(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, folder.path, "run", "60"],
                                in: folder, name: "browser")
        defer { browser.kill() }
        let ready = folder.appendingPathComponent("ready")
        for _ in 0..<1200 where !FileManager.default.fileExists(atPath: ready.path) && browser.process.isRunning { usleep(100_000) }
        try #require(FileManager.default.fileExists(atPath: ready.path), "the browser did not start: \(browser.stderr)")

        let results = folder.appendingPathComponent("results")
        let run = try Child(bin, ["pipeline", "--target", "http://127.0.0.1:\(relay.port)", "--h2c", "--request", request.path,
                                  "--egress-listen", "127.0.0.1:\(egress)", "--egress-h2c", "--rps", "300", "--duration", "6s",
                                  "--warmup", "1s", "--connections", "1", "--threads", "1", "--drain", "2s", "--quiet",
                                  "--dashboard", "127.0.0.1:0", "--dashboard-linger", "2m", "--out", results.path],
                            in: folder, name: "pipeline")
        defer { run.kill() }
        let port = try Self.dashboardPort(run)
        try "http://127.0.0.1:\(port)/\n".write(to: folder.appendingPathComponent("url"), atomically: true, encoding: .utf8)

        #expect(browser.wait(120), "the browser script did not end: \(browser.stderr)")
        #expect(browser.process.terminationStatus == 0, "\(browser.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(browser.stdout.utf8)) as? [String: Any],
                                  "browser said: \(browser.stdout) \(browser.stderr)")
        let seen = (report["seen"] as? [String] ?? []).compactMap(Int.init)
        #expect(zip(seen, seen.dropFirst()).filter { $0.1 == $0.0 + 1 }.count >= 2, "seconds seen: \(seen)")
        #expect(report["done"] as? Bool == true)

        let pipeline = try #require(try PushbenchBinary.summary(results)["pipeline"] as? [String: Any])
        let texts = report["texts"] as? [String: Any] ?? [:]
        let text = { (id: String) in texts[id] as? String }
        #expect(PushbenchBinary.int(pipeline, "expected") == 1800)
        for key in ["expected", "delivered", "lost", "duplicated"] {
            #expect(Self.digits(text("final-pl-\(key)")) == PushbenchBinary.int(pipeline, key), "\(key): \(text("final-pl-\(key)") ?? "none")")
        }
        for (id, key) in [("final-pl-p50", "p50"), ("final-pl-p99", "p99"), ("final-pl-p999", "p999"), ("final-pl-max", "max")] {
            #expect(Self.digits(text(id)) == PushbenchBinary.int(pipeline, "end_to_end_latency_us", key), "\(id): \(text(id) ?? "none")")
        }
        let charts = texts["charts"] as? Int ?? 0
        #expect(charts >= 12)
        let console = report["console"] as? [[String: Any]] ?? [[:]]
        #expect(console.filter { ($0["level"] as? String) == "SEVERE" }.isEmpty, "console: \(console)")

        try FileManager.default.createDirectory(at: Self.artifacts, withIntermediateDirectories: true)
        let kept = Self.artifacts.appendingPathComponent("dashboard-pipeline.png")
        try? FileManager.default.removeItem(at: kept)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: try #require(report["screenshot"] as? String)), to: kept)
        print("pipeline dashboard screenshot: \(kept.path)")
    }
}
