import Foundation
import Testing
@testable import PushMetrics

/// Seconds of several agents merged as they arrive: lined up by wall time, counts summed, histograms
/// added so the percentiles are the whole run's; a second waits a bounded time for an agent and then
/// names it missing; a late second is counted, not merged; memory stays bounded.
@Suite struct LiveMergeTests {
    static let start = 1_796_400_000.004

    static func second(_ n: Int, start: Double = start, latencies: [Int64], errors: [String: Int64]? = nil,
                       busy: Double? = nil) -> LiveSecond {
        let lat = HdrHistogram.latencyMicroseconds(), svc = HdrHistogram.latencyMicroseconds()
        for v in latencies { lat.record(v); svc.record(max(1, v / 2)) }
        let c = Int64(latencies.count)
        let failed = errors?.values.reduce(0, +) ?? 0
        let interval = TimelineInterval(second: n, sent: c, completed: c, succeeded: c - failed, failed: failed, transportErrors: 0,
                                        latency: lat, serviceTime: svc, target: c)
        return LiveSecond(interval: interval, startUnix: start, errors: errors, inFlight: 2, connections: 4, peerStreamLimit: 100,
                          busy: busy)
    }

    @Test func secondsLineUpOnTheNearestWholeSecondOfWallTime() {
        var m = LiveMerge(agents: ["a", "b", "c"])
        // a and b share --start-at (a few ms apart); c began its measured phase a second later.
        m.add(Self.second(3, latencies: [100]), from: 0)
        m.add(Self.second(3, start: Self.start + 0.012, latencies: [200]), from: 1)
        m.add(Self.second(2, start: Self.start + 0.996, latencies: [300]), from: 2)
        let out = m.take(now: Self.start)
        #expect(out.count == 1)
        #expect(out.first?.interval.second == 3)
        #expect(out.first?.interval.completed == 3)
        #expect(out.first?.startUnix == Self.start, "merged seconds count from the earliest start")
        #expect(out.first?.agents == 3 && out.first?.missingAgents == [])
        #expect(m.mergedIndex(of: Self.second(0, start: Self.start - 2.4, latencies: [])) == -2)
    }

    @Test func anAgentThatStartedEarlierThanTheFirstSeenMovesTheCountOntoItsStart() {
        // b started 0.7 s before a but is seen after a, and after a take that gave nothing out: the count
        // starts at b's start, as `pushbench merge` shifts run folders from the earliest start (a's
        // seconds one later, round(0.7) = 1), and none of b's seconds is late.
        var m = LiveMerge(agents: ["a", "b"], wait: 3)
        let early = Self.start - 0.7
        m.add(Self.second(0, latencies: [100]), from: 0)
        m.add(Self.second(1, latencies: [100]), from: 0)
        let awaiting = m.take(now: Self.start + 1.5)
        #expect(awaiting.isEmpty, "b is awaited")
        let added = (0...2).map { n in m.add(Self.second(n, start: early, latencies: [200]), from: 1) }
        #expect(added == [true, true, true], "none of b's seconds is late")
        #expect(m.startUnix == early && m.lateSeconds == [0, 0])
        let out = m.take(now: Self.start + 1.5)
        #expect(out.map(\.interval.second) == [0, 1, 2])
        #expect(out.allSatisfy { $0.startUnix == early && $0.missingAgents == [] })
        // Merged second 0 is b's alone (a had not started: not expected, not missing); then a's 0 with b's 1.
        #expect(out.map(\.agents) == [1, 2, 2] && out.map(\.interval.completed) == [1, 2, 2])
        #expect(out.first?.interval.latency.decode().max ?? 0 >= 199)
        // Once a second went out the count stays: a start seen later, earlier still, is shifted onto it
        // (its second 3 lands on 2, gone out already: late).
        let stays = m.add(Self.second(3, start: early - 1.2, latencies: [300]), from: 1)
        #expect(!stays)
        #expect(m.startUnix == early && m.lateSeconds == [0, 1])
    }

    @Test func theMergedP99IsTheWholeRunsNotAnAverage() {
        // Three agents, one slow: the merged p99 is what one histogram of every request says.
        let lists: [[Int64]] = [(1...980).map { Int64($0) }, (1...990).map { Int64($0) * 2 }, (1...30).map { 50_000 + Int64($0) * 997 }]
        var m = LiveMerge(agents: ["a", "b", "c"])
        for (i, l) in lists.enumerated() { m.add(Self.second(0, latencies: l, errors: ["BadDeviceToken": Int64(i)]), from: i) }
        let out = m.take(now: Self.start)
        let merged = try! #require(out.first)
        let whole = HdrHistogram.latencyMicroseconds()
        for v in lists.joined() { whole.record(v) }
        let h = merged.interval.latency.decode()
        #expect(h.totalCount == 2_000)
        for p in [50.0, 90, 99, 99.9] { #expect(h.valueAtPercentile(p) == whole.valueAtPercentile(p), "p\(p)") }
        let each = lists.map { l -> Int64 in
            let one = HdrHistogram.latencyMicroseconds()
            for v in l { one.record(v) }
            return one.valueAtPercentile(99)
        }
        #expect(h.valueAtPercentile(99) != each.reduce(0, +) / 3, "not an average of the agents' p99")
        #expect(merged.interval.sent == 2_000 && merged.interval.target == 2_000)
        #expect(merged.errors == ["BadDeviceToken": 3])
        #expect(merged.interval.failed == 3 && merged.interval.succeeded == 1_997)
        #expect(merged.inFlight == 6 && merged.connections == 12 && merged.peerStreamLimit == 100)
    }

    @Test func anAgentThatStopsAnsweringIsNamedMissingAfterTheWait() {
        var m = LiveMerge(agents: ["10.0.0.5:8088", "10.0.0.6:8088"], wait: 3)
        for s in 0...1 {
            m.add(Self.second(s, latencies: [100]), from: 0)
            m.add(Self.second(s, latencies: [200]), from: 1)
        }
        m.add(Self.second(2, latencies: [100]), from: 0)
        m.add(Self.second(3, latencies: [100], busy: 0.7), from: 0)
        // Seconds 0 and 1 are whole; 2 waits for the second agent until 3 s past its end.
        let whole = m.take(now: Self.start + 3), waiting = m.take(now: Self.start + 5.9)
        #expect(whole.map(\.interval.second) == [0, 1])
        #expect(waiting.isEmpty)
        let late = m.take(now: Self.start + 6)
        #expect(late.map(\.interval.second) == [2])
        #expect(late.first?.agents == 1 && late.first?.missingAgents == ["10.0.0.6:8088"])
        #expect(late.first?.interval.completed == 1)
        let next = m.take(now: Self.start + 7)
        #expect(next.map(\.interval.second) == [3] && next.first?.missingAgents == ["10.0.0.6:8088"] && next.first?.busy == 0.7)
        // Its second 2, when it comes back, is too late to merge: counted, not silently added or dropped.
        let merged = m.add(Self.second(2, latencies: [200]), from: 1)
        #expect(!merged)
        #expect(m.lateSeconds == [0, 1])
        // It picks up where the merge is: its second 4 merges as usual.
        m.add(Self.second(4, latencies: [100]), from: 0)
        let again = m.add(Self.second(4, latencies: [200]), from: 1)
        #expect(again)
        let back = m.take(now: Self.start + 5)
        #expect(back.map(\.interval.second) == [4] && back.first?.agents == 2 && back.first?.missingAgents == [])
        #expect(m.mergedSeconds == [5, 3])
    }

    @Test func aLateAgentWithinTheWaitIsMerged() {
        var m = LiveMerge(agents: ["a", "b"], wait: 3)
        m.add(Self.second(0, latencies: [100]), from: 0)
        let early = m.take(now: Self.start + 2)
        #expect(early.isEmpty, "b's second 0 is still awaited")
        m.add(Self.second(0, latencies: [5_000]), from: 1)
        let out = m.take(now: Self.start + 3.5)
        #expect(out.count == 1 && out.first?.agents == 2 && out.first?.missingAgents == [])
        #expect(out.first?.interval.latency.decode().max ?? 0 >= 4_990)
    }

    @Test func aSecondNobodySentGoesOutEmptyWithEveryAgentMissing() {
        var m = LiveMerge(agents: ["a", "b"], wait: 1)
        m.add(Self.second(0, latencies: [100]), from: 0)
        m.add(Self.second(0, latencies: [100]), from: 1)
        m.add(Self.second(2, latencies: [100]), from: 0)
        m.add(Self.second(2, latencies: [100]), from: 1)
        let out = m.take(now: Self.start + 3)
        #expect(out.map(\.interval.second) == [0, 1, 2])
        #expect(out[1].agents == 0 && out[1].missingAgents == ["a", "b"] && out[1].interval.completed == 0)
        #expect(out[1].interval.latency.decode().totalCount == 0)
    }

    @Test func anAgentThatIsDoneIsNotAwaitedAfterItsLastSecond() {
        var m = LiveMerge(agents: ["a", "b"], wait: 3)
        for s in 0...4 { m.add(Self.second(s, latencies: [100]), from: 0) }
        for s in 0...5 { m.add(Self.second(s, latencies: [100]), from: 1) }
        m.finish(agent: 0)
        #expect(!m.isComplete)
        let out = m.take(now: Self.start + 1)
        #expect(out.map(\.interval.second) == [0, 1, 2, 3, 4, 5])
        #expect(out.last?.agents == 1 && out.last?.missingAgents == [], "a said it is done: not missing")
        m.finish(agent: 1)
        #expect(m.isComplete)
    }

    @Test func anAgentGivenUpOnIsNotWaitedForAndNamedMissingInWhatItDidNotSend() {
        var m = LiveMerge(agents: ["a", "b"], wait: 3)
        for s in 0...3 { m.add(Self.second(s, latencies: [100]), from: 0) }
        m.add(Self.second(0, latencies: [100]), from: 1)
        m.finish(agent: 0)
        let first = m.take(now: Self.start + 2)
        #expect(first.map(\.interval.second) == [0], "second 1 waits for b")
        #expect(!m.isComplete, "b never said it is done")
        m.giveUp(agent: 1)
        let out = m.take(now: Self.start + 2)
        #expect(out.map(\.interval.second) == [1, 2, 3], "no second waits for b any more")
        #expect(out.allSatisfy { $0.agents == 1 && $0.missingAgents == ["b"] })
        #expect(m.isComplete)
    }

    @Test func memoryStaysBoundedWhateverTheRunsLength() {
        // One agent of two never answers and the clock stands still: nothing is overdue, yet at most
        // maxPending seconds are kept, the oldest going out with the silent agent named.
        var m = LiveMerge(agents: ["a", "b"], wait: 3, maxPending: 8)
        var emitted = 0
        for s in 0..<2_000 {
            m.add(Self.second(s, latencies: [100]), from: 0)
            let out = m.take(now: Self.start)
            emitted += out.count
            #expect(out.allSatisfy { $0.missingAgents == ["b"] })
            #expect(m.pendingCount <= 8)
        }
        #expect(emitted == 2_000 - 8)
        // With both answering and the clock moving, nothing waits beyond the second in progress.
        var both = LiveMerge(agents: ["a", "b"], wait: 3, maxPending: 8)
        for s in 0..<500 {
            both.add(Self.second(s, latencies: [100]), from: 0)
            both.add(Self.second(s, latencies: [100]), from: 1)
            let out = both.take(now: Self.start + Double(s))
            #expect(out.count == 1)
            #expect(both.pendingCount == 0)
        }
    }

    @Test func aMergedSecondReadsBackWithItsAgents() throws {
        var m = LiveMerge(agents: ["a", "b"], wait: 0)
        m.add(Self.second(0, latencies: [100]), from: 0)
        let out = try #require(m.take(now: Self.start + 1).first)
        let line = out.jsonLine()
        #expect(line.hasSuffix(",\"agents\":1,\"missing_agents\":[\"b\"]}"), "\(line)")
        #expect(try LiveSecond.parse(line: line) == out)
        #expect(throws: LiveSecond.ParseError(description: "'missing_agents' is not a list of names")) {
            try LiveSecond.parse(line: line.replacingOccurrences(of: "[\"b\"]", with: "[1]"))
        }
    }
}
