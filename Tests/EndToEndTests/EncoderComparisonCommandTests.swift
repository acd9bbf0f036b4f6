import Foundation
import Testing
@testable import LoadGenerator
@testable import PushMetrics
import PushbenchTestSupport

/// Encoder A/B from the command line: the run folders and comparison files of `pushbench --encoder`, the
/// test build's slowed encoder, and scripts/nightly's gate. Short rounds and low rates; nothing here
/// asserts a speed except the deliberately slowed variant, which is slower by construction.
@Suite(.serialized) struct EncoderComparisonCommandTests {
    /// Runs `pushbench args`, or `pushbench-testing args` (`testing`), whose slowed encoder the
    /// environment can select.
    private func pushbench(_ args: [String], testing: Bool = false,
                           environment extra: [String: String] = [:]) throws -> (status: Int32, out: String, err: String) {
        var executable: URL?
        if testing {
            let binary: URL = try #require(PushbenchBinary.testingURL, "build pushbench-testing first (swift build --build-tests)")
            executable = binary
        }
        return try PushbenchBinary.run(args, executable: executable) { env in
            env.removeValue(forKey: TestSlowdown.environmentVariable)
            env.removeValue(forKey: ComparisonSchedule.roundEnvironmentVariable)
            for (k, v) in extra { env[k] = v }
        }
    }

    private func tempDir() -> URL { PushbenchBinary.tempDir("pushbench-ab") }

    private func json(_ url: URL) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any], "\(url.path)")
    }

    /// Runs `pushbench --encoder zerocopy,copy` in 250 ms rounds, copy slowed by 5 ms of CPU per payload,
    /// and returns the results root.
    private func slowedABRun() throws -> URL {
        let out = tempDir()
        let r = try pushbench(["--encoder", "zerocopy,copy", "--rps", "100", "--duration", "1s", "--connections", "2",
                               "--label", "ab", "--out", out.path], testing: true,
                              environment: [ComparisonSchedule.roundEnvironmentVariable: "250ms",
                                            TestSlowdown.environmentVariable: "copy:5ms"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.contains("PUSHBENCH_TEST_SLOW_ENCODER is set"))
        #expect(r.out.contains("verdict vs ref"), "the table is printed: \(r.out)")
        return out
    }

    @Test func abRunWritesAFolderPerVariantAndAComparisonAndFlagsTheSlowedVariant() throws {
        let out = try slowedABRun()
        defer { try? FileManager.default.removeItem(at: out) }
        let fm = FileManager.default
        let comparison = out.appendingPathComponent("latest-comparison")
        for file in ["comparison.md", "comparison.svg", "comparison.json"] {
            #expect(fm.fileExists(atPath: comparison.appendingPathComponent(file).path), "\(file)")
        }
        #expect(comparison.resolvingSymlinksInPath().lastPathComponent.hasSuffix("-ab-comparison"))
        let c = try json(comparison.appendingPathComponent("comparison.json"))
        // Rounds alternate: zerocopy, copy, zerocopy, copy, … four 250 ms rounds each.
        #expect(c["rounds"] as? [String] == Array(repeating: ["zerocopy", "copy"], count: 4).flatMap { $0 })
        #expect(c["reference"] as? String == "zerocopy")
        let variants = try #require(c["variants"] as? [[String: Any]])
        #expect(variants.map { $0["encoder"] as? String } == ["zerocopy", "copy"])
        var folders: [URL] = []
        for v in variants {
            let id = try #require(v["run_id"] as? String)
            // The slowed variant is labelled so (its history.csv row is not a measurement).
            let encoder = v["encoder"] as? String ?? "?"
            #expect(id.hasSuffix(encoder == "copy" ? "-ab-copy-test-slowed" : "-ab-\(encoder)"), "\(id)")
            let folder = out.appendingPathComponent(id)
            folders.append(folder)
            for file in ["summary.json", "latency.hgrm", "latency.hlog", "timeline.csv", "report.svg"] {
                #expect(fm.fileExists(atPath: folder.appendingPathComponent(file).path), "\(id)/\(file)")
            }
            let s = try json(folder.appendingPathComponent("summary.json"))
            let requests = try #require(s["requests"] as? [String: Any])
            #expect(requests["sent"] as? Int == 100, "\(id): 100 rps × 1 s")
            #expect((s["config"] as? [String: Any])?["encoder"] as? String == v["encoder"] as? String)
            let ab = try #require(s["ab"] as? [String: Any])
            #expect(ab["rounds"] as? Int == 4)
            #expect((ab["cpu_s_per_million"] as? Double ?? 0) > 0)
            #expect((s["reconciliation"] as? [String: Any])?["consistent"] as? Bool == true)
        }
        let history = try String(contentsOf: out.appendingPathComponent("history.csv"), encoding: .utf8)
        #expect(history.split(separator: "\n").count == 3, "header + one row per variant")
        let md = try String(contentsOf: comparison.appendingPathComponent("comparison.md"), encoding: .utf8)
        #expect(md.contains("| zerocopy |") && md.contains("| copy |"))
        #expect(md.contains("Round to round"))
        #expect((variants[1]["per_round"] as? [[String: Any]])?.compactMap { $0["round"] as? Int } == [1, 3, 5, 7])
        let svg = try String(contentsOf: comparison.appendingPathComponent("comparison.svg"), encoding: .utf8)
        #expect(svg.components(separatedBy: "<polyline").count - 1 == 4, "per variant: a percentile curve and a line through its rounds' p99")

        // The slowed variant burns 5 ms per payload: the comparison flags it against the reference …
        let copy = variants[1]
        #expect((copy["regressions_vs_reference"] as? [String] ?? []).contains("p50"))
        #expect((copy["p50_us"] as? Int ?? 0) >= 5_000)
        #expect((copy["cpu_s_per_million"] as? Double ?? 0) > (variants[0]["cpu_s_per_million"] as? Double ?? .infinity))
        // … and `pushbench compare`, the nightly's gate, exits 1 on it and 0 on a run against itself.
        let gate = CompareTool.run(base: folders[0].path, new: folders[1].path)
        #expect(gate.status == 1, "\(gate.output)")
        #expect(gate.output.contains("REGRESSION"))
        #expect(CompareTool.run(base: folders[0].path, new: folders[0].path).status == 0)
        let cli = try pushbench(["compare", folders[0].path, folders[1].path, "--markdown"])
        #expect(cli.status == 1, "\(cli.out)\(cli.err)")
    }

    // MARK: scripts/nightly

    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private static var havePython: Bool {
        ["/usr/bin/python3", "/usr/local/bin/python3"].contains { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private func nightly(_ args: [String], environment extra: [String: String]) throws -> (status: Int32, out: String, err: String) {
        let bin = try #require(PushbenchBinary.testingURL, "build pushbench-testing first (swift build --build-tests)")
        return try PushbenchBinary.run([Self.repository.appendingPathComponent("scripts/nightly").path] + args,
                                       executable: URL(fileURLWithPath: "/bin/bash")) { env in
            env.removeValue(forKey: TestSlowdown.environmentVariable)
            // The script's own matrix shrunk to one low rate, on this build's test binary (the slowed encoder).
            env["PUSHBENCH_BIN"] = bin.path
            env["PUSHBENCH_NIGHTLY_RATES"] = "400"
            env[ComparisonSchedule.roundEnvironmentVariable] = "250ms"
            for (k, v) in extra { env[k] = v }
        }
    }

    @Test func nightlyScriptWritesTheBaselineThenFailsTheSlowedEncoder() throws {
        try #require(Self.havePython, "scripts/nightly needs python3, which is missing: run scripts/setup")
        let out = tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let baseline = out.appendingPathComponent("baseline")
        let common = ["--duration", "500ms", "--warmup", "0s", "--out", out.path, "--baseline", baseline.path]
        let update = try nightly(common + ["--update-baseline"], environment: [:])
        #expect(update.status == 0, "\(update.err)")
        for e in ["zerocopy", "copy", "foundation"] {
            #expect(FileManager.default.fileExists(atPath: baseline.appendingPathComponent("\(e)-400.json").path), "\(e)")
        }
        #expect(update.out.contains("| copy @ 400 |") && update.out.contains("baseline updated"))

        // copy burns 5 ms per payload: its cell regresses (p50 from well under a ms to over 5 ms, CPU per
        // push many times the baseline), the script says so in the table and exits 1.
        let slowed = try nightly(common, environment: [TestSlowdown.environmentVariable: "copy:5ms"])
        #expect(slowed.status == 1, "\(slowed.out)\(slowed.err)")
        let copyRow = slowed.out.split(separator: "\n").first { $0.hasPrefix("| copy @ 400 |") }.map(String.init) ?? ""
        #expect(copyRow.contains("REGRESSION"), "\(slowed.out)")
        #expect(copyRow.contains("p50"))
        #expect(copyRow.contains("cpu_per_million"))
        // Each cell's steal (ms, from its own rounds) sits before the verdict.
        #expect(slowed.out.contains("| CPU s / M pushes | steal ms | verdict |"))
        let fields = copyRow.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(fields.count == 9 && Int(fields[7]) != nil, "\(copyRow)")
        let history = try String(contentsOf: out.appendingPathComponent("history.csv"), encoding: .utf8)
        #expect(history.split(separator: "\n").count == 7, "header + 3 baseline runs + 3 checked runs")
        let reports = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasPrefix("nightly-") }
        #expect(reports.count == 2)

        // Without a baseline the script cannot judge: exit 2, naming the remedy.
        let missing = try nightly(["--duration", "250ms", "--warmup", "0s", "--out", out.path,
                                   "--baseline", out.appendingPathComponent("none").path], environment: [:])
        #expect(missing.status == 2)
        #expect(missing.err.contains("--update-baseline"))
    }

    @Test func pushbenchItselfHasNoSlowedEncoder() throws {
        let out = tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try pushbench(["--encoder", "zerocopy,copy", "--rps", "100", "--duration", "250ms", "--warmup", "0s",
                               "--connections", "1", "--label", "plain", "--out", out.path, "--quiet"],
                              environment: [ComparisonSchedule.roundEnvironmentVariable: "250ms",
                                            TestSlowdown.environmentVariable: "copy:5ms"])
        #expect(r.status == 0, "\(r.err)")
        #expect(!r.err.contains(TestSlowdown.environmentVariable))
        let runs = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(runs.contains { $0.hasSuffix("-plain-copy") }, "\(runs)")
        #expect(!runs.contains { $0.contains("test-slowed") }, "\(runs)")
    }

    @Test func abRunRejectsBadInputWithExitTwo() throws {
        let out = tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let twice = try pushbench(["--encoder", "copy,copy", "--duration", "1s", "--out", out.path, "--quiet"])
        #expect(twice.status == 2)
        #expect(twice.err.contains("'copy' is given twice"))
        let slow = try pushbench(["--encoder", "zerocopy,copy", "--duration", "1s", "--out", out.path, "--quiet"],
                                 testing: true, environment: [TestSlowdown.environmentVariable: "copy"])
        #expect(slow.status == 2)
        #expect(slow.err.contains(TestSlowdown.environmentVariable))
        let round = try pushbench(["--encoder", "zerocopy,copy", "--duration", "1s", "--out", out.path, "--quiet"],
                                  environment: [ComparisonSchedule.roundEnvironmentVariable: "often"])
        #expect(round.status == 2)
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("latest").path))
    }
}
