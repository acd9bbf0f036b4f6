import PushVocabulary

/// A small, fast, seedable random generator (SplitMix64): the same seed gives the same sequence.
struct SeededRandom: Sendable {
    private var state: UInt64

    /// A generator seeded with `seed`.
    init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    @inline(__always)
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return mix(state)
    }

    /// A uniform number in [0, 1).
    @inline(__always)
    mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }
}

@inline(__always)
func mix(_ x: UInt64) -> UInt64 {
    var z = x
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}

/// A stable 64-bit hash of a device token, case-insensitive for hex tokens.
///
/// The unregistered tokens are chosen by this hash alone, so they are the same in every run and
/// a sender can predict them with ``GatewayConfiguration/isUnregistered(token:)``. Eight bytes per
/// step: OR-ing 0x20 into every byte lower-cases A–F and leaves digits as they are.
@inline(__always)
func tokenHash(_ token: UnsafeRawBufferPointer) -> UInt64 {
    var h: UInt64 = 0xCBF2_9CE4_8422_2325 ^ UInt64(token.count)
    var i = 0
    let n = token.count
    while i + 8 <= n {
        let w = token.loadUnaligned(fromByteOffset: i, as: UInt64.self) | 0x2020_2020_2020_2020
        h = (h ^ w) &* 0x9E37_79B9_7F4A_7C15
        h ^= h >> 29
        i += 8
    }
    var tail: UInt64 = 0
    var shift: UInt64 = 0
    while i < n {
        tail |= UInt64(token[i] | 0x20) << shift
        shift += 8
        i += 1
    }
    return mix(h ^ tail)
}

/// How long the gateway waits before answering.
enum LatencyDistribution: Equatable, Sendable {
    /// Answer at once (the default).
    case none
    /// Always the same delay.
    case fixed(nanos: UInt64)
    /// Uniform between `min` and `max`.
    case uniform(minNanos: UInt64, maxNanos: UInt64)
    /// Piecewise linear between percentile points (percentile in 0...100, ascending, values
    /// non-decreasing). Below the first point the first value applies, above the last the last.
    case percentiles([LatencyPoint])

    /// One delay drawn from the distribution.
    @inline(__always)
    func sample(_ random: inout SeededRandom) -> UInt64 {
        switch self {
        case .none: return 0
        case .fixed(let n): return n
        case .uniform(let lo, let hi):
            return lo + UInt64(random.unit() * Double(hi - lo))
        case .percentiles(let points):
            let u = random.unit() * 100
            var previous = points[0]
            if u <= previous.percentile { return previous.nanos }
            // Index loop: iterating a slice allocates in unoptimised builds.
            for i in 1..<points.count {
                let p = points[i]
                if u <= p.percentile {
                    let span = p.percentile - previous.percentile
                    let f = span > 0 ? (u - previous.percentile) / span : 1
                    return previous.nanos + UInt64(f * Double(p.nanos - previous.nanos))
                }
                previous = p
            }
            return previous.nanos
        }
    }
}

/// One point of a percentile latency distribution.
struct LatencyPoint: Equatable, Sendable {
    /// The percentile, 0...100.
    var percentile: Double
    /// The latency at that percentile, in nanoseconds.
    var nanos: UInt64
    /// A point.
    init(percentile: Double, nanos: UInt64) { self.percentile = percentile; self.nanos = nanos }
}

/// A fraction of otherwise valid requests answered with `reason`.
struct FailureRate: Equatable, Sendable {
    /// The reason (and so the status) of the injected failure.
    var reason: APNsReason
    /// The fraction of requests, 0...1.
    var fraction: Double
    /// A failure rate.
    init(reason: APNsReason, fraction: Double) { self.reason = reason; self.fraction = fraction }
}

/// A per-token token bucket: `perSecond` refill, `burst` capacity; over it APNs answers 429 TooManyRequests.
struct TokenRateLimit: Equatable, Sendable {
    /// Requests per second allowed to one device token.
    var perSecond: Double
    /// Requests allowed in a burst.
    var burst: Double
    /// A limit.
    init(perSecond: Double, burst: Double) { self.perSecond = perSecond; self.burst = burst }
}

/// Fixed-size table of token buckets keyed by token hash: allocated once, never grows. When full, the
/// least recently used of the probed entries is replaced (a forgotten token starts with a full bucket).
struct TokenBuckets {
    private struct Entry { var hash: UInt64; var tokens: Double; var lastNanos: UInt64 }
    private static let capacity = 1 << 16
    private static let probes = 8
    private var entries: [Entry]
    private let limit: TokenRateLimit

    init(limit: TokenRateLimit) {
        self.limit = limit
        entries = Array(repeating: Entry(hash: 0, tokens: 0, lastNanos: 0), count: Self.capacity)
    }

    /// Takes one request for the token with `hash` at `now`; false when its bucket is empty.
    mutating func take(hash: UInt64, now: UInt64) -> Bool {
        let key = hash | 1 // 0 marks an empty entry
        let mask = Self.capacity - 1
        var victim = Int(truncatingIfNeeded: key) & mask
        var oldest = UInt64.max
        for i in 0..<Self.probes {
            let slot = (Int(truncatingIfNeeded: key) &+ i) & mask
            if entries[slot].hash == key {
                let elapsed = Double(now &- entries[slot].lastNanos) * 1e-9
                var tokens = min(limit.burst, entries[slot].tokens + elapsed * limit.perSecond)
                entries[slot].lastNanos = now
                guard tokens >= 1 else { entries[slot].tokens = tokens; return false }
                tokens -= 1
                entries[slot].tokens = tokens
                return true
            }
            let age = entries[slot].hash == 0 ? 0 : entries[slot].lastNanos
            if age < oldest { oldest = age; victim = slot }
        }
        entries[victim] = Entry(hash: key, tokens: limit.burst - 1, lastNanos: now)
        return limit.burst >= 1
    }
}
