import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--slo`, `--abort-on-slo` and `--junit` on real runs against the embedded gateway, with a known latency
/// (`--latency`) or a known failure rate (`--fail`): the verdicts, summary.json's `objectives`, exit 6,
/// the JUnit file as a JUnit parser reads it, and the GitHub job summary.
@Suite(.serialized) struct ObjectiveRunTests {
    static func objectives(_ summary: [String: Any]) throws -> (passed: Bool, results: [String: [String: Any]]) {
        let o = try #require(summary["objectives"] as? [String: Any])
        let results = try #require(o["results"] as? [[String: Any]])
        var byName: [String: [String: Any]] = [:]
        for r in results { byName[r["objective"] as? String ?? ""] = r }
        return (o["passed"] as? Bool ?? false, byName)
    }

    /// The JUnit file as junitparser (PyPI, scripts/setup) reads it: per test case "name|passed|message".
    static func junit(_ path: String) throws -> [String] {
        let script = """
        import sys
        from junitparser import JUnitXml, Failure
        xml = JUnitXml.fromfile(sys.argv[1])
        suites = list(xml)
        assert len(suites) == 1, suites
        suite = suites[0]
        cases = list(suite)
        assert suite.tests == len(cases), (suite.tests, len(cases))
        assert suite.failures == sum(1 for c in cases if not c.is_passed), suite.failures
        for c in cases:
            msg = c.result[0].message if c.result else ""
            print(f"{c.name}|{c.is_passed}|{msg}")
        """
        let r = try PushbenchBinary.run(["python3", "-c", script, path], executable: URL(fileURLWithPath: "/usr/bin/env"))
        #expect(r.status == 0, "junitparser: \(r.err)")
        return r.out.split(separator: "\n").map(String.init)
    }

    @Test func latencyObjectivesPassAndFailOnAKnownLatency() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let junit = out.appendingPathComponent("junit.xml").path
        let stepSummary = out.appendingPathComponent("job-summary")
        try "# before\n".write(to: stepSummary, atomically: true, encoding: .utf8)
        // Every answer takes 2 ms.
        let r = try PushbenchBinary.run(["run", "--requests", "2000", "--rps", "2000", "--gateway-arg=--latency=2ms", "--quiet",
                                         "--slo", "p50<1ms", "--slo", "p50<1s", "--slo", "p99.9<1s", "--slo", "max<2ms",
                                         "--slo", "service_p99<1s", "--slo", "error_rate<1%", "--slo", "rate_kept",
                                         "--slo", "p99<1s per 1s", "--junit", junit, "--out", out.path]) {
            $0["GITHUB_STEP_SUMMARY"] = stepSummary.path
        }
        #expect(r.status == 6, "an objective did not hold: \(r.err)")
        let s = try PushbenchBinary.summary(out)
        let (passed, results) = try Self.objectives(s)
        #expect(!passed)
        for (name, held) in [("p50<1ms", false), ("p50<1s", true), ("p99.9<1s", true), ("max<2ms", false), ("service_p99<1s", true),
                             ("error_rate<1%", true), ("rate_kept", true), ("p99<1s per 1s", true)] {
            #expect(results[name]?["passed"] as? Bool == held, "\(name): \(results[name] ?? [:])")
        }
        #expect((results["p50<1ms"]?["measured"] as? Double ?? 0) >= 2_000, "the gateway's 2 ms are in the latency")
        #expect(results["p50<1ms"]?["limit"] as? Double == 1_000)
        #expect(results["p99<1s per 1s"]?["window_s"] as? Int == 1)
        #expect((results["p99<1s per 1s"]?["windows"] as? Int ?? 0) >= 1)
        #expect(r.out.contains("objectives  2 of 8 did not hold"))
        #expect(r.out.contains("FAIL  p50<1ms"))
        let cases = try Self.junit(junit)
        #expect(cases.count == 8)
        let failing = cases.filter { $0.contains("|False|") }
        #expect(failing.count == 2)
        // The gateway's 2 ms are a floor; a loaded machine adds to it.
        let p50Case = try #require(failing.first)
        let p50Measured = try #require(p50Case.firstMatch(of: /^p50<1ms\|False\|p50<1ms did not hold: measured (\d+\.\d+) ms/), "\(failing)")
        #expect(Double(p50Measured.1).map { $0 >= 2 } == true, "\(p50Case)")
        #expect(failing.first?.hasSuffix("limit < 1.000 ms") == true)
        let md = try String(contentsOf: stepSummary, encoding: .utf8)
        #expect(md.hasPrefix("# before\n"), "appended, not replaced")
        #expect(md.contains("### pushbench run "))
        #expect(md.contains("requests   sent 2000"))
        #expect(md.contains("| `p50<1ms` | **FAIL** |"))
        #expect(md.contains("| `p50<1s` | pass |"))
    }

    @Test func objectivesThatHoldExitZero() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let junit = out.appendingPathComponent("junit.xml").path
        let r = try PushbenchBinary.run(["run", "--requests", "1000", "--rps", "2000", "--gateway-arg=--latency=2ms", "--quiet",
                                         "--slo", "p99<1s", "--slo", "error_rate<=0", "--junit", junit, "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        let (passed, results) = try Self.objectives(try PushbenchBinary.summary(out))
        #expect(passed && results.count == 2)
        #expect(r.out.contains("objectives  all held"))
        #expect(try Self.junit(junit).allSatisfy { $0.contains("|True|") })
    }

    @Test func errorRateOnAKnownFailureRate() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        // A fifth of the requests are answered 500.
        let r = try PushbenchBinary.run(["run", "--requests", "4000", "--rps", "4000", "--gateway-arg=--fail=InternalServerError=0.2",
                                         "--quiet", "--slo", "error_rate<1%", "--slo", "error_rate<50%", "--slo", "error_rate<50% per 1s",
                                         "--out", out.path, "--json"])
        #expect(r.status == 6, "\(r.err)")
        let (_, results) = try Self.objectives(try PushbenchBinary.summary(out))
        #expect(results["error_rate<1%"]?["passed"] as? Bool == false)
        let measured = results["error_rate<1%"]?["measured"] as? Double ?? 0
        #expect(abs(measured - 0.2) < 0.05, "\(measured)")
        #expect(results["error_rate<50%"]?["passed"] as? Bool == true)
        #expect(results["error_rate<50% per 1s"]?["passed"] as? Bool == true)
        // With --json the verdicts go to stderr; stdout stays summary.json.
        #expect(r.err.contains("FAIL  error_rate<1%"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        #expect(json["objectives"] != nil)
    }

    /// A 30-second run whose p50 misses from the first second stops after the 2-second grace (and a
    /// second or two for the seconds to close), with what it measured written.
    /// A real stall in the middle of a real run: the gateway, a process of its own, is stopped (SIGSTOP)
    /// for 200 ms and let go (SIGCONT). Every request intended during the stall waits for its end, so
    /// its latency is the rest of the stall: the requests of its first 100 ms take 100 ms or more.
    ///
    /// The arithmetic, at 500 rps for 30 s (15,000 measured requests): a stall of S ms puts
    /// (S − 100) ms × 500/s requests at 100 ms or more, 50 for S = 200, 0.33% of the run, so the
    /// whole-run p99 stays under 100 ms (a stall stretched to 350 ms by a slow wake-up still makes
    /// only 125, 0.83%). The second holding the stall has 500 requests: 50 of them, 10% (at least 5%
    /// in each of two seconds if the stall straddles a boundary), are over 100 ms, so that second's p99
    /// is over 100 ms and the 1-second window objective fails. The 100 ms limit is far above the
    /// loopback's own latency, so nothing but the stall comes near it.
    @Test func aOneSecondWindowCatchesALiveStallTheWholeRunP99Hides() throws {
        let bin = try #require(PushbenchBinary.url, "build pushbench first (swift build --build-tests)")
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let gateway = try LoopbackGatewayProcess()
        defer { gateway.stop() }
        let run = Process()
        run.executableURL = bin
        run.arguments = ["run", "--target", gateway.url, "--rps", "500", "--warmup", "1s", "--duration", "30s", "--connections", "1",
                         "--quiet", "--slo", "p99<100ms", "--slo", "p99<100ms per 1s", "--out", out.path]
        let pipe = Pipe()
        run.standardOutput = pipe
        run.standardError = pipe
        try run.run()
        // Well inside the measured phase (the warm-up and the connect take a second or two), well
        // before its end.
        Thread.sleep(forTimeInterval: 12)
        let pid = gateway.process.processIdentifier
        let stoppedAt = Date()
        kill(pid, SIGSTOP)
        usleep(200_000)
        kill(pid, SIGCONT)
        let stall = Date().timeIntervalSince(stoppedAt)
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        run.waitUntilExit()
        #expect(stall < 0.35, "the stall took \(stall) s: the arithmetic above no longer holds")
        #expect(run.terminationStatus == 6, "the window objective did not hold: \(output)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.int(s, "requests", "completed") == 15_000, "\(output)")
        let (passed, results) = try Self.objectives(s)
        #expect(!passed)
        let whole = try #require(results["p99<100ms"]), window = try #require(results["p99<100ms per 1s"])
        #expect(whole["passed"] as? Bool == true, "the whole run's p99 hides the stall: \(whole)")
        #expect(window["passed"] as? Bool == false, "a 1 s window catches it: \(window)")
        #expect((1...2).contains(window["windows_failed"] as? Int ?? 0), "\(window)")
        #expect((window["measured"] as? Double ?? 0) >= 100_000, "\(window)")
        // The worst window is where the stall was: 12 s after the start, less the warm-up and the connect.
        #expect((6...12).contains(window["worst_window_start_s"] as? Int ?? -1), "\(window)")
    }

    @Test func abortOnSLOStopsWithinTheGraceAndKeepsTheResults() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["run", "--duration", "30s", "--warmup", "0s", "--rps", "500", "--gateway-arg=--latency=5ms",
                                         "--quiet", "--slo", "p50<1ms", "--slo", "p99<1s", "--abort-on-slo", "--slo-grace", "2s",
                                         "--out", out.path])
        #expect(r.status == 6, "\(r.err)")
        #expect(r.err.contains("pushbench run: stopped early (--abort-on-slo): p50<1ms: p50 5."), "\(r.err)")
        #expect(r.err.contains("not met for 2 s"))
        let s = try PushbenchBinary.summary(out)
        #expect(s["interrupted"] as? Bool == true)
        let measured = (s["throughput"] as? [String: Any])?["measured_s"] as? Double ?? 99
        #expect(measured < 10, "stopped long before the 30 s: \(measured) s")
        #expect(PushbenchBinary.int(s, "requests", "sent") > 0)
        #expect(PushbenchBinary.accountingHolds(s))
        let o = try #require(s["objectives"] as? [String: Any])
        #expect((o["aborted"] as? String)?.hasPrefix("p50<1ms: p50 5.") == true)
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("latest/latency.hgrm").path))
        #expect(r.out.contains("(interrupted)"))
    }

    @Test func badObjectivesAreRefusedBeforeAnyTraffic() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        for (args, message) in [
            (["run", "--slo", "p99 under 1ms"], "pushbench run: --slo: 'p99 under 1ms' is not METRIC<LIMIT"),
            (["run", "--slo", "latency<1ms"], "pushbench run: --slo: 'latency' is not a metric (p50, p90, p99, p99.9, p99.99, max,"),
            (["run", "--slo", "p99<1ms per 20s", "--duration", "10s"], "--slo: 'p99<1ms per 20s': the 20 s window is longer than the run (10 s)"),
            (["run", "--slo", "lost_rate<1%"], "lost_rate is measured by pushbench pipeline, not run"),
            (["run", "--slo", "rate_kept", "--rps", "max"], "--rps max has no rate to keep"),
            (["run", "--abort-on-slo"], "--abort-on-slo: give the objectives with --slo"),
            (["run", "--slo", "p99<1ms", "--slo-grace", "3s"], "--slo-grace: only applies with --abort-on-slo"),
            (["run", "--slo", "p99<1ms", "--encoder", "zerocopy,copy"], "--slo: judges one run"),
            (["pipeline", "--target", "http://127.0.0.1:1", "--request", "x.http", "--egress-listen", ":0", "--slo", "p99<"],
             "pushbench pipeline: --slo: p99<: '' is not a duration"),
            (["capacity", "--slo", "p99<1ms per 10s"], "a capacity step is judged over the whole step"),
            (["capacity", "--slo", "lost_rate<1%"], "'lost_rate' is not a metric of a capacity step"),
        ] {
            let r = try PushbenchBinary.run(args + ["--out", out.path])
            #expect(r.status == 2, "\(args): \(r.err)")
            #expect(r.err.contains(message), "\(args): \(r.err)")
            #expect(r.err.split(separator: "\n").count == 1, "one line: \(r.err)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty, "no traffic, no folder")
    }

    @Test func compareWritesATestCasePerMetric() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        for (name, latency) in [("base", "1ms"), ("new", "10ms")] {
            let r = try PushbenchBinary.run(["run", "--requests", "500", "--rps", "1000", "--gateway-arg=--latency=\(latency)", "--quiet",
                                             "--out", out.appendingPathComponent(name).path])
            #expect(r.status == 0, "\(r.err)")
        }
        let junit = out.appendingPathComponent("compare.xml").path
        let stepSummary = out.appendingPathComponent("job-summary")
        let r = try PushbenchBinary.run(["compare", out.appendingPathComponent("base/latest").path, out.appendingPathComponent("new/latest").path,
                                         "--junit", junit]) { $0["GITHUB_STEP_SUMMARY"] = stepSummary.path }
        #expect(r.status == 1, "p50 regressed: \(r.out) \(r.err)")
        let cases = try Self.junit(junit)
        #expect(cases.count == 14, "\(cases)")
        let p50 = try #require(cases.first { $0.hasPrefix("p50|") })
        #expect(p50.firstMatch(of: /^p50\|False\|latency p50 \(µs\) regressed: BASE [1-9],\d{3}/) != nil, "\(p50)")
        #expect(p50.hasSuffix("threshold +10%: REGRESSION"))
        #expect(cases.contains { $0.hasPrefix("achieved_rps|True|") })
        let md = try String(contentsOf: stepSummary, encoding: .utf8)
        #expect(md.contains("### pushbench compare: ❌"))
        #expect(md.contains("**REGRESSION**"))
    }

    @Test func capacityWritesATestCasePerObjective() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let junit = out.appendingPathComponent("capacity.xml").path
        let stepSummary = out.appendingPathComponent("job-summary")
        // Every answer takes 20 ms: p99 < 5 ms holds at no rate.
        let r = try PushbenchBinary.run(["capacity", "--slo", "p99<5ms", "--min", "200", "--max", "1k", "--step-duration", "300ms",
                                         "--warmup", "0s", "--gateway-arg=--latency=20ms", "--out", out.appendingPathComponent("r").path,
                                         "--quiet", "--junit", junit]) { $0["GITHUB_STEP_SUMMARY"] = stepSummary.path }
        #expect(r.status == 0, "\(r.err)")
        let cases = try Self.junit(junit)
        #expect(cases.count == 2, "the objective and the default error rate: \(cases)")
        let p99 = try #require(cases.first)
        #expect(p99.hasPrefix("p99<5ms|False|no rate held: capacity: below --min 200 rps"), "\(p99)")
        // The injected 20 ms is a floor; a loaded machine adds to it.
        let measured = try #require(p99.firstMatch(of: /at 200 rps: measured (\d+\.\d+) ms/), "\(p99)")
        #expect(Double(measured.1).map { $0 >= 20 && $0 < 1000 } == true, "\(p99)")
        #expect(p99.hasSuffix("limit < 5.000 ms"))
        #expect(try String(contentsOf: stepSummary, encoding: .utf8).contains("# Capacity search"))
        // A search that finds a rate passes every case.
        let held = try PushbenchBinary.run(["capacity", "--slo", "p99<1s", "--min", "200", "--max", "400", "--step-duration", "300ms",
                                            "--warmup", "0s", "--out", out.appendingPathComponent("h").path, "--quiet", "--junit", junit])
        #expect(held.status == 0, "\(held.err)")
        #expect(try Self.junit(junit).allSatisfy { $0.contains("|True|") })
    }
}
