import Foundation
import PushMetrics
import PushVocabulary
import Testing
@testable import PushbenchCLI

/// The dashboard's status line and final figures, from the merged seconds: totals summed, the whole
/// run's percentiles from every second's histogram added, and per agent what was missing or late.
@Suite struct MergedRunTotalsTests {
    static func second(_ n: Int, _ latencies: [Int64], missing: [String], errors: [String: Int64]? = nil) -> LiveSecond {
        let h = HdrHistogram.latencyMicroseconds()
        for v in latencies { h.record(v) }
        let c = Int64(latencies.count), failed = errors?.values.reduce(0, +) ?? 0
        return LiveSecond(interval: TimelineInterval(second: n, sent: c, completed: c, succeeded: c - failed, failed: failed, transportErrors: 0,
                                                     latency: h, serviceTime: h, target: c),
                          startUnix: 1_000, errors: errors, inFlight: 3, connections: nil, peerStreamLimit: nil, busy: nil, stage: nil,
                          agents: Int64(2 - missing.count), missingAgents: missing)
    }

    @Test func theFinalFiguresAreTheWholeRunsAndNameWhatWasMissing() throws {
        var t = MergedRunTotals(agents: ["a:1", "b:2"])
        let first = (1...1_000).map { Int64($0) }, second = (1...1_000).map { Int64($0) * 100 }
        t.add(Self.second(0, first, missing: []))
        t.add(Self.second(1, second, missing: ["b:2"], errors: ["Unregistered": 4]))
        let whole = HdrHistogram.latencyMicroseconds()
        for v in first + second { whole.record(v) }
        let f = try JSONValue.parse(t.finalJSON(label: "2 agents", late: [0, 3], gaveUp: [false, true], interrupted: false))
        #expect(f["seconds"]?.integer == 2)
        #expect(f["requests"]?["sent"]?.integer == 2_000 && f["requests"]?["failed"]?.integer == 4)
        #expect(f["requests"]?["by_reason"]?["Unregistered"]?.integer == 4)
        #expect(f["latency_us"]?["p99"]?.integer == whole.valueAtPercentile(99), "every request's p99, not the seconds' average")
        #expect(f["latency_us"]?["max"]?.integer == whole.max)
        #expect(f["throughput"]?["achieved_rps"]?.number == 1_000)
        #expect(f["agents"]?["b:2"]?["missing_seconds"]?.integer == 1 && f["agents"]?["b:2"]?["late_seconds"]?.integer == 3)
        #expect(f["agents"]?["a:1"]?["missing_seconds"]?.integer == 0)
        // b:2 stopped answering and was given up on: the final figures name it.
        #expect(f["silent_agents"]?.array?.compactMap(\.string) == ["b:2"])
        #expect(f["agents"]?["b:2"]?["gave_up"] == .bool(true) && f["agents"]?["a:1"]?["gave_up"] == .bool(false))
    }

    @Test func theStatusLineSaysWhoAnswers() throws {
        var t = MergedRunTotals(agents: ["a:1", "b:2", "c:3"])
        let waiting = try JSONValue.parse(t.liveJSON(now: 2_000, answering: [nil, nil, nil], done: false))
        #expect(waiting["phase"]?.string == "waiting" && waiting["elapsed_s"]?.number == 0 && waiting["p99_us"] == nil)
        t.add(Self.second(0, [100, 200], missing: []))
        let v = try JSONValue.parse(t.liveJSON(now: 1_002.5, answering: [true, false, true], done: false))
        #expect(v["phase"]?.string == "measure" && v["elapsed_s"]?.number == 2.5)
        #expect(v["sent"]?.integer == 2 && v["in_flight"]?.integer == 3 && v["target_rps"]?.integer == 2)
        #expect(v["agents"]?.integer == 2 && v["agents_expected"]?.integer == 3)
        #expect(v["missing_agents"]?.array?.compactMap(\.string) == ["b:2"])
        #expect(v["p99_us"]?.integer == 200)
    }
}
