#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// `pushbench capacity` end to end against the embedded gateway, with steps short enough for the suite.
@Suite(.serialized) struct CapacityCommandTests {
    private func capacityFolder(_ out: URL) throws -> URL {
        let items = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasSuffix("-capacity") }
        #expect(items.count == 1, "\(items)")
        return out.appendingPathComponent(try #require(items.first))
    }

    @Test func aShortSearchWritesItsStepsTheReportAndTheChart() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["capacity", "--slo", "p99<1s", "--min", "500", "--max", "2k", "--step-duration", "300ms",
                                         "--warmup", "100ms", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("capacity: 2,000 rps with p99<1s, error_rate<1%; --max 2,000 rps held"), "\(r.out)")
        let folder = try capacityFolder(out)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("capacity.json"))) as? [String: Any])
        let steps = try #require(json["steps"] as? [[String: Any]])
        #expect(steps.map { $0["rps"] as? Int } == [500, 1_000, 2_000])
        #expect(steps.allSatisfy { $0["verdict"] as? String == "held" })
        #expect(PushbenchBinary.int(json, "answer", "rps") == 2_000)
        #expect((json["answer"] as? [String: Any])?["limited_by"] as? String == "max")
        for step in steps {
            let name = try #require(step["folder"] as? String)
            let summary = try #require(try JSONSerialization.jsonObject(
                with: Data(contentsOf: folder.appendingPathComponent(name).appendingPathComponent("summary.json"))) as? [String: Any])
            #expect(PushbenchBinary.int(summary, "config", "rps") == step["rps"] as? Int)
            #expect(PushbenchBinary.accountingHolds(summary))
            #expect(PushbenchBinary.int(summary, "warmup", "sent") > 0, "each step warms up")
        }
        let svg = try String(contentsOf: folder.appendingPathComponent("capacity.svg"), encoding: .utf8)
        #expect(svg.hasPrefix("<svg") || svg.hasPrefix("<?xml"))
        #expect(svg.contains("objective p99&lt;1s"), "the objective's line is labelled")
        #expect(svg.contains("capacity 2,000 rps"))
        let md = try String(contentsOf: folder.appendingPathComponent("capacity.md"), encoding: .utf8)
        #expect(md.contains("| 3 | 2,000 |"))
        // Each step's CPU waits, the driver's and the embedded gateway's, beside its percentiles.
        #expect(md.contains("| waited for a CPU |"))
        #expect(md.split(separator: "\n").filter { $0.hasPrefix("| ") && $0.contains(" ms, g ") && $0.contains("| d ") }.count == 3, "\(md)")
        #expect(md.contains("without `--realtime`"))
    }

    @Test func aRealtimeSearchSaysSoInItsReport() throws {
        try #require(geteuid() == 0, "SCHED_FIFO needs root (CI runs as root)")
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["capacity", "--slo", "p99<1s", "--min", "500", "--max", "500", "--step-duration", "300ms",
                                         "--warmup", "100ms", "--realtime", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        let folder = try capacityFolder(out)
        let md = try String(contentsOf: folder.appendingPathComponent("capacity.md"), encoding: .utf8)
        #expect(md.contains("they ran real-time (`--realtime`)"), "\(md)")
        let step = try #require(try FileManager.default.contentsOfDirectory(atPath: folder.path).first { $0.hasPrefix("step-") })
        let summary = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: folder.appendingPathComponent(step).appendingPathComponent("summary.json"))) as? [String: Any])
        #expect((summary["machine"] as? [String: Any])?["realtime"] as? Bool == true)
    }

    @Test func aSlowTargetStopsItAtTheObjective() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        // Every answer takes 20 ms: p99 < 5 ms never holds, not even at --min.
        let r = try PushbenchBinary.run(["capacity", "--slo", "p99<5ms", "--min", "200", "--max", "1k", "--step-duration", "300ms",
                                         "--warmup", "0s", "--gateway-arg=--latency=20ms", "--out", out.path, "--json"])
        #expect(r.status == 0, "\(r.err)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let answer = try #require(json["answer"] as? [String: Any])
        #expect(answer["rps"] is NSNull)
        #expect(answer["limited_by"] as? String == "objective")
        #expect((answer["line"] as? String)?.hasPrefix("capacity: below --min 200 rps: p99<5ms did not hold at 200 rps") == true)
        #expect(FileManager.default.fileExists(atPath: try capacityFolder(out).appendingPathComponent("capacity.svg").path))
    }

    /// `--repeat 2`: the whole search twice, each in its own folder, then each answer, the median and the
    /// spread on the terminal, in capacity.json and capacity.md, and the verdict judged at the median.
    @Test func aRepeatedSearchReportsEachAnswerTheMedianAndTheSpread() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let junit = out.appendingPathComponent("capacity-junit.xml")
        let r = try PushbenchBinary.run(["capacity", "--slo", "p99<1s", "--min", "500", "--max", "1k", "--step-duration", "300ms",
                                         "--warmup", "100ms", "--repeat", "2", "--out", out.path, "--junit", junit.path])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("search 1 of 2: capacity: 1,000 rps with p99<1s"), "\(r.out)")
        #expect(r.out.contains("search 2 of 2: capacity: 1,000 rps with p99<1s"), "\(r.out)")
        #expect(r.out.contains("capacity over 2 searches: median 1,000 rps (search 1); answers 1,000, 1,000 rps; spread 1,000-1,000 rps, 0% of the median"),
                "\(r.out)")
        let folder = try capacityFolder(out)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("capacity.json"))) as? [String: Any])
        #expect(json["repeat"] as? Int == 2)
        #expect(json["objectives"] as? [String] == ["p99<1s", "error_rate<1%"])
        #expect(PushbenchBinary.int(json, "answer", "rps") == 1_000)
        #expect(PushbenchBinary.int(json, "answer", "search") == 1)
        let stability = try #require(json["stability"] as? [String: Any])
        #expect(stability["answers_rps"] as? [Int] == [1_000, 1_000])
        #expect(stability["median_rps"] as? Int == 1_000)
        #expect(stability["spread_rps"] as? Int == 0)
        #expect((stability["spread_pct"] as? NSNumber)?.doubleValue == 0)
        let searches = try #require(json["searches"] as? [[String: Any]])
        #expect(searches.map { $0["folder"] as? String } == ["search-1", "search-2"])
        for search in searches {
            let name = try #require(search["folder"] as? String)
            let own = try #require(try JSONSerialization.jsonObject(
                with: Data(contentsOf: folder.appendingPathComponent(name).appendingPathComponent("capacity.json"))) as? [String: Any])
            #expect((own["steps"] as? [[String: Any]])?.map { $0["rps"] as? Int } == [500, 1_000], "\(name)")
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("\(name)/step-02-1000rps/summary.json").path))
            #expect(search["steps"] as? Int == 2)
        }
        let md = try String(contentsOf: folder.appendingPathComponent("capacity.md"), encoding: .utf8)
        #expect(md.contains("| 2 | 1,000 rps | --max held | 2 |"), "\(md)")
        #expect(md.contains("**capacity over 2 searches: median 1,000 rps"))
        let svg = try String(contentsOf: folder.appendingPathComponent("capacity.svg"), encoding: .utf8)
        #expect(svg.contains("median 1,000 rps of 2 searches"))
        let xml = try String(contentsOf: junit, encoding: .utf8)
        #expect(xml.contains("failures=\"0\""))
        #expect(xml.contains("capacity over 2 searches: median 1,000 rps"))
    }

    /// `--repeat 3 --json`: the repetition's capacity.json on stdout, each search's answer on stderr.
    @Test func aRepeatedSearchPrintsItsStabilityAsJSON() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["capacity", "--slo", "p99<1s", "--min", "1k", "--max", "1k", "--step-duration", "200ms",
                                         "--warmup", "0s", "--repeat", "3", "--out", out.path, "--json"])
        #expect(r.status == 0, "\(r.err)")
        for k in 1...3 { #expect(r.err.contains("search \(k) of 3: capacity: 1,000 rps with p99<1s"), "\(r.err)") }
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
        #expect(json["kind"] as? String == "capacity")
        #expect(json["repeat"] as? Int == 3)
        #expect(PushbenchBinary.int(json, "answer", "rps") == 1_000)
        #expect(PushbenchBinary.int(json, "answer", "search") == 2, "the lower middle of three equal answers is the second")
        #expect((json["stability"] as? [String: Any])?["answers_rps"] as? [Int] == [1_000, 1_000, 1_000])
        #expect((json["searches"] as? [[String: Any]])?.count == 3)
        let written = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: try capacityFolder(out).appendingPathComponent("capacity.json"))) as? [String: Any])
        #expect(written["stability"] as? NSDictionary == json["stability"] as? NSDictionary)
    }

    /// Two agents (`--segment I/2`, one `--start-at`, one `--out`) make one search: after each step they
    /// meet in the shared folder, merge their steps, and take the same next rate at the same instant.
    @Test func agentsWithSegmentsRunOneSearchTogether() throws {
        let bin = try #require(PushbenchBinary.url, "build pushbench first (swift build --build-tests)")
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        // One target for both agents: a gateway on loopback.
        let gateway = try LoopbackGatewayProcess()
        defer { gateway.stop() }

        let startAt = String(format: "%.3f", Date().timeIntervalSince1970 + 3)
        let agents = try (0..<2).map { i -> (Process, Pipe) in
            let p = Process()
            p.executableURL = bin
            p.arguments = ["capacity", "--segment", "\(i)/2", "--start-at", startAt, "--out", out.path, "--target", gateway.url,
                           "--slo", "p99<1s", "--min", "500", "--max", "1k", "--step-duration", "1s", "--warmup", "0s", "--connections", "1"]
            let pipe = Pipe()
            p.standardOutput = pipe
            p.standardError = pipe
            try p.run()
            return (p, pipe)
        }
        var outputs: [String] = []
        for (p, pipe) in agents {
            outputs.append(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
            p.waitUntilExit()
            #expect(p.terminationStatus == 0, "\(outputs.last!)")
        }
        // The same steps and the same answer on both.
        let lines = outputs.map { $0.split(separator: "\n").filter { $0.hasPrefix("  step") || $0.hasPrefix("capacity:") } }
        #expect(lines[0].count == 3 && lines[0] == lines[1], "\(outputs)")
        #expect(lines[0].last?.hasPrefix("capacity: 1,000 rps with p99<1s") == true, "\(outputs)")

        let folder = try capacityFolder(out)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("capacity.json"))) as? [String: Any])
        #expect(json["agents"] as? Int == 2)
        let steps = try #require(json["steps"] as? [[String: Any]])
        #expect(steps.map { $0["rps"] as? Int } == [500, 1_000])
        // Each step: the whole rate sent by the two agents together, merged exactly; each agent half of it.
        for step in steps {
            let rate = try #require(step["rps"] as? Int)
            #expect(step["sent"] as? Int == rate)
            let mergedFolder = try #require(step["folder"] as? String)
            #expect(mergedFolder.hasSuffix("/merged"))
            let merged = try #require(try JSONSerialization.jsonObject(
                with: Data(contentsOf: folder.appendingPathComponent(mergedFolder).appendingPathComponent("summary.json"))) as? [String: Any])
            #expect(PushbenchBinary.int(merged, "config", "agents") == 2)
            #expect((merged["segments"] as? [String: Any])?["complete"] as? Bool == true)
            let stepFolder = folder.appendingPathComponent(String(format: "step-%02d-%drps", step["step"] as? Int ?? 0, rate))
            let agent1 = try #require(try JSONSerialization.jsonObject(
                with: Data(contentsOf: stepFolder.appendingPathComponent("agent-1/summary.json"))) as? [String: Any])
            #expect(PushbenchBinary.int(agent1, "requests", "sent") == rate / 2)
            #expect(PushbenchBinary.int(agent1, "segment", "index") == 1)
        }
    }

    @Test func badObjectivesAreRefusedBeforeAnyTraffic() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        for (args, message) in [
            (["capacity"], "--slo: give at least one objective"),
            (["capacity", "--slo", "p98<5ms"], "'p98' is not a metric"),
            (["capacity", "--slo", "p99<fast"], "--slo: p99<fast: 'fast' is not a duration"),
            (["capacity", "--slo", "p99<1ms", "--rps", "5k"], "unknown option '--rps'"),
            (["capacity", "--slo", "p99<1ms", "--min", "10k", "--max", "5k"], "--max: 5000 is below --min 10000"),
            (["capacity", "--slo", "p99<1ms", "--repeat", "0"], "--repeat: 0 is out of range (1...100)"),
            (["capacity", "--slo", "p99<1ms", "--repeat", "twice"], "--repeat: 'twice' is not a whole number"),
            (["capacity", "--slo", "p99<1ms", "--segment", "0/2"], "--segment: the 2 agents of one search start together: give them all one --start-at"),
        ] {
            let r = try PushbenchBinary.run(args + ["--out", out.path])
            #expect(r.status == 2, "\(args)")
            #expect(r.err.contains(message), "\(args): \(r.err)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty)
    }
}
