import Testing
@testable import LoadGenerator

@Suite struct TokenSetTests {
    @Test func insertingCountsEachTokenOnce() {
        var set = TokenSet(capacity: 130)
        let added = [set.insert(3), set.insert(64), set.insert(129), set.insert(64)]
        #expect(added == [true, true, true, false])
        #expect(set.count == 3 && !set.isFull)
        #expect(set.contains(3) && set.contains(64) && set.contains(129) && !set.contains(4))
    }

    /// With every token but one in the set, the search lands on the one left from any starting index
    /// (it wraps over the last word's padding bits).
    @Test func theSearchFindsTheLastAbsentTokenFromAnyStart() {
        for (capacity, absent) in [(1, 0), (70, 0), (70, 69), (130, 64), (64, 63)] {
            var set = TokenSet(capacity: capacity)
            for i in 0..<capacity where i != absent { set.insert(i) }
            for start in 0..<capacity {
                #expect(set.nextAbsent(from: start) == absent, "capacity \(capacity) start \(start)")
            }
        }
    }

    @Test func theSearchTakesTheFirstAbsentTokenAtOrAfterTheStart() {
        var set = TokenSet(capacity: 200)
        for i in 10..<150 { set.insert(i) }
        #expect(set.nextAbsent(from: 9) == 9)
        #expect(set.nextAbsent(from: 10) == 150)
        #expect(set.nextAbsent(from: 199) == 199)
        set.insert(199)
        #expect(set.nextAbsent(from: 199) == 0)
    }

    @Test func aUnionCountsATokenPrunedByTwoThreadsOnce() {
        var a = TokenSet(capacity: 100), b = TokenSet(capacity: 100)
        a.insert(1); a.insert(70)
        b.insert(70); b.insert(99)
        a.formUnion(b)
        #expect(a.count == 3 && a.contains(1) && a.contains(70) && a.contains(99))
        var none = TokenSet(capacity: 0)
        none.formUnion(a)
        #expect(none == a)
        a.formUnion(TokenSet(capacity: 0))
        #expect(a.count == 3)
    }
}

@Suite struct DriverStatsTests {
    private func stats(inFlight: Int, backlog: Int, opened: Int, peer: Int?, pruned: [Int]) -> DriverStats {
        var s = DriverStats()
        s.cpuUser = 1; s.cpuSystem = 0.5; s.involuntarySwitches = 2
        s.maxBacklog = backlog; s.blocked = 3; s.maxInFlight = inFlight
        s.connections.opened = opened; s.connections.goaways = 1; s.connections.lost = 1; s.connections.connectFailures = 1
        s.connections.peerMaxStreams = peer
        s.pruned = TokenSet(capacity: 10)
        for t in pruned { s.pruned.insert(t) }
        return s
    }

    @Test func threadsAddTheirInFlightPeaksAndRoundsKeepTheHigher() {
        let a = stats(inFlight: 40, backlog: 5, opened: 2, peer: nil, pruned: [1, 2])
        let b = stats(inFlight: 30, backlog: 9, opened: 3, peer: 100, pruned: [2, 3])
        var threads = DriverStats()
        threads.merge(a, concurrent: true)
        threads.merge(b, concurrent: true)
        #expect(threads.maxInFlight == 70)
        #expect(threads.maxBacklog == 9 && threads.blocked == 6)
        #expect(threads.cpuUser == 2 && threads.cpuSystem == 1 && threads.involuntarySwitches == 4)
        #expect(threads.connections.opened == 5 && threads.connections.goaways == 2 && threads.connections.lost == 2)
        #expect(threads.connections.connectFailures == 2 && threads.connections.peerMaxStreams == 100)
        #expect(threads.pruned.count == 3)
        var rounds = DriverStats()
        rounds.merge(a, concurrent: false)
        rounds.merge(b, concurrent: false)
        #expect(rounds.maxInFlight == 40)
        #expect(rounds.connections.opened == 5)
        var lower = stats(inFlight: 1, backlog: 0, opened: 1, peer: 3, pruned: [])
        lower.merge(b, concurrent: true)
        #expect(lower.connections.peerMaxStreams == 3)
    }
}
