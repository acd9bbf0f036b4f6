import Foundation
import Testing

/// `pushbench capacity --dashboard`: the steps on one timeline, each marked with its verdict, and
/// capacity.json as the final event.
@Suite(.serialized) struct DashboardCapacityTests {
    @Test func aCapacitySearchIsOneTimelineWithEachStepMarked() throws {
        let bin = try #require(PushbenchBinary.url)
        let folder = PushbenchBinary.tempDir("pushbench-dashboard")
        defer { try? FileManager.default.removeItem(at: folder) }
        let search = try DashboardBrowserTests.Child(
            bin, ["capacity", "--slo", "p99<1s", "--min", "200", "--max", "400", "--step-duration", "2s", "--warmup", "1s",
                  "--connections", "1", "--threads", "1", "--quiet", "--dashboard", "127.0.0.1:0",
                  "--out", folder.appendingPathComponent("results").path], in: folder, name: "capacity")
        defer { search.kill() }
        let port = try DashboardBrowserTests.dashboardPort(search)
        let viewer = try DashboardLimitTests.Viewer(port: port)
        #expect(viewer.read(for: 90) { $0.contains("event: final\n") && $0.hasSuffix("\n\n") })
        #expect(search.wait(30))
        #expect(search.process.terminationStatus == 0, "\(search.stderr)")
        let text = viewer.text
        #expect(text.contains("event: mark\ndata: {\"second\":2,\"text\":\"step 1 200 rps: held\"}\n"), "\(text.prefix(3000))")
        #expect(text.contains("\"text\":\"step 2 400 rps: held\""))
        // The second step continues the timeline after the first's two seconds and the warm-up between them.
        let seconds = text.components(separatedBy: "event: second\nid: ").dropFirst().compactMap { Int($0.prefix { $0.isNumber }) }
        #expect(seconds.count == 4 && seconds[0] == 0 && seconds[1] == 1 && seconds[2] > 2 && seconds[3] == seconds[2] + 1, "\(seconds)")
        #expect(text.contains("\"stage\":\"step 2: 400 rps\""))
        let final = text.components(separatedBy: "event: final\n").last ?? ""
        let json = final.split(separator: "\n").map { $0.hasPrefix("data: ") ? String($0.dropFirst(6)) : "" }.joined(separator: "\n")
        let capacity = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(capacity["kind"] as? String == "capacity")
        #expect(((capacity["answer"] as? [String: Any])?["rps"] as? Int) == 400)
    }
}
