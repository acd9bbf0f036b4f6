#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A High Dynamic Range histogram with HdrHistogram's bucket layout and semantics.
///
/// Values are non-negative integers in any unit; pushbench records latencies in **microseconds**
/// with ``latencyMicroseconds()`` (1 µs … 1 hour at 3 significant digits). The layout
/// (buckets of `subBucketCount` linear sub-buckets, each bucket twice as wide as the previous),
/// `lowestEquivalentValue`, `highestEquivalentValue`, `valueAtPercentile`, mean and standard
/// deviation follow HdrHistogram (Java/C) and the Python `hdrhistogram` package, so the same
/// recorded values give the same figures in all of them.
///
/// Recording is constant time and never allocates: the counts array is allocated once in `init`.
/// The histogram is not thread-safe: record into one histogram per thread and ``add(_:)`` them at
/// the end (a finished histogram may be moved to another thread; it is deliberately not `Sendable`).
///
/// ```swift
/// let h = HdrHistogram.latencyMicroseconds()
/// h.record(1_234)               // 1.234 ms
/// h.valueAtPercentile(99)       // highest value equivalent to the 99th percentile sample
/// ```
public final class HdrHistogram {
    /// Smallest value distinguishable from 0 (HdrHistogram's `lowestDiscernibleValue`).
    let lowestDiscernibleValue: Int64
    /// Largest value that can be recorded; larger values are clamped to it and counted in ``clampedCount``.
    @usableFromInline let highestTrackableValue: Int64
    /// Decimal digits of precision kept across the whole range (1…5).
    let significantDigits: Int
    /// Number of buckets (the `Buckets` line of a .hgrm footer).
    let bucketCount: Int
    /// Linear sub-buckets per bucket (the `SubBuckets` line of a .hgrm footer).
    let subBucketCount: Int
    /// Length of the counts array.
    public let countsLength: Int

    @usableFromInline let unitMagnitude: Int
    @usableFromInline let subBucketHalfCountMagnitude: Int
    @usableFromInline let subBucketHalfCount: Int
    @usableFromInline let subBucketMask: Int64
    @usableFromInline let leadingZeroCountBase: Int
    @usableFromInline let counts: UnsafeMutablePointer<Int64>
    // The mutable scalars live in raw memory next to the counts rather than in stored properties:
    // class stored properties pay Swift's dynamic exclusivity checks on every `record` (a call each;
    // HistogramBenchmarks shows the cost); pointer accesses pay none.
    // [0] total count, [1] clamped count, [2] largest value recorded, [3] smallest non-zero value recorded.
    @usableFromInline let stats: UnsafeMutablePointer<Int64>

    /// Number of recorded values.
    public private(set) var totalCount: Int64 {
        get { stats[0] }
        set { stats[0] = newValue }
    }
    /// Values outside `0...highestTrackableValue` that were clamped into range rather than dropped.
    private(set) var clampedCount: Int64 {
        get { stats[1] }
        set { stats[1] = newValue }
    }
    // Raw extremes as recorded; the public min/max report their equivalent-range bounds.
    var maxRecorded: Int64 {
        get { stats[2] }
        set { stats[2] = newValue }
    }
    var minNonZeroRecorded: Int64 {
        get { stats[3] }
        set { stats[3] = newValue }
    }

    /// Errors raised by ``init(lowestDiscernibleValue:highestTrackableValue:significantDigits:)``.
    struct LayoutError: Error, CustomStringConvertible {
        /// What was wrong with the parameters.
        let description: String
    }

    /// Creates an empty histogram.
    /// - Parameters:
    ///   - lowestDiscernibleValue: ≥ 1; rounded down to a power of two internally, as HdrHistogram does.
    ///   - highestTrackableValue: ≥ 2 × lowestDiscernibleValue.
    ///   - significantDigits: 1…5.
    init(lowestDiscernibleValue: Int64, highestTrackableValue: Int64, significantDigits: Int) throws {
        guard lowestDiscernibleValue >= 1, lowestDiscernibleValue <= Int64(1) << 40 else {
            throw LayoutError(description: "lowestDiscernibleValue must be 1...2^40, got \(lowestDiscernibleValue)")
        }
        guard highestTrackableValue >= 2 * lowestDiscernibleValue, highestTrackableValue <= Int64.max / 2 else {
            throw LayoutError(description: "highestTrackableValue must be >= 2 * lowestDiscernibleValue and <= Int64.max/2, got \(highestTrackableValue)")
        }
        guard (1...5).contains(significantDigits) else {
            throw LayoutError(description: "significantDigits must be 1...5, got \(significantDigits)")
        }
        self.lowestDiscernibleValue = lowestDiscernibleValue
        self.highestTrackableValue = highestTrackableValue
        self.significantDigits = significantDigits

        var largestSingleUnit: Int64 = 2
        for _ in 0..<significantDigits { largestSingleUnit *= 10 }
        // ceil(log2(largestSingleUnit)) computed exactly on integers.
        let subBucketCountMagnitude = 64 - (largestSingleUnit - 1).leadingZeroBitCount
        subBucketHalfCountMagnitude = Swift.max(subBucketCountMagnitude, 1) - 1
        unitMagnitude = 63 - lowestDiscernibleValue.leadingZeroBitCount
        subBucketCount = 1 << (subBucketHalfCountMagnitude + 1)
        subBucketHalfCount = subBucketCount / 2
        subBucketMask = Int64(subBucketCount - 1) << Int64(unitMagnitude)

        var smallestUntrackable = Int64(subBucketCount) << Int64(unitMagnitude)
        var bucketsNeeded = 1
        while smallestUntrackable <= highestTrackableValue {
            if smallestUntrackable > Int64.max / 2 { bucketsNeeded += 1; break }
            smallestUntrackable <<= 1
            bucketsNeeded += 1
        }
        bucketCount = bucketsNeeded
        countsLength = (bucketCount + 1) * subBucketHalfCount
        leadingZeroCountBase = 64 - unitMagnitude - subBucketHalfCountMagnitude - 1
        counts = .allocate(capacity: countsLength)
        counts.initialize(repeating: 0, count: countsLength)
        stats = .allocate(capacity: 4)
        stats.initialize(repeating: 0, count: 4)
        stats[3] = .max
    }

    deinit {
        counts.deallocate()
        stats.deallocate()
    }

    /// The latency histogram pushbench uses everywhere: microseconds, 1 µs … 1 hour, 3 significant digits.
    public static func latencyMicroseconds() -> HdrHistogram {
        // Constant parameters known to be valid.
        try! HdrHistogram(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, significantDigits: 3)
    }

    /// An empty histogram with the same layout as this one.
    public func emptyCopy() -> HdrHistogram {
        try! HdrHistogram(lowestDiscernibleValue: lowestDiscernibleValue,
                          highestTrackableValue: highestTrackableValue,
                          significantDigits: significantDigits)
    }

    /// A deep copy.
    public func copy() -> HdrHistogram {
        let c = emptyCopy()
        c.add(self)
        return c
    }

    // MARK: Recording (hot path: constant time, no allocation)

    /// Records `value` once. Negative values record as 0 and values above ``highestTrackableValue``
    /// as that value; both are counted in ``clampedCount`` so nothing is lost silently.
    @inlinable @inline(__always)
    public func record(_ value: Int64) {
        record(value, count: 1)
    }

    /// Records `value` `count` times (see ``record(_:)`` for clamping).
    @inlinable @inline(__always)
    public func record(_ value: Int64, count: Int64) {
        var v = value
        if v < 0 || v > highestTrackableValue {
            v = v < 0 ? 0 : highestTrackableValue
            stats[1] &+= count
        }
        counts[countsIndex(for: v)] &+= count
        stats[0] &+= count
        if v > stats[2] { stats[2] = v }
        if v != 0 && v < stats[3] { stats[3] = v }
    }

    /// Records a duration given in nanoseconds into a microsecond histogram (truncating to whole µs).
    @inlinable @inline(__always)
    public func recordNanoseconds(_ ns: UInt64) {
        record(Int64(truncatingIfNeeded: ns / 1000))
    }

    /// Sets every count to zero, keeping the allocation (no allocation; usable per interval).
    public func reset() {
        counts.update(repeating: 0, count: countsLength)
        totalCount = 0
        clampedCount = 0
        maxRecorded = 0
        minNonZeroRecorded = .max
    }

    /// Adds every count of `other` into this histogram. Same layout: a straight array sum
    /// (no allocation); otherwise each bucket of `other` is re-recorded at its lowest value.
    public func add(_ other: HdrHistogram) {
        if other.totalCount == 0 { return }
        if sameLayout(as: other) {
            for i in 0..<countsLength { counts[i] &+= other.counts[i] }
            totalCount &+= other.totalCount
            clampedCount &+= other.clampedCount
            maxRecorded = Swift.max(maxRecorded, other.maxRecorded)
            minNonZeroRecorded = Swift.min(minNonZeroRecorded, other.minNonZeroRecorded)
        } else {
            for i in 0..<other.countsLength where other.counts[i] != 0 {
                record(other.valueFromIndex(i), count: other.counts[i])
            }
            clampedCount &+= other.clampedCount
        }
    }

    func setTotals(total: Int64, maxRecorded: Int64, minNonZero: Int64) {
        totalCount = total
        self.maxRecorded = maxRecorded
        minNonZeroRecorded = minNonZero
    }

    func sameLayout(as other: HdrHistogram) -> Bool {
        other.countsLength == countsLength && other.unitMagnitude == unitMagnitude
            && other.subBucketCount == subBucketCount
    }

    // MARK: Layout

    @inlinable @inline(__always)
    func bucketIndex(of value: Int64) -> Int {
        // Masking shifts and wrapping arithmetic: the inputs are in range by construction, and
        // Swift's checked forms add branches to the hot path.
        leadingZeroCountBase &- (value | subBucketMask).leadingZeroBitCount
    }

    @inlinable @inline(__always)
    func subBucketIndex(of value: Int64, bucket: Int) -> Int {
        Int(truncatingIfNeeded: value &>> Int64(truncatingIfNeeded: bucket &+ unitMagnitude))
    }

    @inlinable @inline(__always)
    func countsIndex(for value: Int64) -> Int {
        let b = bucketIndex(of: value)
        let s = subBucketIndex(of: value, bucket: b)
        return ((b &+ 1) &<< subBucketHalfCountMagnitude) &+ (s &- subBucketHalfCount)
    }

    /// The lowest value of the bucket at counts index `index`.
    func valueFromIndex(_ index: Int) -> Int64 {
        var b = (index >> subBucketHalfCountMagnitude) - 1
        var s = (index & (subBucketHalfCount - 1)) + subBucketHalfCount
        if b < 0 {
            s -= subBucketHalfCount
            b = 0
        }
        return Int64(s) << Int64(b + unitMagnitude)
    }

    /// Width of the range of values that share `value`'s bucket.
    func sizeOfEquivalentValueRange(_ value: Int64) -> Int64 {
        let b = bucketIndex(of: value)
        let s = subBucketIndex(of: value, bucket: b)
        let adjusted = s >= subBucketCount ? b + 1 : b
        return Int64(1) << Int64(unitMagnitude + adjusted)
    }

    /// The smallest value that shares `value`'s bucket.
    func lowestEquivalentValue(_ value: Int64) -> Int64 {
        let b = bucketIndex(of: value)
        let s = subBucketIndex(of: value, bucket: b)
        return Int64(s) << Int64(b + unitMagnitude)
    }

    /// The largest value that shares `value`'s bucket (what percentiles and max report).
    func highestEquivalentValue(_ value: Int64) -> Int64 {
        lowestEquivalentValue(value) + sizeOfEquivalentValueRange(value) - 1
    }

    /// The middle of `value`'s bucket (what mean and standard deviation use).
    func medianEquivalentValue(_ value: Int64) -> Int64 {
        lowestEquivalentValue(value) + sizeOfEquivalentValueRange(value) >> 1
    }

    /// Number of values recorded in `value`'s bucket.
    public func count(atValue value: Int64) -> Int64 {
        let v = Swift.min(Swift.max(value, 0), highestTrackableValue)
        return counts[countsIndex(for: v)]
    }

    // MARK: Statistics

    /// Lowest equivalent value of the smallest recorded value (0 when empty or a 0 was recorded).
    public var min: Int64 {
        if totalCount == 0 || counts[0] > 0 || minNonZeroRecorded == .max { return 0 }
        return lowestEquivalentValue(minNonZeroRecorded)
    }

    /// Highest equivalent value of the largest recorded value (0 when empty).
    public var max: Int64 {
        maxRecorded == 0 ? 0 : highestEquivalentValue(maxRecorded)
    }

    /// Mean over bucket midpoints, as HdrHistogram computes it.
    var mean: Double {
        if totalCount == 0 { return 0 }
        var total = 0.0
        for i in 0..<countsLength where counts[i] != 0 {
            total += Double(medianEquivalentValue(valueFromIndex(i))) * Double(counts[i])
        }
        return total / Double(totalCount)
    }

    /// Population standard deviation over bucket midpoints, as HdrHistogram computes it.
    var standardDeviation: Double {
        if totalCount == 0 { return 0 }
        let m = mean
        var total = 0.0
        for i in 0..<countsLength where counts[i] != 0 {
            let d = Double(medianEquivalentValue(valueFromIndex(i))) - m
            total += d * d * Double(counts[i])
        }
        return (total / Double(totalCount)).squareRoot()
    }

    /// The 1-based rank of the sample that represents `percentile`, as HdrHistogram_c and the
    /// Python package compute it: `max(1, floor(percentile × count / 100 + 0.5))`. (Java rounds
    /// up instead; the two differ by at most one sample.)
    func rank(atPercentile percentile: Double) -> Int64 {
        let p = Swift.min(Swift.max(percentile, 0), 100)
        let r = Int64((p * Double(totalCount)) / 100 + 0.5)
        return Swift.max(r, 1)
    }

    /// The highest equivalent value of the bucket holding the sample at ``rank(atPercentile:)``
    /// (the lowest equivalent value for percentile 0); 0 when empty.
    public func valueAtPercentile(_ percentile: Double) -> Int64 {
        if totalCount == 0 { return 0 }
        let target = rank(atPercentile: percentile)
        var running: Int64 = 0
        for i in 0..<countsLength {
            running &+= counts[i]
            if running >= target {
                let v = valueFromIndex(i)
                return percentile == 0 ? lowestEquivalentValue(v) : highestEquivalentValue(v)
            }
        }
        return 0
    }

    /// Non-zero buckets in value order: (highest equivalent value, count).
    func recordedValues() -> [(value: Int64, count: Int64)] {
        var out: [(value: Int64, count: Int64)] = []
        for i in 0..<countsLength where counts[i] != 0 {
            out.append((highestEquivalentValue(valueFromIndex(i)), counts[i]))
        }
        return out
    }

    /// True when both histograms hold the same count in every bucket.
    func hasSameCounts(as other: HdrHistogram) -> Bool {
        guard totalCount == other.totalCount else { return false }
        if sameLayout(as: other) {
            for i in 0..<countsLength where counts[i] != other.counts[i] { return false }
            return true
        }
        let a = recordedValues(), b = other.recordedValues()
        return a.count == b.count && zip(a, b).allSatisfy { $0.value == $1.value && $0.count == $1.count }
    }

    // MARK: Percentile distribution

    /// One row of the percentile distribution.
    struct PercentileTick: Equatable, Sendable {
        /// Highest equivalent value reached at this level.
        var value: Int64
        /// Percentile level iterated to, 0…100.
        var percentile: Double
        /// Cumulative count up to and including `value`'s bucket.
        var totalCount: Int64
    }

    /// The percentile iteration of HdrHistogram's `outputPercentileDistribution` (Java's
    /// `PercentileIterator`): levels start at 0% and each half-distance to 100% gets
    /// `ticksPerHalfDistance` evenly spaced ticks; the last tick is 100%.
    func percentileTicks(ticksPerHalfDistance: Int = 5) -> [PercentileTick] {
        var ticks: [PercentileTick] = []
        if totalCount == 0 { return ticks }
        var index = 0
        var running: Int64 = 0
        var fresh = true
        var level = 0.0
        var reachedLast = false
        let total = Double(totalCount)
        outer: while true {
            if running >= totalCount {
                if reachedLast { break }
                level = 100
                reachedLast = true
            }
            while index < countsLength {
                let c = counts[index]
                if fresh {
                    running &+= c
                    fresh = false
                }
                if c != 0 && (100.0 * Double(running)) / total >= level {
                    ticks.append(PercentileTick(value: highestEquivalentValue(valueFromIndex(index)),
                                                percentile: level, totalCount: running))
                    if level < 100 {
                        // Java truncates log2 to a whole number of half-distances, so ticks are
                        // evenly spaced within each half-distance (1.00, 1.11, 1.25 … 2.00, 2.22 …).
                        let halfDistances = Swift.min(Int64(log(100.0 / (100.0 - level)) / log(2.0)) + 1, 56)
                        let reportingTicks = Int64(ticksPerHalfDistance) * (Int64(1) << halfDistances)
                        level += 100.0 / Double(reportingTicks)
                    }
                    continue outer
                }
                index += 1
                fresh = true
            }
            break
        }
        return ticks
    }
}
