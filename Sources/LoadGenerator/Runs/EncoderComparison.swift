import Foundation
import PushMetrics
import PushPayload
import PushVocabulary
#if canImport(Glibc)
import Glibc
#endif

// Encoder A/B in one invocation (docs/nightly.md): the variants take turns in short rounds, round robin,
// against the same target, so whatever else the machine is doing (other builds, thermal drift, a noisy
// neighbour) falls on every variant alike. Each round is an ordinary `LoadRun`; a variant's rounds are
// merged exactly (histograms added bucket by bucket, counts summed, per-second intervals laid end to end).

/// One round of an encoder A/B run.
public struct ComparisonRound: Sendable, Equatable {
    /// Position in the run (0-based).
    public var index: Int
    /// Index of the round's variant in the list given.
    public var variant: Int
    /// The variant's own round number (0-based).
    var pass: Int
    /// Measured time of the round in ns (ignored when `requests` is set).
    public var durationNs: UInt64
    /// Measured requests of the round (`--requests`), nil for a duration.
    public var requests: Int?
    /// Warm-up before the measured phase: the variant's first round only.
    public var warmupNs: UInt64

    /// Creates a round.
    init(index: Int, variant: Int, pass: Int, durationNs: UInt64, requests: Int? = nil, warmupNs: UInt64 = 0) {
        self.index = index
        self.variant = variant
        self.pass = pass
        self.durationNs = durationNs
        self.requests = requests
        self.warmupNs = warmupNs
    }
}

/// The order of an A/B run: round robin over the variants, each round at most one round length, until
/// every variant has the whole measured time (or request count).
public enum ComparisonSchedule {
    /// Default round length: 1 s per variant per turn.
    public static let defaultRoundNs: UInt64 = 1_000_000_000
    /// Environment variable that overrides the round length (`250ms`, `2s`), for short tests.
    public static let roundEnvironmentVariable = "PUSHBENCH_AB_ROUND"

    /// Rounds of at most `roundNs` for each of `variants` until each has `durationNs` of measured time:
    /// A B C A B C … ; the last pass holds the remainder. Each variant's first round carries `warmupNs`.
    public static func rounds(variants: Int, durationNs: UInt64, roundNs: UInt64,
                              warmupNs: UInt64 = 0) -> [ComparisonRound] {
        precondition(variants > 0 && roundNs > 0)
        var out: [ComparisonRound] = []
        var done: UInt64 = 0, pass = 0
        while done < durationNs {
            let length = min(roundNs, durationNs - done)
            for v in 0..<variants {
                out.append(ComparisonRound(index: out.count, variant: v, pass: pass, durationNs: length,
                                           warmupNs: pass == 0 ? warmupNs : 0))
            }
            done += length
            pass += 1
        }
        return out
    }

    /// Rounds of at most `perRound` requests for each of `variants` until each has sent `requests`.
    public static func rounds(variants: Int, requests: Int, perRound: Int, warmupNs: UInt64 = 0) -> [ComparisonRound] {
        precondition(variants > 0 && perRound > 0)
        var out: [ComparisonRound] = []
        var done = 0, pass = 0
        while done < requests {
            let n = min(perRound, requests - done)
            for v in 0..<variants {
                out.append(ComparisonRound(index: out.count, variant: v, pass: pass, durationNs: 0, requests: n,
                                           warmupNs: pass == 0 ? warmupNs : 0))
            }
            done += n
            pass += 1
        }
        return out
    }

    /// A positive duration with its unit (`250ms`, `1.5s`, `1m30s`) in ns; nil when the text is not one.
    public static func parseDuration(_ text: String) -> UInt64? {
        guard let d = try? Quantity.duration(text, bareNumber: .refused), d.nanoseconds > 0 else { return nil }
        return UInt64(d.nanoseconds)
    }
}

/// What one variant measured over all its rounds.
public struct VariantRun {
    /// The encoder.
    public var variant: EncoderVariant
    /// All rounds merged: counts summed, histograms added, intervals laid end to end, CPU summed.
    public var result: LoadResult
    /// Rounds it ran.
    public var rounds: Int
    /// Requests the driver threads handed to the transport in those rounds (warm-up and retries
    /// included): the work their CPU time paid for.
    public var pushes: Int
    /// CPU seconds of the whole process during this variant's rounds (the embedded gateway included).
    public var processCPUSeconds: Double
    /// Each round's own figures, in order: the spread between rounds shows whether a difference between
    /// variants is larger than the noise.
    public var perRound: [RoundFigures] = []

    /// CPU seconds (user + system) of the driver threads during this variant's rounds.
    public var driverCPUSeconds: Double { result.stats.cpuUser + result.stats.cpuSystem }

    /// Driver-thread CPU seconds per million pushes: the client's cost that an encoder changes.
    public var cpuSecondsPerMillion: Double? {
        pushes > 0 ? driverCPUSeconds / Double(pushes) * 1e6 : nil
    }
}

/// One round's figures for one variant.
public struct RoundFigures: Sendable, Equatable {
    /// Position of the round in the run.
    public var index: Int
    /// Completed requests per measured second in this round.
    public var achievedRPS: Double
    /// Corrected latency p50, p99 and p99.9 of this round, µs.
    public var p50: Int64, p99: Int64, p999: Int64
    /// Driver-thread CPU seconds per million pushes in this round.
    public var cpuSecondsPerMillion: Double?
}

/// The outcome of an A/B run.
public struct EncoderComparisonResult {
    /// One entry per variant, in the order given.
    public var variants: [VariantRun]
    /// The rounds that ran, in order.
    public var rounds: [ComparisonRound]
    /// True when the run was stopped early (Ctrl-C); every round that ran is kept.
    public var interrupted: Bool
}

/// Runs encoder variants in interleaved rounds against one target (``ComparisonSchedule``).
///
/// ```swift
/// let schedule = ComparisonSchedule.rounds(variants: 3, durationNs: 10_000_000_000, roundNs: 1_000_000_000)
/// let ab = try EncoderComparison.run(config, variants: [.zerocopy, .copy, .foundation], schedule: schedule,
///                                    roundEnded: { round in print("round", round.index, "done") })
/// for v in ab.variants { print(v.variant, v.result.latency.valueAtPercentile(99), v.cpuSecondsPerMillion ?? 0) }
/// ```
public enum EncoderComparison {
    /// Runs `schedule` (round `r` uses `variants[r.variant]`), each round a ``LoadRun`` of `base` with that
    /// encoder. `roundStarted` is called before each round and `roundEnded` after it (a caller attributes
    /// what it counts between the two, such as a gateway's requests, to the round's variant); `progress`
    /// and `shouldStop` as in ``LoadRun``.
    /// A stop ends the run after the current round. Throws when a round cannot reach the target.
    public static func run(_ base: LoadConfiguration, variants: [EncoderVariant], schedule: [ComparisonRound],
                           roundStarted: (ComparisonRound) -> Void = { _ in },
                           roundEnded: (ComparisonRound) -> Void = { _ in },
                           progress: (LiveSnapshot, Double) -> Void = { _, _ in },
                           shouldStop: () -> Bool = { false }) throws(LoadRunError) -> EncoderComparisonResult {
        var runs = variants.map { v in
            VariantRun(variant: v, result: LoadResult(measuredStart: Date()), rounds: 0, pushes: 0, processCPUSeconds: 0)
        }
        var done: [ComparisonRound] = []
        var interrupted = false
        for round in schedule {
            if shouldStop() { interrupted = true; break }
            roundStarted(round)
            var config = base
            config.encoder = variants[round.variant]
            config.durationNs = round.durationNs
            config.requests = round.requests
            config.warmupNs = round.warmupNs
            let cpuBefore = processCPU()
            let r = try LoadRun.run(config, progress: progress, shouldStop: shouldStop)
            roundEnded(round)
            var run = runs[round.variant]
            run.processCPUSeconds += processCPU() - cpuBefore
            let pushes = r.measured.sent + r.warmup.sent + r.measured.retries + r.warmup.retries
            run.pushes += pushes
            run.perRound.append(RoundFigures(
                index: round.index,
                achievedRPS: r.measuredSeconds > 0 ? Double(r.measured.completed) / r.measuredSeconds : 0,
                p50: r.latency.valueAtPercentile(50), p99: r.latency.valueAtPercentile(99), p999: r.latency.valueAtPercentile(99.9),
                cpuSecondsPerMillion: pushes > 0 ? (r.stats.cpuUser + r.stats.cpuSystem) / Double(pushes) * 1e6 : nil))
            run.result.absorb(r, first: run.rounds == 0)
            run.rounds += 1
            runs[round.variant] = run
            done.append(round)
            if r.interrupted { interrupted = true; break }
        }
        if interrupted {
            for i in runs.indices { runs[i].result.interrupted = true }
        }
        return EncoderComparisonResult(variants: runs, rounds: done, interrupted: interrupted)
    }

    static func processCPU() -> Double {
        var u = rusage()
        getrusage(RUSAGE_SELF.rawValue, &u)
        return Double(u.ru_utime.tv_sec) + Double(u.ru_utime.tv_usec) / 1e6
            + Double(u.ru_stime.tv_sec) + Double(u.ru_stime.tv_usec) / 1e6
    }
}

extension LoadResult {
    /// Adds one more round of the same variant. Its per-second intervals continue where this variant's
    /// measured time so far ends (whole seconds, so rounds shorter than a second share a row).
    mutating func absorb(_ r: LoadResult, first: Bool) {
        if first { measuredStart = r.measuredStart }
        let offset = Int(measuredSeconds.rounded(.down))
        let shifted = r.intervals.map { i in
            var moved = i
            moved.second += offset
            return moved
        }
        merge(measured: r.measured, warmup: r.warmup, latency: r.latency, serviceTime: r.serviceTime,
              intervals: shifted, stats: r.stats, concurrent: false)
        measuredSeconds += r.measuredSeconds
        // The host's share, over this variant's rounds only: the steal of the minutes it ran in.
        if let s = r.stealSeconds { stealSeconds = (stealSeconds ?? 0) + s }
        if first { loadAverageAtStart = r.loadAverageAtStart }
        interrupted = interrupted || r.interrupted
    }
}
