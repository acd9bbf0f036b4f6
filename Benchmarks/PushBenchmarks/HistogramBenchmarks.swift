import CAllocCounter
import PushMetrics
#if canImport(Glibc)
import Glibc
#endif

/// `pushbench-benchmarks histogram [--records N]`: ns and allocations per HdrHistogram record, next to
/// two peers measured in the same run on the same values (a bare counter increment, the floor, and
/// appending to a reserved array, the naive way to keep samples), plus the per-interval costs
/// (merge, V2 encode, percentile query). Exit status: 0 fine, 1 recording allocated, 2 bad input.
func runHistogramBenchmarks(_ arguments: [String]) -> Int32 {
    var records = 5_000_000
    var i = 0
    while i < arguments.count {
        switch arguments[i] {
        case "--records" where i + 1 < arguments.count:
            guard let n = Int(arguments[i + 1]), n >= 1_000, n <= 1_000_000_000 else {
                print("pushbench-benchmarks histogram: --records: '\(arguments[i + 1])' is not a whole number in 1000...1000000000")
                return 2
            }
            records = n
            i += 2
        case "-h", "--help":
            print("USAGE: pushbench-benchmarks histogram [--records N]   (default 5000000)")
            return 0
        default:
            print("pushbench-benchmarks histogram: unknown argument '\(arguments[i])' (see --help)")
            return 2
        }
    }

    // Latency-like values in µs: a body around 1 ms and a long tail, precomputed so the loop
    // measures recording, not the generator.
    let valueCount = 1 << 16
    var values = [Int64](repeating: 0, count: valueCount)
    var seed: UInt64 = 0x1234_5678
    for k in 0..<valueCount {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let u = Double(seed >> 11) / Double(1 << 53)
        values[k] = Int64(700 + 300 * -log(max(u, 1e-12)) + (u < 0.001 ? 40_000 / max(u, 1e-6) : 0))
    }

    let h = HdrHistogram.latencyMicroseconds()
    var floorCounts = [Int64](repeating: 0, count: 1 << 16)
    var samples: [Int64] = []
    samples.reserveCapacity(records)

    func measure(_ body: () -> Void) -> (ns: Double, allocs: UInt64) {
        var best = Double.infinity
        var bestAllocs = UInt64.max
        for _ in 0..<3 {
            pb_alloc_reset()
            let t0 = monotonicNanoseconds()
            body()
            let t1 = monotonicNanoseconds()
            best = min(best, Double(t1 - t0))
            bestAllocs = min(bestAllocs, pb_alloc_count())
        }
        return (best, bestAllocs)
    }

    let mask = valueCount - 1
    // Warm up (page in the counts arrays, runtime metadata).
    for k in 0..<valueCount { h.record(values[k]) }
    h.reset()

    let hdr = measure {
        h.reset()
        for k in 0..<records { h.record(values[k & mask]) }
    }
    let floor = measure {
        floorCounts.withUnsafeMutableBufferPointer { c in
            for k in 0..<records { c[Int(values[k & mask]) & 0xFFFF] &+= 1 }
        }
    }
    let append = measure {
        samples.removeAll(keepingCapacity: true)
        for k in 0..<records { samples.append(values[k & mask]) }
    }
    blackHole(floorCounts[1] &+ Int64(samples.count) &+ h.totalCount)

    let perInterval = 200
    let other = h.copy()
    let merge = measure { for _ in 0..<perInterval { other.add(h) } }
    var encodedBytes = 0
    let encode = measure { for _ in 0..<perInterval { encodedBytes = EncodedHistogram(h).bytes.count } }
    var p = Int64(0)
    let query = measure { for _ in 0..<perInterval { p &+= h.valueAtPercentile(99.9) } }
    blackHole(p)

    let n = Double(records)
    print("histogram recording, \(records) values (µs layout: 1 µs … 1 h, 3 digits, \(h.countsLength) counts), best of 3:")
    print(String(format: "  HdrHistogram.record      %6.2f ns/record  %.3f allocs/record", hdr.ns / n, Double(hdr.allocs) / n))
    print(String(format: "  peer: counter increment  %6.2f ns/record  (HdrHistogram = %.2fx)", floor.ns / n, hdr.ns / floor.ns))
    print(String(format: "  peer: append to array    %6.2f ns/record  (HdrHistogram = %.2fx)", append.ns / n, hdr.ns / append.ns))
    print(String(format: "per-interval costs (one histogram of %lld values):", h.totalCount))
    print(String(format: "  add (merge)              %8.1f µs   %.1f allocs", merge.ns / Double(perInterval) / 1000, Double(merge.allocs) / Double(perInterval)))
    print(String(format: "  V2 encode (zlib)         %8.1f µs   %d bytes", encode.ns / Double(perInterval) / 1000, encodedBytes))
    print(String(format: "  valueAtPercentile(99.9)  %8.1f µs", query.ns / Double(perInterval) / 1000))
    if hdr.allocs > 0 {
        print("FAIL: HdrHistogram.record allocated \(hdr.allocs) times (budget 0)")
        return 1
    }
    return 0
}

private func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

@inline(never)
private func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
