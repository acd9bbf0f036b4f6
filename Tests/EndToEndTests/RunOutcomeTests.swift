import Foundation
@testable import PushMetrics
import Testing

/// What a run tells whoever typed it: honest exit statuses, a summary that tells the story, messages
/// that say what was wrong, results that are never lost.
@Suite(.serialized) struct RunOutcomeTests {
    @Test func quietHidesTheProgressLineOnlyNotTheSummaryOrTheFolder() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--rps", "200", "--duration", "1s", "--warmup", "1s", "--quiet", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        #expect(!r.out.contains(" rps  in flight "), "no progress line: \(r.out)")
        #expect(r.out.contains(out.path), "the folder written: \(r.out)")
        #expect(r.out.contains("  latency    p50 ") && r.out.contains("  requests   sent 200"), "\(r.out)")
    }

    @Test func failuresAreBrokenDownByStatusAndReason() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--rps", "500", "--duration", "1s", "--warmup", "0s", "--out", out.path,
                                         "--gateway-arg=--fail=InternalServerError=20%", "--gateway-arg=--fail=TooManyRequests=10%"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("  failed     by status 500: "), "\(r.out)")
        #expect(r.out.contains(", 429: ") && r.out.contains("by reason InternalServerError "), "\(r.out)")
        #expect(r.out.contains("  connections opened 8  lost 0"), "\(r.out)")
    }

    @Test func aRateTheStreamsCannotCarryIsCalledOutEverywhere() throws {
        // One connection with one stream and a 20 ms gateway carries 50 rps at most; 1000 are asked for.
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--rps", "1000", "--duration", "1s", "--warmup", "0s", "--connections", "1",
                                         "--streams", "1", "--gateway-arg=--latency=20ms", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("BEHIND the rate"), "the progress line: \(r.out)")
        #expect(r.out.contains("NOT KEPT"), "the summary: \(r.out)")
        #expect(r.err.contains("WARNING: the rate was not kept: sent ") && r.err.contains("every stream was busy"), "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        let throughput = try #require(s["throughput"] as? [String: Any])
        #expect(throughput["rate_kept"] as? Bool == false)
        #expect(throughput["rate_shortfall"] as? String == "streams")
        #expect(PushbenchBinary.accountingHolds(s))
    }

    @Test func aClosedLoopSendsExactlyWhatIsAskedAndWarmsUpOnlyWhenAsked() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        // `--rps max --requests 20000` once sent 20,800: a first batch before t0 counted as warm-up.
        let exact = try PushbenchBinary.run(["--rps", "max", "--requests", "3000", "--connections", "2", "--streams", "10",
                                             "--out", out.path, "--json"])
        #expect(exact.status == 0, "\(exact.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.int(s, "requests", "sent") == 3000)
        #expect(PushbenchBinary.int(s, "warmup", "sent") == 0)
        let noWarmup = try PushbenchBinary.run(["--rps", "max", "--warmup", "0s", "--duration", "500ms", "--connections", "2",
                                                "--streams", "10", "--out", out.path, "--json"])
        #expect(noWarmup.status == 0, "\(noWarmup.err)")
        #expect(PushbenchBinary.int(try PushbenchBinary.summary(out), "warmup", "sent") == 0)
    }

    /// A target that answers nothing (the gateway drops the connection at every request) measures
    /// nothing: exit 4, the warning saying why, and the run folder still written.
    @Test func aRunAgainstATargetThatAnswersNothingExitsFour() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--rps", "100", "--duration", "1s", "--warmup", "0s", "--quiet", "--out", out.path,
                                         "--gateway-arg=--drop-rate=1"])
        #expect(r.status == 4, "\(r.out)\(r.err)")
        #expect(r.err.contains("WARNING: none of the ") && r.err.contains("the target did not respond"), "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.int(s, "requests", "sent") > 0 && PushbenchBinary.int(s, "requests", "completed") == 0)
        #expect(PushbenchBinary.accountingHolds(s))
    }

    /// As the command line shows them: one line on stderr, exit 2, nothing on stdout. (The option checks
    /// themselves are tested through RunCommand in PushbenchCLITests' ArgumentTests.)
    @Test(arguments: [
        (["--duration", "3"], "pushbench run: --duration: '3' has no unit: say which, as in 3s or 3ms"),
        (["--payload", "/nonexistent/big.json"], "pushbench run: /nonexistent/big.json: no such file"),
        (["--tokens", "/nonexistent/tokens.txt"], "pushbench run: /nonexistent/tokens.txt: no such file"),
    ])
    func badInputIsOneLineSayingWhatWasWrong(_ c: ([String], String)) throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(c.0 + ["--out", out.path])
        #expect(r.status == 2, "\(r.out)\(r.err)")
        #expect(r.err.hasPrefix(c.1), "\(r.err)")
        #expect(r.err.split(separator: "\n").count == 1, "\(r.err)")
        #expect(r.out.isEmpty)
    }

    // MARK: results that cannot be written (--out)

    @Test func anOutThatCannotTakeARunIsRefusedBeforeAnyTraffic() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: file)
        for (out, why) in [(file.path, "is a file, not a folder"), (file.path + "/sub", "a-file: is a file, not a folder"),
                           ("/proc/pushbench-results", "cannot create the folder")] {
            // A long run: refused at once, so the test takes no time.
            let r = try PushbenchBinary.run(["--duration", "1h", "--out", out])
            #expect(r.status == 2, "\(out): \(r.err)")
            #expect(r.err.hasPrefix("pushbench run: --out: ") && r.err.contains(why), "\(r.err)")
            #expect(r.out.isEmpty, "no progress: nothing was sent")
        }
    }

    /// Runs `script` in a private mount namespace (as root there), where it may mount a small tmpfs.
    func inMountNamespace(_ script: String, environment: [String: String] = [:]) throws -> (status: Int32, out: String, err: String) {
        let unshare = try #require(["/usr/bin/unshare", "/bin/unshare"].first { FileManager.default.isExecutableFile(atPath: $0) },
                                   "unshare (util-linux) is needed")
        return try PushbenchBinary.run(["--map-root-user", "--mount", "sh", "-c", script], executable: URL(fileURLWithPath: unshare)) { env in
            for (k, v) in environment { env[k] = v }
        }
    }

    @Test func aResultsRootWithNoRoomIsRefusedBeforeAnyTraffic() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bin = try #require(PushbenchBinary.url).path
        let r = try inMountNamespace("mount -t tmpfs -o size=256k tmpfs '\(dir.path)' && exec '\(bin)' --duration 1h --out '\(dir.path)'")
        #expect(r.status == 2, "\(r.out)\(r.err)")
        #expect(r.err.contains("--out: \(dir.path): only ") && r.err.contains("KiB free"), "\(r.err)")
    }

    /// An existing folder nothing can be created in (here on a read-only mount) is refused before any
    /// traffic, naming the folder.
    @Test func anOutFolderThatCannotBeWrittenInIsRefusedBeforeAnyTraffic() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bin = try #require(PushbenchBinary.url).path
        let r = try inMountNamespace("mount -t tmpfs -o ro,size=64m tmpfs '\(dir.path)' || exit 99\n"
                                     + "exec '\(bin)' --duration 1h --out '\(dir.path)'")
        #expect(r.status == 2, "\(r.out)\(r.err)")
        #expect(r.err.hasPrefix("pushbench run: --out: \(dir.path): cannot write in it: read-only file system"), "\(r.err)")
        #expect(r.out.isEmpty, "no progress: nothing was sent")
    }

    @Test func aDiskThatFillsDuringTheRunSendsTheResultsToAFallbackFolderAndSaysWhere() throws {
        let dir = PushbenchBinary.tempDir()
        let temp = PushbenchBinary.tempDir("pushbench-fallback")
        defer {
            try? FileManager.default.removeItem(at: dir)
            try? FileManager.default.removeItem(at: temp)
        }
        let bin = try #require(PushbenchBinary.url).path
        // Room when the run starts; none when it ends: the disk is filled while the run sends.
        let script = """
        mount -t tmpfs -o size=24m tmpfs '\(dir.path)' || exit 99
        '\(bin)' --rps 200 --duration 3s --warmup 0s --out '\(dir.path)/results' > '\(temp.path)/out' 2> '\(temp.path)/err' &
        pid=$!
        sleep 1
        dd if=/dev/zero of='\(dir.path)/fill' bs=64k 2>/dev/null
        wait $pid; status=$?
        cat '\(temp.path)/out'; cat '\(temp.path)/err' >&2
        exit $status
        """
        let r = try inMountNamespace(script, environment: ["TMPDIR": temp.path])
        #expect(r.status == 5, "\(r.out)\(r.err)")
        let fallback = temp.appendingPathComponent("pushbench-results")
        #expect(r.err.contains("could not write the results under \(dir.path)/results")
                && r.err.contains("they were written under \(fallback.path)"), "\(r.err)")
        let latest = fallback.appendingPathComponent("latest")
        for file in ["summary.json", "latency.hgrm", "latency.hlog", "timeline.csv", "report.svg", "report.html"] {
            #expect(FileManager.default.fileExists(atPath: latest.appendingPathComponent(file).path), "\(file)")
        }
        #expect(PushbenchBinary.int(try PushbenchBinary.summary(fallback), "requests", "sent") == 600)
    }

    // MARK: merge and compare

    /// A run folder of `seconds` one-second intervals starting at `start`.
    func runFolder(_ root: URL, start: Date, seconds: Int, label: String) throws -> URL {
        var r = RunRecord(label: label, startedAt: start, config: RunConfig(rps: 100))
        r.measuredSeconds = Double(seconds)
        for s in 0..<seconds {
            let h = HdrHistogram.latencyMicroseconds()
            for v in 0..<100 { h.record(Int64(500 + v)) }
            r.latency.add(h)
            r.serviceTime.add(h)
            r.intervals.append(TimelineInterval(second: s, sent: 100, completed: 100, succeeded: 100, failed: 0, transportErrors: 0,
                                                latency: h, serviceTime: h))
        }
        r.counts.sent = Int64(100 * seconds)
        r.counts.completed = r.counts.sent
        r.counts.succeeded = r.counts.sent
        return try ResultsWriter.write(r, root: root)
    }

    @Test func mergingRunsThatDoNotOverlapWarnsNamingTheGap() throws {
        let root = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let t = Date(timeIntervalSince1970: 1_764_000_000)
        let a = try runFolder(root, start: t, seconds: 3, label: "a")
        let b = try runFolder(root, start: t.addingTimeInterval(15), seconds: 3, label: "b")
        let r = try PushbenchBinary.run(["merge", a.path, b.path, "--out", root.appendingPathComponent("merged").path])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.hasPrefix("pushbench merge: warning: the runs do not overlap in time: 12.0 s with no run measuring"), "\(r.err)")
        let together = try PushbenchBinary.run(["merge", a.path, try runFolder(root, start: t, seconds: 3, label: "c").path,
                                                "--out", root.appendingPathComponent("merged2").path])
        #expect(together.status == 0 && together.err.isEmpty, "\(together.err)")
    }

    @Test func comparingAComparisonFolderSaysWhichFoldersToCompare() throws {
        let root = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let ab = root.appendingPathComponent("20261201-120000-ab-comparison")
        try FileManager.default.createDirectory(at: ab, withIntermediateDirectories: true)
        try Data(#"{"variants":[{"encoder":"zerocopy","run_id":"20261201-120000-ab-zerocopy"},{"encoder":"copy","run_id":"20261201-120001-ab-copy"}]}"#.utf8)
            .write(to: ab.appendingPathComponent("comparison.json"))
        for args in [["compare", ab.path, ab.path], ["report", ab.path]] {
            let r = try PushbenchBinary.run(args)
            #expect(r.status == 2, "\(r.err)")
            #expect(r.err.contains("an encoder comparison folder, not a run folder: use its variants' run folders, \(root.path)/20261201-120000-ab-zerocopy"),
                    "\(r.err)")
            #expect(!r.err.contains("could not be completed"))
        }
    }
}
