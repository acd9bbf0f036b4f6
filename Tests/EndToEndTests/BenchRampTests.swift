import Foundation
import Testing

/// scripts/bench-ramp end to end, short: it runs the ramp, reads timeline.csv and judges each second
/// against the schedule's integral. Whether every second was within 0.5% depends on the machine, so the
/// test holds it to the counts and the report's shape, not to the verdict.
@Suite(.serialized) struct BenchRampTests {
    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/bench-ramp")

    @Test func aShortRampIsJudgedSecondBySecond() throws {
        let bin = try #require(PushbenchBinary.url, "build pushbench first (swift build --build-tests)")
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run([Self.script.path, "1k..3k", "2s", "--", "--warmup", "0s"], executable: URL(fileURLWithPath: "/bin/bash")) { env in
            env["PUSHBENCH_BIN"] = bin.path
            env["PUSHBENCH_OUT"] = out.path
        }
        #expect(r.status == 0 || r.status == 1, "\(r.out)\(r.err)")
        // 1k → 3k over 2 s: 1,500 then 2,500 intended, 4,000 in all.
        #expect(r.out.contains("ramp 1k..3k over 2s: 4000 requests intended, 4000 sent"), "\(r.out)")
        #expect(r.out.contains("seconds judged (target >= 1,000): 2;"), "\(r.out)")
        #expect(r.out.contains("worst second: "))
        #expect(r.out.contains("sender: client CPU "))
        let timeline = try String(contentsOf: out.appendingPathComponent("latest/timeline.csv"), encoding: .utf8)
        let targets = timeline.split(separator: "\n").dropFirst().compactMap { Int($0.split(separator: ",", omittingEmptySubsequences: false).last!) }
        #expect(Array(targets.prefix(2)) == [1_500, 2_500])
        #expect(r.status == 0 || r.out.contains("  second "), "a failing verdict names the seconds")
    }

    @Test func aRateThatIsNotARampIsBadInput() throws {
        let r = try PushbenchBinary.run([Self.script.path, "5000", "2s"], executable: URL(fileURLWithPath: "/bin/bash"))
        #expect(r.status == 2)
        #expect(r.err == "bench-ramp: '5000' is not a ramp FROM..TO (as in 1k..200k)\n")
    }
}
