import Foundation
import CAllocCounter
import Dispatch
import Synchronization
import Testing
@testable import PushMetrics

/// Deterministic generator so failures reproduce (SplitMix64).
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Value distributions used to test percentiles: random and adversarial.
enum Distributions {
    static func all() -> [(String, [Int64])] {
        var rng = SeededRandom(seed: 42)
        let uniform = (0..<20_000).map { _ in Int64.random(in: 1...50_000, using: &rng) }
        // Log-uniform over 1 µs … 1 hour: every bucket magnitude gets samples.
        let hugeRange = (0..<20_000).map { _ in Int64(exp(Double.random(in: 0...log(3_600_000_000.0), using: &rng))) }
        let allEqual = [Int64](repeating: 1_234_567, count: 5_001)
        let twoSpikes = [Int64](repeating: 150, count: 9_900) + [Int64](repeating: 2_500_000, count: 100)
        // Latency-like: a body near 1 ms and a long tail.
        let tail = (0..<30_000).map { _ -> Int64 in
            let u = Double.random(in: 0.000001..<1, using: &rng)
            return Int64(800 + 200 * -log(u) + (u < 0.01 ? 50_000 / u : 0))
        }
        let small = [Int64]([3, 1, 2])
        let withZeros = [Int64](repeating: 0, count: 10) + (1...90).map { Int64($0) * 1000 }
        let extremes: [Int64] = [1, 3_600_000_000, 1, 3_600_000_000, 2_048, 2_049, 4_095, 4_096]
        return [("uniform", uniform), ("huge range", hugeRange), ("all equal", allEqual), ("two spikes", twoSpikes),
                ("latency tail", tail), ("three values", small), ("zeros", withZeros), ("extremes", extremes)]
    }

    static let percentiles: [Double] = [0, 0.1, 1, 10, 25, 33.3, 50, 66.6, 75, 90, 95, 99, 99.5, 99.9, 99.99, 99.999, 100]
}

@Suite struct HdrHistogramTests {
    @Test func layoutMatchesHdrHistogramForMicrosecondsToOneHour() {
        let h = HdrHistogram.latencyMicroseconds()
        // Figures from HdrHistogram (Python hdrh: bucket_count, sub_bucket_count, counts_len).
        #expect(h.bucketCount == 22)
        #expect(h.subBucketCount == 2048)
        #expect(h.countsLength == 23_552)
        let cases: [(Int64, Int64, Int64, Int)] = [
            (0, 0, 0, 0), (1, 1, 1, 1), (2047, 2047, 2047, 2047), (2048, 2048, 2049, 2048), (2049, 2048, 2049, 2048),
            (4095, 4094, 4095, 3071), (4096, 4096, 4099, 3072), (1_000_000, 999_936, 1_000_447, 11_169),
            (3_600_000_000, 3_598_712_832, 3_600_809_983, 23_220),
        ]
        for (v, lo, hi, idx) in cases {
            #expect(h.lowestEquivalentValue(v) == lo, "lowest(\(v))")
            #expect(h.highestEquivalentValue(v) == hi, "highest(\(v))")
            #expect(h.countsIndex(for: v) == idx, "index(\(v))")
            #expect(h.valueFromIndex(idx) == lo, "valueFromIndex(\(idx))")
        }
    }

    @Test func percentilesMatchBruteForceOverSortedSamples() {
        for (name, values) in Distributions.all() {
            let h = HdrHistogram.latencyMicroseconds()
            for v in values { h.record(v) }
            let sorted = values.sorted()
            #expect(h.totalCount == Int64(values.count), "\(name)")
            for p in Distributions.percentiles {
                let rank = max(1, Int((p * Double(sorted.count)) / 100 + 0.5))
                let sample = sorted[min(rank, sorted.count) - 1]
                let expected = p == 0 ? h.lowestEquivalentValue(sample) : h.highestEquivalentValue(sample)
                let got = h.valueAtPercentile(p)
                #expect(got == expected, "\(name) p\(p): got \(got), want \(expected) (sample \(sample))")
                // Whatever the bucket, the reported value is within 0.1% of the exact sample.
                #expect(Double(abs(got - sample)) <= max(Double(sample) * 0.001, 0), "\(name) p\(p): \(got) vs exact \(sample)")
            }
            #expect(h.min == h.lowestEquivalentValue(sorted.first!), "\(name) min")
            #expect(h.max == h.highestEquivalentValue(sorted.last!), "\(name) max")
            let exactMean = Double(values.reduce(0, +)) / Double(values.count)
            #expect(abs(h.mean - exactMean) <= exactMean * 0.001 + 0.5, "\(name) mean \(h.mean) vs \(exactMean)")
            let variance = values.reduce(0.0) { $0 + (Double($1) - exactMean) * (Double($1) - exactMean) } / Double(values.count)
            #expect(abs(h.standardDeviation - variance.squareRoot()) <= variance.squareRoot() * 0.002 + exactMean * 0.001 + 0.5,
                    "\(name) stddev \(h.standardDeviation) vs \(variance.squareRoot())")
        }
    }

    @Test func emptyHistogramReportsZeros() {
        let h = HdrHistogram.latencyMicroseconds()
        #expect(h.valueAtPercentile(50) == 0 && h.min == 0 && h.max == 0 && h.mean == 0 && h.standardDeviation == 0)
        #expect(h.percentileTicks().isEmpty)
    }

    @Test func outOfRangeValuesAreClampedAndCounted() {
        let h = HdrHistogram.latencyMicroseconds()
        h.record(-5)
        h.record(10_000_000_000)
        h.record(100)
        #expect(h.totalCount == 3)
        #expect(h.clampedCount == 2)
        #expect(h.min == 0)
        #expect(h.max == h.highestEquivalentValue(3_600_000_000))
    }

    @Test func perThreadHistogramsMergeToTheWhole() {
        var rng = SeededRandom(seed: 7)
        let values = (0..<40_000).map { _ in Int64.random(in: 0...5_000_000, using: &rng) }
        let whole = HdrHistogram.latencyMicroseconds()
        let parts = (0..<4).map { _ in HdrHistogram.latencyMicroseconds() }
        for (i, v) in values.enumerated() {
            whole.record(v)
            parts[i % 4].record(v)
        }
        let merged = HdrHistogram.latencyMicroseconds()
        for p in parts { merged.add(p) }
        #expect(merged.hasSameCounts(as: whole))
        #expect(merged.min == whole.min && merged.max == whole.max)
        for p in Distributions.percentiles { #expect(merged.valueAtPercentile(p) == whole.valueAtPercentile(p)) }
        // A different layout merges value by value.
        let coarse = try! HdrHistogram(lowestDiscernibleValue: 1, highestTrackableValue: 10_000_000_000, significantDigits: 2)
        coarse.add(whole)
        #expect(coarse.totalCount == whole.totalCount)
    }

    @Test func threadsRecordIntoTheirOwnHistogramsAndMergeAtTheEnd() {
        var rng = SeededRandom(seed: 99)
        let values = (0..<80_000).map { _ in Int64.random(in: 0...2_000_000, using: &rng) }
        let threads = 4
        // EncodedHistogram is the Sendable form in which a finished histogram leaves its thread.
        let results = Mutex<[EncodedHistogram?]>(Array(repeating: nil, count: threads))
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            let h = HdrHistogram.latencyMicroseconds()
            for i in stride(from: t, to: values.count, by: threads) { h.record(values[i]) }
            let encoded = EncodedHistogram(h)
            results.withLock { $0[t] = encoded }
        }
        let merged = HdrHistogram.latencyMicroseconds()
        for e in results.withLock({ $0 }) { merged.add(e!.decode()) }
        let whole = HdrHistogram.latencyMicroseconds()
        for v in values { whole.record(v) }
        #expect(merged.hasSameCounts(as: whole))
        #expect(merged.valueAtPercentile(99.9) == whole.valueAtPercentile(99.9))
    }

    @Test func recordingAllocatesNothing() {
        let h = HdrHistogram.latencyMicroseconds()
        func run() -> UInt64 {
            pb_alloc_reset()
            var v: Int64 = 1
            for _ in 0..<100_000 {
                h.record(v)
                h.recordNanoseconds(UInt64(v) &* 1_000)
                v = (v &* 31 &+ 7) % 3_700_000_000
            }
            h.reset()
            return pb_alloc_count()
        }
        _ = run()
        let best = (0..<3).map { _ in run() }.min()!
        #expect(pb_alloc_counter_active() != 0)
        #expect(best == 0, "record() allocated \(best) times in 200k calls")
    }

    @Test func percentileTicksFollowJavasHalfDistanceSpacing() {
        let h = HdrHistogram.latencyMicroseconds()
        for v in 1...100_000 { h.record(Int64(v)) }
        let inverse = h.percentileTicks().prefix(12).map { (1 / (1 - $0.percentile / 100) * 100).rounded() / 100 }
        #expect(inverse == [1.00, 1.11, 1.25, 1.43, 1.67, 2.00, 2.22, 2.50, 2.86, 3.33, 4.00, 4.44])
        let ticks = h.percentileTicks()
        #expect(ticks.last?.percentile == 100)
        #expect(ticks.last?.totalCount == 100_000)
        #expect(ticks.last?.value == h.max)
    }
}
