import Testing
@testable import MockGateway

/// The gateway loop's store of delayed responses: earliest deadline first, arrival order among equals.
@Suite struct DeadlineHeapTests {
    @Test func popsInDeadlineOrderAndArrivalOrderAmongEqualDeadlines() {
        var random = SeededRandom(seed: 42)
        var heap = DeadlineHeap<Int>(capacity: 4)   // grows several times
        var reference: [(deadline: UInt64, order: Int)] = []
        for order in 0..<5000 {
            let deadline = random.next() % 200   // many equal deadlines
            heap.insert(order, deadline: deadline)
            reference.append((deadline, order))
        }
        let held = heap.count
        #expect(held == 5000)
        reference.sort { $0.deadline < $1.deadline || ($0.deadline == $1.deadline && $0.order < $1.order) }
        var popped: [Int] = []
        while let x = heap.popDue(now: .max) { popped.append(x) }
        #expect(popped == reference.map(\.order))
        let empty = heap.isEmpty && heap.nextDeadline == nil
        #expect(empty)
    }

    @Test func onlyDueElementsComeOutAndTheNextDeadlineFollows() {
        var heap = DeadlineHeap<String>(capacity: 8)
        // (Each result is read into a local first: #expect cannot capture a noncopyable heap.)
        let first = heap.insert("b", deadline: 20)     // the first is the earliest
        let later = heap.insert("c", deadline: 30)
        let earlier = heap.insert("a", deadline: 10)   // a new earliest: the timer must move up
        let tie = heap.insert("a2", deadline: 10)      // equal, later: not a new earliest
        #expect(first && !later && earlier && !tie)
        var next = heap.nextDeadline
        #expect(next == 10)
        var out = [heap.popDue(now: 9), heap.popDue(now: 10), heap.popDue(now: 10), heap.popDue(now: 10)]
        #expect(out == [nil, "a", "a2", nil])
        next = heap.nextDeadline
        #expect(next == 20)
        out = [heap.popDue(now: 25), heap.popDue(now: 25)]
        #expect(out == ["b", nil])
        let left = heap.count
        #expect(left == 1)
    }

    /// Interleaved inserts and pops against a sorted list (the loop pops at each timer tick while
    /// responses keep arriving).
    @Test func interleavedInsertsAndPopsMatchASortedList() {
        var random = SeededRandom(seed: 7)
        var heap = DeadlineHeap<UInt64>(capacity: 16)
        var pending: [(deadline: UInt64, id: UInt64)] = []
        var now: UInt64 = 0
        var next: UInt64 = 0
        for _ in 0..<2000 {
            for _ in 0..<Int(random.next() % 5) {
                let deadline = now + random.next() % 1000
                heap.insert(next, deadline: deadline)
                pending.append((deadline, next))
                next += 1
            }
            now += random.next() % 300
            var got: [UInt64] = []
            while let id = heap.popDue(now: now) { got.append(id) }
            let due = pending.filter { $0.deadline <= now }
                .sorted { $0.deadline < $1.deadline || ($0.deadline == $1.deadline && $0.id < $1.id) }
            pending.removeAll { $0.deadline <= now }
            let held = heap.count
            #expect(got == due.map(\.id))
            #expect(held == pending.count)
        }
    }

    final class Tracked {
        nonisolated(unsafe) static var alive = 0
        init() { Tracked.alive += 1 }
        deinit { Tracked.alive -= 1 }
    }

    @Test func removeAllAndDeinitReleaseTheElements() {
        do {
            var heap = DeadlineHeap<Tracked>(capacity: 2)
            for d in 0..<10 { heap.insert(Tracked(), deadline: UInt64(d)) }
            #expect(Tracked.alive == 10)
            _ = heap.popDue(now: 0)
            #expect(Tracked.alive == 9)
            heap.removeAll()
            let empty = heap.isEmpty
            #expect(Tracked.alive == 0 && empty)
            for d in 0..<5 { heap.insert(Tracked(), deadline: UInt64(d)) }
            #expect(Tracked.alive == 5)
        }
        #expect(Tracked.alive == 0)
    }
}
