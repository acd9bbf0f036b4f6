// BenchmarkKit: a tiny in-house harness (docs/architecture.md): calibrate, warm up, time a few
// rounds with the monotonic clock, count allocations with CAllocCounter, and check committed
// allocation budgets. Times are reported; allocations gate.

import CAllocCounter
import Foundation
import PushVocabulary

#if canImport(Glibc)
import Glibc
#endif

/// Keeps `value` alive and opaque to the optimizer, so the measured work is not removed.
@inline(never)
public func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// Nanoseconds from the monotonic clock.
@inline(__always)
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// CPU time of the calling thread, in ns. On a machine shared with other work it leaves out the
/// time this thread was preempted, which wall time would count.
@inline(__always)
public func threadCPUNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// One benchmark's figures.
public struct BenchmarkResult: Sendable {
    /// The benchmark's name.
    public var name: String
    /// Operations per timed round.
    public var iterations: Int
    /// Timed rounds.
    public var rounds: Int
    /// Median over the rounds of the thread CPU time per operation, in ns.
    public var nsPerOp: Double
    /// Fastest round's thread CPU time per operation, in ns.
    public var nsPerOpMin: Double
    /// Median over the rounds of the wall-clock time per operation, in ns.
    public var wallNsPerOp: Double
    /// Allocations per operation (the lowest round).
    public var allocsPerOp: Double
    /// Bytes allocated per operation (same round as `allocsPerOp`).
    public var allocatedBytesPerOp: Double
}

/// Runs benchmarks.
///
///     let r = Benchmark.run("zerocopy/default") { n in for i in 0..<n { blackHole(encode(i)) } }
///     print(r.nsPerOp, r.allocsPerOp)
public enum Benchmark {
    /// Measures `body(n)`, which must perform `n` operations. Calibrates `n` so one round takes
    /// about `roundNanoseconds`, warms up with one round, then times `rounds` rounds.
    public static func run(_ name: String, rounds: Int = 5, roundNanoseconds: UInt64 = 20_000_000,
                           maxIterations: Int = 50_000_000, _ body: (Int) -> Void) -> BenchmarkResult {
        withoutActuallyEscaping(body) { body in
            runInterleaved([(name, body)], rounds: rounds, roundNanoseconds: roundNanoseconds, maxIterations: maxIterations)[0]
        }
    }

    /// Measures several benchmarks with their rounds interleaved (round 1 of each, then round 2 of
    /// each, …), so a change in machine load hits all of them alike and their ratios stay fair.
    public static func runInterleaved(_ cases: [(name: String, body: (Int) -> Void)], rounds: Int = 5,
                                      roundNanoseconds: UInt64 = 20_000_000,
                                      maxIterations: Int = 50_000_000) -> [BenchmarkResult] {
        // Calibrate each (doubles as warm-up: the first calls pay for metadata and lazy setup).
        var sizes: [Int] = []
        for c in cases {
            var n = 1
            while true {
                let t0 = threadCPUNanoseconds()
                c.body(n)
                let dt = threadCPUNanoseconds() - t0
                if dt >= roundNanoseconds / 4 || n >= maxIterations {
                    let scaled = Double(n) * Double(roundNanoseconds) / Double(max(dt, 1))
                    n = max(1, min(maxIterations, Int(scaled)))
                    break
                }
                n *= 2
            }
            c.body(n)  // warm-up round at the final size
            sizes.append(n)
        }
        var times = [[Double]](repeating: [], count: cases.count)
        var walls = [[Double]](repeating: [], count: cases.count)
        var allocs = [Double](repeating: .infinity, count: cases.count)
        var bytes = [Double](repeating: .infinity, count: cases.count)
        for _ in 0..<max(1, rounds) {
            for (i, c) in cases.enumerated() {
                let n = sizes[i]
                pb_alloc_reset()
                let w0 = monotonicNanoseconds()
                let t0 = threadCPUNanoseconds()
                c.body(n)
                let dt = threadCPUNanoseconds() - t0
                let w = monotonicNanoseconds() - w0
                let a = Double(pb_alloc_count()) / Double(n)
                if a < allocs[i] {
                    allocs[i] = a
                    bytes[i] = Double(pb_alloc_bytes()) / Double(n)
                }
                times[i].append(Double(dt) / Double(n))
                walls[i].append(Double(w) / Double(n))
            }
        }
        return cases.indices.map { i in
            let t = times[i].sorted(), w = walls[i].sorted()
            return BenchmarkResult(name: cases[i].name, iterations: sizes[i], rounds: t.count, nsPerOp: t[t.count / 2],
                                   nsPerOpMin: t[0], wallNsPerOp: w[w.count / 2],
                                   allocsPerOp: allocs[i], allocatedBytesPerOp: bytes[i])
        }
    }
}

/// A budget file that is not JSON: `path:line:column: reason`.
public struct BudgetFileError: Error, CustomStringConvertible {
    /// The message.
    public var description: String
}

/// Committed per-benchmark budgets (Benchmarks/Thresholds/*.json): nested JSON objects whose leaves
/// are numbers, read as dotted paths, e.g. `encoders.zerocopy.default.allocs_per_msg = 0`.
public struct Budgets: Sendable {
    /// Path → maximum allowed value.
    public var limits: [String: Double]

    /// Budgets from a JSON file.
    public init(path: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let object: JSONValue
        do { object = try JSONValue.parse(Array(data)) } catch { throw BudgetFileError(description: "\(path):\(error)") }
        var out: [String: Double] = [:]
        func walk(_ prefix: String, _ value: JSONValue) {
            if case .object(let members) = value {
                for (k, v) in members where !k.hasPrefix("_") { walk(prefix.isEmpty ? k : "\(prefix).\(k)", v) }
            } else if let n = value.number {
                out[prefix] = n
            }
        }
        walk("", object)
        limits = out
    }

    /// Budgets given directly.
    public init(limits: [String: Double]) { self.limits = limits }

    /// Messages for every measured value above its budget (empty when all are within budget).
    /// A small epsilon absorbs rounding (allocations per op are averages).
    public func violations(_ measured: [String: Double]) -> [String] {
        limits.keys.sorted().compactMap { key in
            guard let limit = limits[key] else { return nil }
            guard let value = measured[key] else { return "\(key): budget \(limit) but not measured" }
            return value > limit + 1e-9 ? "\(key): \(value) is over the budget of \(limit)" : nil
        }
    }
}
