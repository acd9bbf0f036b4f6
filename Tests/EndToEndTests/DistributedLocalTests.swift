import Foundation
import Testing

/// scripts/distributed-local end to end: two agents, one start time, their segments merged into one run
/// whose counts are the agents' sum and the gateway's; the merged folder is a run like any other; with
/// --dashboard, `pushbench dashboard` follows them to their end.
@Suite(.serialized) struct DistributedLocalTests {
    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test func twoAgentsMakeOneRunAndTheInvariantHolds() throws {
        let bin = try #require(PushbenchBinary.url, "build pushbench first (swift build --build-tests)")
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let dashboard = PipelineServiceTests.freePort()
        let r = try PushbenchBinary.run([Self.repository.appendingPathComponent("scripts/distributed-local").path,
                                         "--single", "--dashboard", "\(dashboard)", "2", "3000", "2s", "--", "--warmup", "500ms",
                                         "--connections", "2"],
                                        executable: URL(fileURLWithPath: "/bin/bash")) { env in
            env["PUSHBENCH_BIN"] = bin.path
            env["PUSHBENCH_OUT"] = out.path
        }
        #expect(r.status == 0, "\(r.out)\n\(r.err)")
        #expect(r.out.contains("invariant holds: merged counts = the sum of the agents', = what the gateway received"), "\(r.out)")
        #expect(r.out.contains("one t0 for all: yes"))
        // --dashboard: the dashboard followed both agents to their end.
        #expect(r.err.contains("watch it live at http://127.0.0.1:\(dashboard)/"), "\(r.err)")
        #expect(r.out.contains("merged seconds, 2 of 2 agents done"), "\(r.out)")
        let run = try #require(try FileManager.default.contentsOfDirectory(atPath: out.path).first { $0.hasSuffix("-distributed") })
        let folder = out.appendingPathComponent(run)
        let merged = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: folder.appendingPathComponent("merged/summary.json"))) as? [String: Any])
        #expect(PushbenchBinary.int(merged, "requests", "sent") == 6_000)
        #expect(PushbenchBinary.int(merged, "config", "rps") == 3_000)
        #expect(PushbenchBinary.int(merged, "config", "agents") == 2)
        #expect((merged["segments"] as? [String: Any])?["complete"] as? Bool == true)
        let i = { (key: String) in PushbenchBinary.int(merged, "requests", key) }
        #expect(i("sent") == i("completed") + i("transport_errors") + i("unfinished") && i("completed") == i("succeeded") + i("failed"))
        for file in ["latency.hlog", "timeline.csv", "report.svg"] {
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("merged/\(file)").path), "\(file)")
        }
        // The merged timeline's target adds the agents' shares up to the whole rate.
        let timeline = try String(contentsOf: folder.appendingPathComponent("merged/timeline.csv"), encoding: .utf8)
        let targets = timeline.split(separator: "\n").dropFirst().prefix(2).map { $0.split(separator: ",", omittingEmptySubsequences: false).last.map(String.init) }
        #expect(targets == ["3000", "3000"])
        // Each agent sent every other request: its share of the rate.
        let agent = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: folder.appendingPathComponent("agent-1/summary.json"))) as? [String: Any])
        #expect(PushbenchBinary.int(agent, "requests", "sent") == 3_000)
        #expect(PushbenchBinary.int(agent, "segment", "index") == 1)
        #expect(((agent["host"] as? String) ?? "").isEmpty == false)
        // compare takes a merged run as it takes any run: a verdict (0 or 1), not bad input.
        let c = try PushbenchBinary.run(["compare", folder.appendingPathComponent("single").path, folder.appendingPathComponent("merged").path])
        #expect(c.status == 0 || c.status == 1, "\(c.err)")
    }
}
