import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `pushbench pipeline --slo` and `--log` through a pass-through relay (nghttpx) as the service: the
/// pipeline metrics judged, exit 6 on the one set to fail, a log line per front-door request and per push.
@Suite(.serialized) struct PipelineObjectiveTests {
    @Test func pipelineObjectivesAndLog() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let egress = PipelineServiceTests.freePort()
        let relay = try PassThroughRelay(egress: egress, dir: dir, tlsFront: true, tlsBack: true, backendConnections: 2)
        defer { relay.stop() }
        let front = relay.port, cert = try #require(relay.cert)
        let request = dir.appendingPathComponent("apns.http").path
        try PipelineRunTests.apnsRequest.write(toFile: request, atomically: true, encoding: .utf8)
        let log = dir.appendingPathComponent("front-door.csv").path
        let junit = dir.appendingPathComponent("junit.xml").path
        let r = try PushbenchBinary.run(["pipeline", "--target", "https://127.0.0.1:\(front)", "--cacert", cert, "--request", request,
                                         "--egress-listen", "127.0.0.1:\(egress)", "--rps", "2000", "--requests", "4000",
                                         "--connections", "2", "--out", dir.path, "--quiet",
                                         "--slo", "lost_rate<=0", "--slo", "duplicate_rate<=0", "--slo", "e2e_p99<10s",
                                         "--slo", "e2e_p50<1us", "--slo", "p99<10s", "--log", log, "--junit", junit])
        #expect(r.status == 6, "e2e_p50<1us cannot hold: \(r.out)\n\(r.err)")
        let s = try PushbenchBinary.summary(dir)
        let o = try #require(s["objectives"] as? [String: Any])
        let results = try #require(o["results"] as? [[String: Any]])
        let byName = Dictionary(uniqueKeysWithValues: results.map { ($0["objective"] as? String ?? "", $0) })
        for (name, held) in [("lost_rate<=0", true), ("duplicate_rate<=0", true), ("e2e_p99<10s", true), ("e2e_p50<1us", false), ("p99<10s", true)] {
            #expect(byName[name]?["passed"] as? Bool == held, "\(name): \(byName[name] ?? [:])")
        }
        #expect(byName["lost_rate<=0"]?["measured"] as? Double == 0)
        #expect((byName["e2e_p50<1us"]?["measured"] as? Double ?? 0) >= 1)
        #expect(r.out.contains("FAIL  e2e_p50<1us"))
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 8_001, "a header, a line per front-door request and one per push")
        #expect(lines.filter { $0.hasPrefix("request,") }.count == 4_000 && lines.filter { $0.hasPrefix("arrival,") }.count == 4_000)
        #expect(PushbenchBinary.int(s, "request_log", "written") == 8_000 && PushbenchBinary.int(s, "request_log", "arrivals") == 4_000)
        #expect(try String(contentsOfFile: junit, encoding: .utf8).contains("<testcase name=\"e2e_p50&lt;1us\""))
    }
}
