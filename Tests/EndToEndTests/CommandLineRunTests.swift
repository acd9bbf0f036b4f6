import Foundation
import Testing

/// `pushbench` as a new user runs it (``PushbenchBinary``).
@Suite(.serialized) struct CommandLineRunTests {
    @Test func defaultRunWritesACompleteResultsFolder() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--rps", "2000", "--duration", "2s", "--out", out.path, "--json"])
        #expect(r.status == 0, "\(r.err)")
        let latest = out.appendingPathComponent("latest")
        for file in ["summary.json", "latency.hgrm", "latency.hlog", "timeline.csv", "report.svg"] {
            #expect(FileManager.default.fileExists(atPath: latest.appendingPathComponent(file).path), "\(file)")
        }
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("history.csv").path))
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: latest.appendingPathComponent("summary.json"))) as? [String: Any]
        let requests = try #require(summary?["requests"] as? [String: Any])
        let sent = requests["sent"] as? Int ?? -1
        #expect(sent == 4000)
        #expect(sent == (requests["completed"] as? Int ?? 0) + (requests["transport_errors"] as? Int ?? 0)
                + (requests["unfinished"] as? Int ?? 0))
        #expect((summary?["reconciliation"] as? [String: Any])?["consistent"] as? Bool == true)
        #expect((summary?["interrupted"] as? Bool) == false)
        // The default warm-up (2 s) is sent first and kept out of `requests` and the timeline.
        #expect((summary?["config"] as? [String: Any])?["warmup_s"] as? Double == 2)
        #expect(PushbenchBinary.int(summary, "warmup", "sent") == 4000)
        // The host's share of the noise, beside the percentiles.
        let machine = try #require(summary?["machine"] as? [String: Any])
        #expect((machine["cpus"] as? Int ?? 0) >= 1)
        #expect((machine["steal_ms"] as? Double ?? -1) >= 0)
        #expect((machine["driver_involuntary_switches"] as? Int ?? -1) >= 0)
        // --json: stdout is exactly summary.json.
        let printed = try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any]
        #expect(printed?["run_id"] as? String == summary?["run_id"] as? String)
        let timeline = try String(contentsOf: latest.appendingPathComponent("timeline.csv"), encoding: .utf8)
        #expect(timeline.split(separator: "\n").count >= 3)
        let timelineSent = timeline.split(separator: "\n").dropFirst().compactMap { Int($0.split(separator: ",")[1]) }
        #expect(timelineSent.reduce(0, +) == 4000, "the warm-up stays out of the timeline")
        // The host's steal per second, read from /proc/stat beside the run: known for both full seconds.
        let rows = timeline.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        let steal = try #require(rows[0].firstIndex(of: "steal_ms"))
        for row in rows.dropFirst().prefix(2) { #expect(Int(row[steal]) != nil, "\(row)") }
        // The schedule's target beside what was sent: 2000 in each whole second.
        #expect(rows[0].last == "target")
        for row in rows.dropFirst().prefix(2) { #expect(row.last == "2000", "\(row)") }
    }

    /// `max_rss_bytes` is pushbench's own peak, not its parent's: started by a 300 MiB parent through
    /// vfork (Python's subprocess, Foundation's Process), `ru_maxrss` reported the parent's 300 MiB.
    @Test func theReportedPeakMemoryIsTheRunsOwnNotItsParents() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let bin = try #require(PushbenchBinary.url)
        let parent = "import subprocess, sys\nheld = bytearray(300 << 20)\nfor i in range(0, len(held), 4096): held[i] = 1\n"
            + "sys.exit(subprocess.run(sys.argv[1:]).returncode)"
        let r = try PushbenchBinary.run(["python3", "-c", parent, bin.path, "--rps", "100", "--duration", "1s", "--warmup", "0s",
                                         "--out", out.path, "--quiet"], executable: URL(fileURLWithPath: "/usr/bin/env"))
        #expect(r.status == 0, "\(r.err)")
        let rss = PushbenchBinary.int(try PushbenchBinary.summary(out), "max_rss_bytes")
        #expect(rss > 1 << 20 && rss < 200 << 20, "max_rss_bytes \(rss)")
    }

    @Test func aStagedRunSendsTheIntegralAndWritesTheTargetEachSecond() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        // 0 → 1k rps in 1 s (500 requests), then up to 3k in 1 s (2000): 2500, no warm-up (it starts from 0).
        let r = try PushbenchBinary.run(["--stages", "1s:1k,1s:3k", "--out", out.path, "--quiet"])
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.int(s, "requests", "sent") == 2_500)
        #expect(PushbenchBinary.int(s, "warmup", "sent") == 0)
        #expect(PushbenchBinary.int(s, "config", "schedule", "requests") == 2_500)
        #expect(PushbenchBinary.int(s, "config", "rps") == 1_250, "the contract's rps is the schedule's mean")
        #expect(PushbenchBinary.accountingHolds(s))
        let timeline = try String(contentsOf: out.appendingPathComponent("latest/timeline.csv"), encoding: .utf8)
        let rows = timeline.split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        #expect(rows.prefix(2).map { String($0.last!) } == ["500", "2000"])
        #expect(rows.compactMap { Int($0.last!) }.reduce(0, +) == 2_500)
        let svg = try String(contentsOf: out.appendingPathComponent("latest/report.svg"), encoding: .utf8)
        #expect(svg.contains("target / s (the schedule)"))
    }

    @Test func theEndSummaryShowsTheHostsShareBesideThePercentiles() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--rps", "500", "--duration", "500ms", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("  latency    p50 "))
        // Linux has /proc/stat: the steal line is there, after the percentiles.
        let latency = try #require(r.out.range(of: "  latency    p50 "))
        let machine = try #require(r.out.range(of: "  machine    steal "))
        #expect(latency.lowerBound < machine.lowerBound)
        #expect(r.out.contains("driver preemptions "))
        // The default 2 s warm-up: its progress lines say so, and the end summary counts it apart.
        #expect(r.out.contains("1.0s warm-up  sent "), "\(r.out)")
        #expect(r.out.contains("  warm-up    sent 1000  ok 1000 in the first 2.0 s"), "\(r.out)")
    }

    @Test func badInputExitsTwoBeforeAnyTraffic() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let template = dir.appendingPathComponent("payload.json")
        try Data("{\"aps\": {\"alert\": \"hi\",}\n}".utf8).write(to: template)
        let r = try PushbenchBinary.run(["--payload", template.path, "--duration", "1s", "--out", dir.path, "--quiet"])
        #expect(r.status == 2)
        #expect(r.err.contains("payload.json:1:"))
        let tokens = dir.appendingPathComponent("tokens.txt")
        try Data("abcd\nnot-hex\n".utf8).write(to: tokens)
        let t = try PushbenchBinary.run(["--tokens", tokens.path, "--duration", "1s", "--out", dir.path, "--quiet"])
        #expect(t.status == 2)
        #expect(t.err.contains("tokens.txt:"))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("latest").path))
    }

    @Test func aTemplateOverTheSizeLimitIsRefusedBeforeAnyTrafficUnlessAskedToSendIt() throws {
        // `{"aps":{"alert":"x{{pad:5000}}"}}` once ran, sent nothing and exited 0 with "throughput 0.0 rps".
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let template = dir.appendingPathComponent("big.json")
        try Data(#"{"aps":{"alert":"x{{pad:5000}}"}}"#.utf8).write(to: template)
        let refused = try PushbenchBinary.run(["--payload", template.path, "--rps", "200", "--duration", "1s", "--out", dir.path])
        #expect(refused.status == 2, "\(refused.out)\(refused.err)")
        #expect(refused.err.contains("big.json:1:") && refused.err.contains("4096-byte limit") && refused.err.contains("--send-oversize"),
                "\(refused.err)")
        #expect(refused.err.split(separator: "\n").count == 1, "one line: \(refused.err)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("latest").path), "no traffic, no run folder")
        let sent = try PushbenchBinary.run(["--payload", template.path, "--rps", "200", "--duration", "1s", "--out", dir.path,
                                            "--quiet", "--send-oversize"])
        #expect(sent.status == 0, "\(sent.err)")
        let s = try PushbenchBinary.summary(dir)
        let requests = try #require(s["requests"] as? [String: Any])
        #expect(requests["sent"] as? Int == 200)
        #expect((requests["by_status"] as? [String: Any])?["413"] as? Int == 200)
        #expect((requests["by_reason"] as? [String: Any])?["PayloadTooLarge"] as? Int == 200)
    }

    @Test func unreachableTargetExitsThree() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try PushbenchBinary.run(["--target", "http://127.0.0.1:1", "--duration", "1s", "--out", dir.path, "--quiet"])
        #expect(r.status == 3, "\(r.err)")
        #expect(r.err.contains("127.0.0.1:1"))
    }

    @Test func sigintEndsTheRunAndStillWritesEverything() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let bin = try #require(PushbenchBinary.url)
        let p = Process()
        p.executableURL = bin
        p.arguments = ["--rps", "1000", "--duration", "60s", "--out", out.path, "--quiet"]
        try p.run()
        Thread.sleep(forTimeInterval: 2.5)
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        let summaryURL = out.appendingPathComponent("latest/summary.json")
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: summaryURL)) as? [String: Any]
        #expect(summary?["interrupted"] as? Bool == true)
        let requests = try #require(summary?["requests"] as? [String: Any])
        #expect((requests["sent"] as? Int ?? 0) > 100)
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("latest/report.svg").path))
    }
}
