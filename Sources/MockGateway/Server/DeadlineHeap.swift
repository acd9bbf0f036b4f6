/// A min-heap of elements by deadline, first in first out among equal deadlines: what a gateway loop
/// holds back until its latency has passed. Its storage grows to the largest backlog and is kept, so
/// steady state allocates nothing (the elements live in manually managed memory, not an array).
///
/// ```swift
/// var heap = DeadlineHeap<Int>(capacity: 1024)
/// if heap.insert(7, deadline: now + 2_000_000) { timer.arm(heap.nextDeadline!) }   // new earliest
/// while let due = heap.popDue(now: now) { send(due) }
/// ```
struct DeadlineHeap<Element>: ~Copyable {
    private struct Entry {
        var deadline: UInt64
        var sequence: UInt64
        var element: Element
    }

    private var entries: UnsafeMutablePointer<Entry>
    private var capacity: Int
    /// Elements held.
    private(set) var count = 0
    /// Insertion counter: the tie-break that keeps equal deadlines in arrival order.
    private var sequence: UInt64 = 0

    /// An empty heap with room for `capacity` elements before it grows.
    init(capacity: Int) {
        self.capacity = max(capacity, 1)
        entries = .allocate(capacity: self.capacity)
    }

    deinit {
        entries.deinitialize(count: count)
        entries.deallocate()
    }

    var isEmpty: Bool { count == 0 }

    /// The earliest deadline held, or nil when empty.
    var nextDeadline: UInt64? { count == 0 ? nil : entries[0].deadline }

    /// Adds `element`, due at `deadline`. True when it is now the earliest (a timer must move up).
    @discardableResult
    mutating func insert(_ element: Element, deadline: UInt64) -> Bool {
        if count == capacity { grow() }
        sequence &+= 1
        let seq = sequence
        // Sift up a hole from the end instead of swapping: each step moves one parent down.
        var i = count
        while i > 0 {
            let parent = (i - 1) / 2
            guard Self.before(deadline, seq, entries[parent].deadline, entries[parent].sequence) else { break }
            (entries + i).moveInitialize(from: entries + parent, count: 1)
            i = parent
        }
        (entries + i).initialize(to: Entry(deadline: deadline, sequence: seq, element: element))
        count += 1
        return i == 0
    }

    /// Removes and returns the earliest element if it is due at `now` (deadline ≤ now), else nil.
    mutating func popDue(now: UInt64) -> Element? {
        guard count > 0, entries[0].deadline <= now else { return nil }
        let top = entries.move()
        count -= 1
        if count > 0 {
            let last = (entries + count).move()
            // Sift the last entry down from the root's hole.
            var i = 0
            while true {
                let l = 2 * i + 1
                if l >= count { break }
                var m = l
                let r = l + 1
                if r < count && Self.before(entries[r].deadline, entries[r].sequence, entries[l].deadline, entries[l].sequence) {
                    m = r
                }
                guard Self.before(entries[m].deadline, entries[m].sequence, last.deadline, last.sequence) else { break }
                (entries + i).moveInitialize(from: entries + m, count: 1)
                i = m
            }
            (entries + i).initialize(to: last)
        }
        return top.element
    }

    /// Drops every element (the storage is kept).
    mutating func removeAll() {
        entries.deinitialize(count: count)
        count = 0
    }

    @inline(__always)
    private static func before(_ d1: UInt64, _ s1: UInt64, _ d2: UInt64, _ s2: UInt64) -> Bool {
        d1 < d2 || (d1 == d2 && s1 < s2)
    }

    private mutating func grow() {
        let bigger = UnsafeMutablePointer<Entry>.allocate(capacity: capacity * 2)
        bigger.moveInitialize(from: entries, count: count)
        entries.deallocate()
        entries = bigger
        capacity *= 2
    }
}
