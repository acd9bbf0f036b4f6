/// A set of token indexes in `0..<capacity`, one bit each: the tokens answered as gone
/// (`LoadConfiguration.pruneGoneTokens`). Inserting, testing and finding the next token not in the set
/// allocate nothing; the words are allocated once, at `init`.
///
/// ```swift
/// var gone = TokenSet(capacity: 70)
/// gone.insert(3)
/// gone.nextAbsent(from: 3)   // 4
/// ```
public struct TokenSet: Sendable, Equatable {
    /// One past the highest index the set can hold.
    public let capacity: Int
    /// Members in the set.
    public private(set) var count = 0
    // Bit i % 64 of word i / 64 is index i; the last word's bits at or above `capacity` stay clear.
    private var words: [UInt64]

    /// An empty set for indexes `0..<capacity`.
    init(capacity: Int) {
        precondition(capacity >= 0)
        self.capacity = capacity
        words = Array(repeating: 0, count: (capacity + 63) / 64)
    }

    /// Whether every index is in the set.
    var isFull: Bool { count == capacity }

    /// Whether `index` is in the set.
    @inline(__always)
    public func contains(_ index: Int) -> Bool {
        words[index >> 6] & (UInt64(1) << UInt64(index & 63)) != 0
    }

    /// Adds `index`; returns false when it was already there.
    @discardableResult @inline(__always)
    public mutating func insert(_ index: Int) -> Bool {
        precondition(index >= 0 && index < capacity, "token index \(index) out of 0..<\(capacity)")
        let bit = UInt64(1) << UInt64(index & 63)
        guard words[index >> 6] & bit == 0 else { return false }
        words[index >> 6] |= bit
        count += 1
        return true
    }

    /// The first index at or after `index`, wrapping past the end, that is not in the set. The set must
    /// not be full.
    @inline(__always)
    func nextAbsent(from index: Int) -> Int {
        precondition(!isFull, "every token is in the set")
        var word = index >> 6
        // Absent bits of the first word at or above `index`'s bit.
        var absent = ~words[word] & (~UInt64(0) << UInt64(index & 63))
        while true {
            if absent != 0 {
                let i = word << 6 | absent.trailingZeroBitCount
                if i < capacity { return i }
                // Past the last index (the padding bits of the last word): wrap to the start.
                word = 0
                absent = ~words[0]
                continue
            }
            word += 1
            if word == words.count { word = 0 }
            absent = ~words[word]
        }
    }

    /// Adds every member of `other`. An empty set of capacity 0 (pruning off) takes `other` whole.
    mutating func formUnion(_ other: TokenSet) {
        if capacity == 0 { self = other; return }
        if other.capacity == 0 { return }
        precondition(capacity == other.capacity, "token sets over \(capacity) and \(other.capacity) tokens")
        count = 0
        for i in words.indices {
            words[i] |= other.words[i]
            count += words[i].nonzeroBitCount
        }
    }
}
