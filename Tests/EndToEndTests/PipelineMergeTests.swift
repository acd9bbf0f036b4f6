import Foundation
import Testing

/// Two agents of one pipeline run (`--segment 0/2`, `1/2`, one start time), each with its own egress
/// and its own copy of the example service, merged with `pushbench merge`: the pipeline counts add up,
/// and the merged end-to-end histogram holds every measured push of both.
@Suite(.serialized) struct PipelineMergeTests {
    @Test func segmentsOfAPipelineRunMergeIntoOne() throws {
        let dir = PushbenchBinary.tempDir("pushbench-pipeline-merge")
        defer { try? FileManager.default.removeItem(at: dir) }
        let bin = try #require(PushbenchBinary.url, "build the pushbench binary first (swift build --build-tests)")
        let startAt = String(Int(Date().timeIntervalSince1970) + 6)
        var agents: [(process: Process, service: PipelineServiceTests.Service, out: URL)] = []
        defer { for a in agents { a.service.stop() } }
        for index in 0..<2 {
            let egress = PipelineServiceTests.freePort()
            let ca = dir.appendingPathComponent("ca-\(index).pem").path
            let service = try PipelineServiceTests.Service(egress: egress, ca: ca, dir: dir, [])
            let out = dir.appendingPathComponent("agent-\(index)")
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
            p.arguments = ["90", bin.path, "pipeline", "--target", "http://127.0.0.1:\(service.port)",
                           "--request", PipelineServiceTests.example("notify-fanout.http"), "--egress-listen", "127.0.0.1:\(egress)",
                           "--tls-cert-out", ca, "--rps", "200", "--duration", "3s", "--warmup", "1s", "--drain", "3s",
                           "--segment", "\(index)/2", "--start-at", startAt, "--out", out.path, "--quiet"]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            agents.append((p, service, out))
        }
        for a in agents { a.process.waitUntilExit() }
        for a in agents { #expect(a.process.terminationStatus == 0, "an agent exited \(a.process.terminationStatus): \(a.service.text)") }
        let merged = dir.appendingPathComponent("merged")
        let m = try PushbenchBinary.run(["merge", agents[0].out.appendingPathComponent("latest").path,
                                         agents[1].out.appendingPathComponent("latest").path, "--out", merged.path])
        #expect(m.status == 0, "\(m.err)")
        let parts = try agents.map { try PushbenchBinary.summary($0.out)["pipeline"] as? [String: Any] ?? [:] }
        let data = try Data(contentsOf: merged.appendingPathComponent("summary.json"))
        let summary = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let whole = try #require(summary["pipeline"] as? [String: Any])
        for key in ["expected", "delivered", "lost", "duplicated", "unexpected"] {
            #expect(PushbenchBinary.int(whole, key) == parts.map { PushbenchBinary.int($0, key) }.reduce(0, +), "\(key)")
        }
        // 600 measured requests of 3 pushes each, every one delivered.
        #expect(PushbenchBinary.int(whole, "expected") == 1800 && PushbenchBinary.int(whole, "delivered") == 1800)
        #expect(PushbenchBinary.int(whole, "end_to_end_latency_us", "count") == 1800)
        #expect(PushbenchBinary.int(whole, "by_route", "apns", "received")
                == parts.map { PushbenchBinary.int($0, "by_route", "apns", "received") }.reduce(0, +))
        for file in ["e2e_latency.hgrm", "e2e_latency.hlog", "pipeline.csv"] {
            #expect(FileManager.default.fileExists(atPath: merged.appendingPathComponent(file).path), "\(file)")
        }
        let csv = try String(contentsOf: merged.appendingPathComponent("pipeline.csv"), encoding: .utf8)
        let apns = csv.split(separator: "\n").dropFirst().map { Int($0.split(separator: ",")[2]) ?? 0 }.reduce(0, +)
        // pipeline.csv counts pushes by when they arrive: every measured push, and the pushes of the
        // warm-up's last requests that reach the egress once the measured phase has begun.
        #expect((1800...1830).contains(apns), "pushes in the merged pipeline.csv's measured seconds: \(apns)")
    }
}
