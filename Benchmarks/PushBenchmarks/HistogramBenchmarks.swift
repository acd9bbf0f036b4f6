// `pushbench-benchmarks histogram`: ns and allocations per HdrHistogram record, next to two peers
// measured in the same interleaved rounds on the same values (a bare counter increment, the floor,
// and appending to a reserved array, the naive way to keep samples), plus the per-interval costs
// (merge, V2 encode, percentile query). ns are the median over rounds of thread CPU time
// (BenchmarkKit). Exit status: 0 fine, 1 recording allocated (budget 0), 2 bad input.

import BenchmarkKit
import Foundation
import PushMetrics

#if canImport(Glibc)
import Glibc
#endif

private let histogramBenchUsage = """
    USAGE: pushbench-benchmarks histogram [--rounds N] [--round-ms MS]

    Times HdrHistogram.record (µs layout: 1 µs … 1 h, 3 significant digits) against a bare counter
    increment and an array append on the same latency-like values, then merge, V2 encode and a
    percentile query of a one-interval histogram. Exits 1 if record() allocates.
    """

private func pad(_ s: String) -> String { s + String(repeating: " ", count: max(0, 26 - s.count)) }

func runHistogramBenchmarks(_ arguments: [String]) -> Int32 {
    var rounds = 5
    var roundMilliseconds = 20
    var i = 0
    while i < arguments.count {
        let a = arguments[i]
        switch a {
        case "--rounds", "--round-ms":
            guard i + 1 < arguments.count, let n = Int(arguments[i + 1]), n > 0, n <= 10_000 else {
                print("pushbench-benchmarks histogram: \(a) needs a whole number in 1...10000")
                return 2
            }
            if a == "--rounds" { rounds = n } else { roundMilliseconds = n }
            i += 2
        case "-h", "--help":
            print(histogramBenchUsage)
            return 0
        default:
            print("pushbench-benchmarks histogram: unknown option '\(a)'\n\n\(histogramBenchUsage)")
            return 2
        }
    }

    // Latency-like values in µs (a body around 1 ms and a long tail), precomputed so the loops
    // measure recording, not the generator. 64 Ki values: the cost of reading them is in every case.
    let valueCount = 1 << 16
    let mask = valueCount - 1
    var values = [Int64](repeating: 0, count: valueCount)
    var seed: UInt64 = 0x1234_5678
    for k in 0..<valueCount {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let u = Double(seed >> 11) / Double(UInt64(1) << 53)
        values[k] = Int64(700 + 300 * -log(max(u, 1e-12)) + (u < 0.001 ? 40_000 / max(u, 1e-6) : 0))
    }

    let h = HdrHistogram.latencyMicroseconds()
    let floorCounts = UnsafeMutablePointer<Int64>.allocate(capacity: 1 << 16)
    floorCounts.initialize(repeating: 0, count: 1 << 16)
    defer { floorCounts.deallocate() }
    var samples: [Int64] = []
    samples.reserveCapacity(50_000_000)
    let roundNs = UInt64(roundMilliseconds) * 1_000_000

    let perRecord = values.withUnsafeBufferPointer { v in
        Benchmark.runInterleaved([
            ("HdrHistogram.record", { n in
                h.reset()
                for k in 0..<n { h.record(v[k & mask]) }
                blackHole(h.totalCount)
            }),
            ("peer: counter increment", { n in
                for k in 0..<n { floorCounts[Int(v[k & mask]) & 0xFFFF] &+= 1 }
                blackHole(floorCounts[1])
            }),
            ("peer: append to array", { n in
                samples.removeAll(keepingCapacity: true)
                for k in 0..<n { samples.append(v[k & mask]) }
                blackHole(samples.count)
            }),
        ], rounds: rounds, roundNanoseconds: roundNs, maxIterations: 50_000_000)
    }

    // One interval's histogram (a second at ~65k rps) for the per-interval costs.
    h.reset()
    for v in values { h.record(v) }
    let other = h.copy()
    var encodedBytes = 0
    let perInterval = Benchmark.runInterleaved([
        ("add (merge)", { n in for _ in 0..<n { other.add(h) } }),
        ("V2 encode (zlib)", { n in for _ in 0..<n { encodedBytes = EncodedHistogram(h).bytes.count } }),
        ("valueAtPercentile(99.x)", { n in
            var p: Int64 = 0
            // A varying argument, so the optimizer cannot hoist the query out of the loop.
            for k in 0..<n { p &+= h.valueAtPercentile(99 + Double(k & 7) * 0.125) }
            blackHole(p)
        }),
    ], rounds: rounds, roundNanoseconds: roundNs, maxIterations: 100_000)

    let record = perRecord[0]
    print("histogram: \(h.countsLength) counts (µs, 1 µs … 1 h, 3 digits); median thread CPU of \(rounds) interleaved rounds")
    for r in perRecord {
        let ratio = r.name == record.name ? "" : String(format: "   (HdrHistogram.record = %.2fx)", record.nsPerOp / r.nsPerOp)
        print("  " + pad(r.name) + String(format: " %7.2f ns/record  %.3f allocs/record", r.nsPerOp, r.allocsPerOp) + ratio)
    }
    print("per interval (one histogram of \(valueCount) values):")
    for r in perInterval {
        let extra = r.name.hasPrefix("V2") ? "  \(encodedBytes) bytes" : ""
        print("  " + pad(r.name) + String(format: " %9.2f µs   %.1f allocs", r.nsPerOp / 1000, r.allocsPerOp) + extra)
    }
    let violations = Budgets(limits: ["histogram.record.allocs_per_record": 0])
        .violations(["histogram.record.allocs_per_record": record.allocsPerOp])
    for v in violations { print("FAIL: \(v)") }
    return violations.isEmpty ? 0 : 1
}
