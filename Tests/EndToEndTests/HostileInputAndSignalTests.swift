import Foundation
import Testing

/// `pushbench run` against the careless and the hostile from outside: descriptor limits, signals, token
/// files that are not token files.
@Suite(.serialized) struct HostileInputAndSignalTests {
    /// Runs `pushbench args` under `ulimit -n limit` (soft and hard: it cannot be raised).
    func runWithDescriptorLimit(_ limit: Int, _ args: [String]) throws -> (status: Int32, out: String, err: String) {
        let bin = try #require(PushbenchBinary.url)
        let quoted = args.map { "'\($0)'" }.joined(separator: " ")
        return try PushbenchBinary.run(["-c", "ulimit -n \(limit) && exec '\(bin.path)' \(quoted)"], executable: URL(fileURLWithPath: "/bin/bash"))
    }

    /// With the descriptor limit at 1024, 1000 connections (2000 descriptors with the embedded gateway)
    /// cannot all open: the run refuses before any traffic and says why.
    @Test func connectionsBeyondTheDescriptorLimitAreRefusedBeforeAnyTraffic() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try runWithDescriptorLimit(1024, ["--connections", "1000", "--rps", "100", "--duration", "1s", "--out", out.path])
        #expect(r.status == 2, "\(r.err)")
        #expect(r.err.contains("--connections 1000 needs about 2064 file descriptors"), "\(r.err)")
        #expect(r.err.contains("cannot be raised"), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("latest").path))
        // Within the limit, the same run goes ahead.
        let ok = try runWithDescriptorLimit(1024, ["--connections", "400", "--rps", "200", "--duration", "1s", "--warmup", "0s",
                                                   "--out", out.path, "--quiet"])
        #expect(ok.status == 0, "\(ok.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.int(s, "connections", "connect_failures") == 0)
        #expect(PushbenchBinary.accountingHolds(s))
    }

    @Test func aTokenLineOverTheProtocolsLengthIsRefusedWithItsLine() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("tokens.txt")
        try Data((String(repeating: "ab", count: 32) + "\n" + String(repeating: "ab", count: 5_000_000) + "\n").utf8).write(to: file)
        let r = try PushbenchBinary.run(["--tokens", file.path, "--rps", "100", "--duration", "1s", "--out", dir.path])
        #expect(r.status == 2)
        #expect(r.err.contains("tokens.txt:2: token is 10000000 characters, over the 1024-digit limit"), "\(r.err)")
    }

    /// Input quoted in a message reaches the terminal with its control characters written out: a token
    /// or an option value holding ANSI escapes cannot recolour, clear or retitle the terminal.
    @Test func inputWithTerminalEscapesIsNeverEchoedRaw() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("tokens.txt")
        try Data("ab\u{1B}[31mcd\u{1B}]0;pwned\u{07}\n".utf8).write(to: file)
        for args in [["--tokens", file.path], ["--target", "http://\u{1B}[31mhost:1"], ["--label", "a\u{1B}[2J\u{9B}"]] {
            let r = try PushbenchBinary.run(args + ["--rps", "100", "--duration", "1s", "--out", dir.path])
            #expect(r.status == 2 || r.status == 3, "\(args): \(r.err)")
            #expect(!r.err.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B }, "\(args): \(r.err)")
            #expect(!r.out.unicodeScalars.contains { $0.value == 0x1B }, "\(args)")
        }
        let r = try PushbenchBinary.run(["--label", "a\u{1B}[2J\u{9B}", "--out", dir.path])
        #expect(r.err.contains(#"'a\x1b[2J\u{9b}'"#), "\(r.err)")
    }

    /// Starts a run, sends `signals` (the second one `gap` after the first), returns the process.
    func interrupted(_ args: [String], after: TimeInterval, signals: [Int32], gap: TimeInterval = 0.05) throws -> Process {
        let p = Process()
        p.executableURL = try #require(PushbenchBinary.url)
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        Thread.sleep(forTimeInterval: after)
        for (k, sig) in signals.enumerated() {
            if k > 0 { Thread.sleep(forTimeInterval: gap) }
            kill(p.processIdentifier, sig)
        }
        p.waitUntilExit()
        return p
    }

    /// SIGTERM (Kubernetes, CI) and SIGHUP (a closed terminal) stop a run as Ctrl-C does: every file
    /// written, marked interrupted, rather than a killed process with nothing written.
    @Test(arguments: [SIGTERM, SIGHUP, SIGINT])
    func aStopSignalKeepsTheResults(signal: Int32) throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let p = try interrupted(["--rps", "1000", "--duration", "60s", "--warmup", "0s", "--out", out.path, "--quiet"],
                                after: 2, signals: [signal])
        #expect(p.terminationReason == .exit && p.terminationStatus == 0)
        let s = try PushbenchBinary.summary(out)
        #expect(s["interrupted"] as? Bool == true)
        #expect(PushbenchBinary.accountingHolds(s))
        for file in ["summary.json", "latency.hgrm", "latency.hlog", "service_time.hlog", "timeline.csv", "report.svg", "report.html"] {
            #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("latest/\(file)").path), "\(file)")
        }
        let measured = try #require((s["throughput"] as? [String: Any])?["measured_s"] as? Double)
        #expect(measured > 1.5 && measured < 10, "measured \(measured) s")
    }

    /// A second signal ends the process at once, with 128 + the signal's number.
    @Test func aSecondSignalExitsAtOnce() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        // Every answer takes 5 s: after the first signal the run would wait for the streams in flight.
        let p = try interrupted(["--rps", "1000", "--duration", "60s", "--warmup", "0s", "--gateway-arg=--latency=5s",
                                 "--out", out.path, "--quiet"], after: 1.5, signals: [SIGTERM, SIGTERM])
        #expect(p.terminationReason == .exit && p.terminationStatus == 128 + SIGTERM)
    }

    /// Interrupted while the target stalls: the answers that came are counted over the time they took.
    /// The measured time is not the span of the sends (0.1 s here, as every stream waits on the stalled
    /// target), which would make 100 answers "1,000 rps over 0.1 s".
    @Test func anInterruptedRunAgainstAStalledTargetReportsItsRateHonestly() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let p = try interrupted(["--rps", "1000", "--duration", "60s", "--warmup", "0s", "--connections", "1", "--streams", "100",
                                 "--gateway-arg=--latency=2500ms", "--out", out.path, "--quiet"], after: 2, signals: [SIGINT])
        #expect(p.terminationStatus == 0)
        let s = try PushbenchBinary.summary(out)
        let completed = PushbenchBinary.int(s, "requests", "completed")
        let throughput = try #require(s["throughput"] as? [String: Any])
        let measured = try #require(throughput["measured_s"] as? Double)
        let achieved = try #require(throughput["achieved_rps"] as? Double)
        #expect(completed >= 100, "the answers due 2.5 s in arrive within the drain")
        #expect(measured >= 2, "measured \(measured) s")
        #expect(achieved <= Double(completed) / 2 + 1, "achieved \(achieved) rps for \(completed) answers")
        #expect(PushbenchBinary.accountingHolds(s))
    }
}
