/// A rate that changes over time: stages over each of which the rate moves linearly from one value to
/// another (k6's ramping arrival rate), with the intended send time of every request computed exactly
/// from the integral of the rate.
///
/// ```swift
/// // 0 → 10k rps in 30 s, up to 50k in 60 s, down to 0 in 30 s (`--stages 30s:10k,60s:50k,30s:0`)
/// let s = RateSchedule(stages: [.init(seconds: 30, from: 0, to: 10_000), .init(seconds: 60, from: 10_000, to: 50_000),
///                               .init(seconds: 30, from: 50_000, to: 0)])
/// s.offset(ofRequest: 150_000)   // ns after t0 at which request 150,000 is due
/// s.dueCount(atOffset: 30_000_000_000)  // requests due in the first 30 s: 150,001
/// ```
///
/// N(τ), the requests the schedule intends by time τ, is the integral of the rate. Request g belongs to
/// the first stage whose end count exceeds g and is due at the first instant of that stage where N
/// reaches g, floored to the nanosecond: for a constant rate that is `floor(g * 1e9 / rate)`, as
/// ``Pacer``'s constant schedule, and for a linear stage the root of a quadratic. Counts are kept in
/// units of 1/(2·10⁹) request, in which every stage boundary is a whole number, and each root is found
/// in floating point and then settled with 128-bit integer comparisons, so no time ever depends on a
/// rounding carried from an earlier request or stage: a ramp of hours ends exactly where its integral
/// says.
public struct RateSchedule: Sendable, Equatable {
    /// One stage: `durationNs` long, the rate going linearly from `from` to `to` requests per second.
    /// A stage of length 0 is a step (the rate jumps to `to`).
    public struct Stage: Sendable, Equatable {
        /// Length in nanoseconds.
        public var durationNs: UInt64
        /// Requests per second at the stage's start.
        public var from: Int
        /// Requests per second at its end.
        public var to: Int

        /// A stage; see the properties.
        init(durationNs: UInt64, from: Int, to: Int) {
            self.durationNs = durationNs
            self.from = from
            self.to = to
        }

        /// A stage `seconds` long.
        init(seconds: Double, from: Int, to: Int) {
            self.init(durationNs: UInt64((seconds * 1e9).rounded()), from: from, to: to)
        }
    }

    /// The highest rate a schedule may name (the bound of `--rps`).
    static let maxRate = 10_000_000
    /// The longest a stage may be: within it, every intermediate stays inside 128 bits.
    static let maxStageNs: UInt64 = 100 * 3_600 * 1_000_000_000

    /// The stages in order.
    public let stages: [Stage]
    // stageStart[i]: ns from t0 to the start of stage i; stageStart[count] is the total length.
    private let stageStart: [UInt64]
    // units[i]: 2e9 × the requests intended before stage i (exact: a stage holds (from + to) × ns units).
    private let units: [Int128]

    /// Length of the whole schedule in ns.
    public var durationNs: UInt64 { stageStart[stages.count] }
    /// Requests the schedule intends in all: those g with N(g's time) reached before the end.
    public let totalRequests: Int64

    private static let unitsPerRequest: Int128 = 2_000_000_000

    /// A schedule of `stages` (each within ``maxRate`` and ``maxStageNs``; at least one stage longer than 0).
    public init(stages: [Stage]) {
        precondition(!stages.isEmpty && stages.contains { $0.durationNs > 0 }, "a schedule needs a stage with a length")
        var starts: [UInt64] = [0]
        var units: [Int128] = [0]
        for s in stages {
            precondition(s.from >= 0 && s.to >= 0 && s.from <= Self.maxRate && s.to <= Self.maxRate && s.durationNs <= Self.maxStageNs)
            starts.append(starts.last! + s.durationNs)
            units.append(units.last! + Int128(s.from + s.to) * Int128(s.durationNs))
        }
        self.stages = stages
        stageStart = starts
        self.units = units
        let total = units.last!
        totalRequests = Int64((total + Self.unitsPerRequest - 1) / Self.unitsPerRequest)
    }

    /// A constant `rate` for `durationNs`.
    static func constant(rate: Int, durationNs: UInt64) -> RateSchedule {
        RateSchedule(stages: [Stage(durationNs: durationNs, from: rate, to: rate)])
    }

    /// One linear ramp from `from` to `to` over `durationNs` (`--rps 10k..200k --duration 2m`).
    public static func ramp(from: Int, to: Int, durationNs: UInt64) -> RateSchedule {
        RateSchedule(stages: [Stage(durationNs: durationNs, from: from, to: to)])
    }

    /// The rate the schedule starts from (after any steps of length 0 at its start).
    public var initialRate: Int { stages.first { $0.durationNs > 0 }?.from ?? 0 }
    /// The highest rate anywhere in the schedule.
    public var peakRate: Int { stages.map { Swift.max($0.from, $0.to) }.max() ?? 0 }
    /// Whether the rate never changes (one rate throughout).
    var isConstant: Bool { stages.allSatisfy { $0.from == stages[0].from && $0.to == stages[0].from } }

    /// This schedule after a stage of `durationNs` at a constant `rate` (the warm-up before it).
    func prepending(rate: Int, durationNs: UInt64) -> RateSchedule {
        guard durationNs > 0 else { return self }
        return RateSchedule(stages: [Stage(durationNs: durationNs, from: rate, to: rate)] + stages)
    }

    /// The rate at `offset` ns after t0 (requests per second; 0 after the end).
    public func rate(atOffset offset: UInt64) -> Double {
        guard offset < durationNs, let i = stage(containingOffset: offset) else { return 0 }
        let s = stages[i]
        let f = Double(offset - stageStart[i]) / Double(s.durationNs)
        return Double(s.from) + (Double(s.to) - Double(s.from)) * f
    }

    /// Intended time of request `g` (0 ≤ g < ``totalRequests``), in ns after t0.
    @inline(__always)
    func offset(ofRequest g: Int64) -> UInt64 {
        let target = Int128(g) * Self.unitsPerRequest
        let i = stage(containingUnits: target)
        let s = stages[i]
        let k = target - units[i]   // units into stage i: 0 ≤ k < (from + to) × D
        if s.from == s.to {
            return stageStart[i] + UInt64(k / (2 * Int128(s.from)))
        }
        let d = Int128(s.durationNs)
        let a = Int128(s.to - s.from), b = 2 * d * Int128(s.from), goal = d * k
        // f(τ) = aτ² + bτ is 2e9·D × the requests stage i intends in its first τ ns; f rises on [0, D]
        // and f(D) > goal, so floor(τ*) is the largest τ with f(τ) ≤ goal. The stable root
        // 2·goal / (b + √(b² + 4a·goal)) lands within a few ns of it (further only where a ramp down nears
        // 0 and the discriminant loses digits); integer comparisons settle the rest.
        let bd = Double(b), gd = Double(goal)
        let root = 2 * gd / (bd + Swift.max(0, bd * bd + 4 * Double(a) * gd).squareRoot())
        let guess = root.isFinite ? Swift.max(0, Swift.min(Double(s.durationNs - 1), root.rounded(.down))) : 0
        let t = Self.largest(below: d, from: Int128(guess)) { a * $0 * $0 + b * $0 <= goal }
        return stageStart[i] + UInt64(t)
    }

    // The largest t in [0, end) with holds(t), where holds is true up to some point and false after it,
    // holds(0) is true and holds(end) false: gallop from `guess` to a bracket, then bisect.
    @inline(__always)
    private static func largest(below end: Int128, from guess: Int128, _ holds: (Int128) -> Bool) -> Int128 {
        var lo: Int128 = 0, hi = end, step: Int128 = 1
        if holds(guess) {
            lo = guess
            while lo + step < end {
                if !holds(lo + step) { hi = lo + step; break }
                lo += step
                step *= 2
            }
        } else {
            hi = guess
            while hi - step > 0 {
                if holds(hi - step) { lo = hi - step; break }
                hi -= step
                step *= 2
            }
        }
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if holds(mid) { lo = mid } else { hi = mid }
        }
        return lo
    }

    /// How many requests are due at `offset` ns after t0: those whose intended time is ≤ offset.
    @inline(__always)
    func dueCount(atOffset offset: UInt64) -> Int64 {
        let x = offset &+ 1   // T(g) ≤ offset ⟺ τ*(g) < offset + 1
        guard x < durationNs, let i = stage(containingOffset: x) else { return totalRequests }
        let s = stages[i]
        let t = Int128(x - stageStart[i])
        // 2e9 × requests intended by x = units[i] + f(t) / D; requests g with g below it are due.
        let reached: Int128, exact: Bool
        if s.from == s.to {
            reached = units[i] + 2 * Int128(s.from) * t
            exact = true
        } else {
            let d = Int128(s.durationNs)
            let f = Int128(s.to - s.from) * t * t + 2 * d * Int128(s.from) * t
            reached = units[i] + f / d
            exact = f % d == 0
        }
        // The count of whole g below reached/2e9 (or below a value just above `reached`, when f/D is not whole).
        let due = exact ? (reached + Self.unitsPerRequest - 1) / Self.unitsPerRequest : reached / Self.unitsPerRequest + 1
        return Swift.min(Int64(due), totalRequests)
    }

    /// Requests intended in [`from`, `to`) ns after t0 (the target of a timeline second).
    func intendedCount(fromOffset from: UInt64, toOffset to: UInt64) -> Int64 {
        guard to > from else { return 0 }
        return count(before: to) - count(before: from)
    }

    /// Requests whose intended time is before `offset`.
    func count(before offset: UInt64) -> Int64 { offset == 0 ? 0 : dueCount(atOffset: offset - 1) }

    // The stage holding offset x: starts[i] ≤ x < starts[i+1] (stages of length 0 hold nothing).
    @inline(__always)
    private func stage(containingOffset x: UInt64) -> Int? {
        var lo = 0, hi = stages.count   // the answer is in [lo, hi)
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if stageStart[mid] <= x { lo = mid } else { hi = mid }
        }
        return x >= stageStart[lo] && x < stageStart[lo + 1] ? lo : nil
    }

    // The first stage whose end exceeds `target` units (the stage request target/2e9 belongs to).
    @inline(__always)
    private func stage(containingUnits target: Int128) -> Int {
        var lo = 0, hi = stages.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if units[mid + 1] > target { hi = mid } else { lo = mid + 1 }
        }
        return lo
    }
}
