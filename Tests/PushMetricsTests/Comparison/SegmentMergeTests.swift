import Foundation
import Testing
@testable import PushMetrics

/// `pushbench merge` of agents that each ran one segment of a run: exact, and refused when the segments
/// do not make one run.
@Suite struct SegmentMergeTests {
    static let t0: Int64 = 1_795_953_598_000_000_000   // Fixtures.start minus the 2 s warm-up

    /// Agent `index` of `count`: threads stand for the agent's share of the values.
    static func agent(_ index: Int, of count: Int, threads: [Int], rps: Int = 1_000, t0: Int64 = t0,
                      payload: String = "default-apns-alert") -> RunRecord {
        var r = Fixtures.record(label: "agent", threads: threads)
        r.config.rps = rps
        r.targetRPS = Double(rps) / Double(count)
        r.details.segment = RunSegment(index: index, count: count, payloadDigest: payload, seed: 1)
        r.details.start = RunStart(t0UnixNs: t0, requested: true, lateOK: false, firstSendAfterT0Micros: 40, firstSendLateMicros: 40)
        r.details.host = "agent-\(index)"
        return r
    }

    static func write(_ records: [RunRecord], in root: URL) throws -> [String] {
        try records.enumerated().map { k, r in
            let folder = root.appendingPathComponent("agent-\(k)")
            try ResultsWriter.writeFolder(r, runID: ResultsWriter.runID(startedAt: r.startedAt, label: r.label), to: folder)
            return folder.path
        }
    }

    static func refusal(_ records: [RunRecord]) throws -> String {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let paths = try write(records, in: root)
        do {
            _ = try RunMerger.mergeAgents(paths, out: root.appendingPathComponent("merged"))
            return "merged"
        } catch {
            #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("merged").path), "nothing written")
            return "\(error)".replacingOccurrences(of: root.path + "/", with: "")
        }
    }

    @Test func agentsMergeToOneHistogramOfAllTheirValues() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let whole = Fixtures.record(label: "whole", threads: [0, 1, 2])
        let paths = try Self.write([Self.agent(0, of: 3, threads: [0]), Self.agent(1, of: 3, threads: [1]),
                                    Self.agent(2, of: 3, threads: [2])], in: root)
        let out = root.appendingPathComponent("merged")
        let m = try RunMerger.mergeAgents(paths, out: out)
        #expect(m.segments?.problems == [])
        let merged = try LoadedRun.load(out.path, requireIntervals: true)
        #expect(merged.record.counts == whole.counts)
        #expect(merged.record.latency.hasSameCounts(as: whole.latency))
        for p in [50.0, 90, 99, 99.9, 100] {
            #expect(merged.record.latency.valueAtPercentile(p) == whole.latency.valueAtPercentile(p))
        }
        #expect(merged.record.intervals == TimelineInterval.merged(whole.intervals))
        let s = merged.summary
        #expect(s.value(atPath: "config.rps")?.integer == 1_000, "the run's rate, which every agent was given, not a sum")
        #expect(s.value(atPath: "throughput.target_rps")?.integer == 1_000)
        #expect(s.value(atPath: "config.agents")?.integer == 3)
        #expect(s.value(atPath: "segments.count")?.integer == 3)
        #expect(s.value(atPath: "segments.covered") == .array([.int(0), .int(1), .int(2)]))
        #expect(s.value(atPath: "segments.complete") == .bool(true))
        #expect(s.value(atPath: "start.t0_unix_ns")?.integer == Self.t0)
        // Each agent's folder said its own share.
        let a0 = try LoadedRun.load(paths[0])
        #expect(a0.summary.value(atPath: "throughput.target_rps")?.number.map { abs($0 - 333.333) < 0.001 } == true)
        #expect(a0.summary.value(atPath: "host")?.string == "agent-0")
    }

    @Test func segmentsThatDoNotMakeOneRunAreRefusedByName() throws {
        #expect(try Self.refusal([Self.agent(0, of: 3, threads: [0]), Self.agent(2, of: 3, threads: [2])])
                == "the agents do not make one run: segment 1/3 is missing (2 of 3 agents given) (--allow-partial merges them anyway)")
        #expect(try Self.refusal([Self.agent(0, of: 2, threads: [0]), Self.agent(0, of: 2, threads: [1]), Self.agent(1, of: 2, threads: [1])])
                .contains("segment 0/2 is given 2 times: agent-0, agent-1"))
        let overlap = try Self.refusal([Self.agent(0, of: 2, threads: [0]), Self.agent(1, of: 3, threads: [1])])
        #expect(overlap.contains("the agents split the run differently, so their segments overlap: agent-0 (0/2) against agent-1 (1/3)"), "\(overlap)")
        #expect(try Self.refusal([Self.agent(0, of: 2, threads: [0]), Self.agent(1, of: 2, threads: [1], rps: 2_000)])
                .contains("the agents differ in rate: "))
        let t0 = try Self.refusal([Self.agent(0, of: 2, threads: [0]), Self.agent(1, of: 2, threads: [1], t0: Self.t0 + 5_000_000_000)])
        #expect(t0.contains("the agents differ in t0: 1795953598000000000 (agent-0) against 1795953603000000000 (agent-1)")
                || t0.contains("the agents differ in t0: 1795953603000000000 (agent-1) against 1795953598000000000 (agent-0)"), "\(t0)")
        #expect(try Self.refusal([Self.agent(0, of: 2, threads: [0]), Self.agent(1, of: 2, threads: [1], payload: "9f3e")])
                .contains("the agents differ in payload: "))
        #expect(try Self.refusal([Self.agent(0, of: 2, threads: [0]), Fixtures.record(label: "plain", threads: [1])])
                == "agent-1 ran no segment (no --segment) but agent-0 did: merge the agents of one run only")
    }

    /// The absolute start of every untagged interval of a folder's latency.hlog, seconds after `base`.
    static func hlogSeconds(_ folder: URL, after base: Date) throws -> [Double] {
        let log = try IntervalLog.parse(try Fixtures.text(folder.appendingPathComponent(ResultsWriter.File.hlog)))
        return log.intervals.filter { $0.tag == nil }.map { log.baseTime + $0.startOffset - base.timeIntervalSince1970 }
    }

    @Test func agentsWhoseSecondsAreOffsetMergeAlignedOnTheGlobalT0() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        // Both agents share t0; agent 1 sent nothing in the first second (it started a second late), so its
        // .hlog intervals and timeline rows are seconds 1...10 of the run where agent 0's are 0...9.
        let a0 = Self.agent(0, of: 2, threads: [0], rps: 1_000)
        var a1 = Self.agent(1, of: 2, threads: [1], rps: 1_000)
        a1.intervals = a1.intervals.map { var i = $0; i.second += 1; return i }
        let paths = try Self.write([a0, a1], in: root)
        #expect(try Self.hlogSeconds(URL(fileURLWithPath: paths[1]), after: Fixtures.start).first == 1)
        let out = root.appendingPathComponent("merged")
        _ = try RunMerger.mergeAgents(paths, out: out)
        let merged = try LoadedRun.load(out.path, requireIntervals: true)
        #expect(merged.record.startedAt == Fixtures.start)
        #expect(merged.record.intervals == TimelineInterval.merged(a0.intervals + a1.intervals))
        let bySecond = Dictionary(uniqueKeysWithValues: merged.record.intervals.map { ($0.second, $0) })
        #expect(bySecond.keys.sorted() == Array(0...10))
        #expect(bySecond[0]?.sent == a0.intervals[0].sent, "second 0 is agent 0's alone")
        #expect(bySecond[1]?.sent == a0.intervals[1].sent + a1.intervals[0].sent)
        #expect(bySecond[10]?.sent == a1.intervals[9].sent, "second 10 is agent 1's alone")
        // The merged .hlog intervals sit on whole seconds after t0 + warm-up (summary started_at).
        #expect(try Self.hlogSeconds(out, after: Fixtures.start) == (0...10).map(Double.init))
        // timeline.csv has one row per second, aligned the same way.
        let rows = try Fixtures.text(out.appendingPathComponent(ResultsWriter.File.timeline)).split(separator: "\n").dropFirst()
        #expect(rows.count == 11)
        #expect(rows.first.map { $0.split(separator: ",")[1] } == "\(a0.intervals[0].sent)", "\(rows.first ?? "")")
        #expect(merged.record.counts.sent == a0.counts.sent + a1.counts.sent)
    }

    @Test func runsStartedApartAlignOnTheEarliestStartToTheNearestSecond() throws {
        // Runs without segments (no shared t0) started 1 s and 2.4 s after the first: their seconds move by
        // 1 and by 2 (per-second histograms cannot be split, so a fraction of a second is rounded away), and
        // nothing is lost.
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let a = Fixtures.record(label: "a", threads: [0], seconds: 3)
        var b = Fixtures.record(label: "b", threads: [1], seconds: 3)
        b.startedAt = Fixtures.start.addingTimeInterval(1)
        var c = Fixtures.record(label: "c", threads: [2], seconds: 3)
        c.startedAt = Fixtures.start.addingTimeInterval(2.4)
        let paths = try Self.write([a, b, c], in: root)
        let out = root.appendingPathComponent("merged")
        _ = try RunMerger.mergeAgents(paths, out: out)
        let merged = try LoadedRun.load(out.path, requireIntervals: true)
        func shifted(_ r: RunRecord, _ by: Int) -> [TimelineInterval] { r.intervals.map { var i = $0; i.second += by; return i } }
        #expect(merged.record.intervals == TimelineInterval.merged(a.intervals + shifted(b, 1) + shifted(c, 2)))
        #expect(merged.record.counts.sent == a.counts.sent + b.counts.sent + c.counts.sent)
        #expect(merged.record.intervals.map(\.sent).reduce(0, +) == merged.record.counts.sent)
        #expect(try Self.hlogSeconds(out, after: Fixtures.start) == (0...4).map(Double.init))
        guard case .array(let agents)? = merged.summary["merged_from"] else { Issue.record("no merged_from"); return }
        #expect(agents.compactMap { $0["offset_s"]?.integer } == [0, 1, 2])
    }

    @Test func allowPartialMergesAndSaysWhatIsMissing() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let paths = try Self.write([Self.agent(0, of: 3, threads: [0]), Self.agent(2, of: 3, threads: [2])], in: root)
        let out = root.appendingPathComponent("merged")
        let m = try RunMerger.mergeAgents(paths, out: out, allowPartial: true)
        #expect(m.segments?.missing == [1])
        let s = try LoadedRun.load(out.path).summary
        #expect(s.value(atPath: "segments.complete") == .bool(false))
        #expect(s.value(atPath: "segments.missing") == .array([.int(1)]))
        #expect(s.value(atPath: "segments.agents")?.integer == 2)
    }
}
