import CAllocCounter

/// Allocations of one call of `body` on this thread: warmed up once, then the minimum over five runs,
/// so a one-time allocation (a lazy global, a buffer's first growth) is not counted.
public func minAllocations(_ body: () -> Void) -> UInt64 {
    body()
    var best = UInt64.max
    for _ in 0..<5 {
        pb_alloc_reset()
        body()
        best = min(best, pb_alloc_count())
    }
    return best
}

/// SplitMix64: a seeded generator, so randomized tests see the same inputs in every run.
public struct SeededSplitMix {
    private var state: UInt64
    /// A generator whose whole sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }
    /// The next value.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
