import Foundation
@testable import PushMetrics
import Testing

/// `pushbench merge` on agents' folders that do not make one run: a missing, repeated or mismatched
/// segment is bad input, exit 2 with a line naming it, and nothing is written.
@Suite struct MergeRefusalTests {
    private static let t0: Int64 = 1_795_953_600_000_000_000

    /// A one-second agent folder of segment `index`/`count`.
    private static func agent(_ index: Int, of count: Int, rps: Int = 1_000, t0: Int64 = t0, in root: URL, name: String) throws -> String {
        var r = RunRecord(label: "agent", startedAt: Date(timeIntervalSince1970: Double(t0) / 1e9),
                          config: RunConfig(rps: rps, durationSeconds: 1, connections: 1))
        let h = HdrHistogram.latencyMicroseconds()
        h.record(800)
        r.intervals = [TimelineInterval(second: 0, sent: 1, completed: 1, succeeded: 1, failed: 0, transportErrors: 0,
                                        latency: h, serviceTime: h)]
        r.latency.add(h)
        r.serviceTime.add(h)
        r.counts.sent = 1
        r.counts.completed = 1
        r.counts.succeeded = 1
        r.counts.byStatus["200"] = 1
        r.measuredSeconds = 1
        r.details.segment = RunSegment(index: index, count: count, payloadDigest: "p", seed: 1)
        r.details.start = RunStart(t0UnixNs: t0, requested: true, lateOK: false, firstSendAfterT0Micros: 10, firstSendLateMicros: 10)
        r.details.host = name
        let folder = root.appendingPathComponent(name)
        try ResultsWriter.writeFolder(r, runID: ResultsWriter.runID(startedAt: r.startedAt, label: "agent"), to: folder)
        return folder.path
    }

    @Test func segmentsThatDoNotMakeOneRunAreExit2() throws {
        let root = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let a0 = try Self.agent(0, of: 3, in: root, name: "a0")
        let a1 = try Self.agent(1, of: 3, in: root, name: "a1")
        let a2 = try Self.agent(2, of: 3, in: root, name: "a2")
        let again = try Self.agent(1, of: 3, in: root, name: "again")
        let fast = try Self.agent(2, of: 3, rps: 2_000, in: root, name: "fast")
        let later = try Self.agent(2, of: 3, t0: Self.t0 + 1_000_000_000, in: root, name: "later")
        let cases: [([String], String)] = [
            ([a0, a2], "segment 1/3 is missing"),
            ([a0, a1, again, a2], "segment 1/3 is given 2 times: "),
            ([a0, a1, fast], "the agents differ in rate: "),
            ([a0, a1, later], "the agents differ in t0: "),
        ]
        for (k, (folders, message)) in cases.enumerated() {
            let out = root.appendingPathComponent("merged-\(k)")
            let r = try PushbenchBinary.run(["merge"] + folders + ["--out", out.path])
            #expect(r.status == 2, "\(folders): \(r.out) \(r.err)")
            #expect(r.err.hasPrefix("pushbench merge: the agents do not make one run: "), "\(r.err)")
            #expect(r.err.contains(message), "\(r.err)")
            #expect(r.err.hasSuffix("(--allow-partial merges them anyway)\n"), "\(r.err)")
            #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("summary.json").path), "nothing written")
        }
        // The three segments make one run.
        let whole = root.appendingPathComponent("whole")
        let ok = try PushbenchBinary.run(["merge", a0, a1, a2, "--out", whole.path])
        #expect(ok.status == 0, "\(ok.err)")
        #expect(FileManager.default.fileExists(atPath: whole.appendingPathComponent("summary.json").path))
    }
}
