/// Open-loop schedule of one driver thread: the intended send time of global request g is
/// `t0 + g / rate` (exactly, in integer nanoseconds) at a constant rate, or the time a
/// ``RateSchedule``'s integral reaches g; the thread owns the requests with g ≡ `thread` (mod
/// `threads`), so the threads sharing one schedule interleave evenly instead of bunching. With
/// execution segments the stripe is over every thread of every agent: agent I of N, thread i of T owns
/// g ≡ I + N·i (mod N·T) (``DriverPlan``).
///
/// ```swift
/// let pacer = Pacer(start: t0, rate: 50_000, threads: 1, thread: 0)
/// pacer.intendedTime(local: 3)   // t0 + 60_000 ns
/// pacer.dueCount(at: t0 + 59_999) // 3 (requests 0, 1, 2)
/// ```
///
/// The schedule never drifts: a late send keeps its intended time (that is what makes the
/// latency corrected for coordinated omission), and the time of request k does not depend on when
/// request k-1 actually went out.
public struct Pacer: Sendable, Equatable {
    /// t0 in nanoseconds of the run's clock.
    public let start: UInt64
    /// Requests per second, for all threads together (constant schedule; 0 with ``schedule``).
    public let rate: UInt64
    /// The schedule when the rate changes over time (nil: the constant ``rate``).
    public let schedule: RateSchedule?
    /// Number of stripes sharing the schedule (driver threads × agents).
    public let threads: UInt64
    /// This thread's stripe in 0..<threads.
    public let thread: UInt64

    /// A pacer starting at `start` (ns) for thread `thread` of `threads` sharing `rate` requests/s.
    init(start: UInt64, rate: Int, threads: Int = 1, thread: Int = 0) {
        precondition(rate > 0 && threads > 0 && thread >= 0 && thread < threads)
        self.start = start
        self.rate = UInt64(rate)
        schedule = nil
        self.threads = UInt64(threads)
        self.thread = UInt64(thread)
    }

    /// A pacer starting at `start` (ns) for stripe `thread` of `threads` sharing `schedule`.
    init(start: UInt64, schedule: RateSchedule, threads: Int = 1, thread: Int = 0) {
        precondition(threads > 0 && thread >= 0 && thread < threads)
        self.start = start
        rate = 0
        self.schedule = schedule
        self.threads = UInt64(threads)
        self.thread = UInt64(thread)
    }

    /// The global sequence number of this thread's `local`-th request.
    @inline(__always) func global(local: Int64) -> Int64 {
        local &* Int64(threads) &+ Int64(thread)
    }

    /// Intended send time of global request `g`: t0 + floor(g * 1e9 / rate), or where the schedule's
    /// integral reaches g.
    @inline(__always) public func intendedTime(global g: Int64) -> UInt64 {
        if let schedule { return start &+ schedule.offset(ofRequest: g) }
        // Full-width product: g * 1e9 overflows 64 bits after ~290 years at 1 rps, or a few hours at
        // 1e7 rps and high g; the 128-bit division keeps the schedule exact for any run length.
        let p = UInt64(g).multipliedFullWidth(by: 1_000_000_000)
        return start &+ rate.dividingFullWidth(p).quotient
    }

    /// Intended send time of this thread's `local`-th request.
    @inline(__always) public func intendedTime(local k: Int64) -> UInt64 {
        intendedTime(global: global(local: k))
    }

    /// How many of this thread's requests are due at `now` (their intended time is ≤ now).
    @inline(__always) func dueCount(at now: UInt64) -> Int64 {
        guard now >= start else { return 0 }
        if let schedule { return share(of: schedule.dueCount(atOffset: now - start)) }
        // floor(g*1e9/rate) <= e  <=>  g*1e9 < (e+1)*rate  <=>  g <= ((e+1)*rate - 1) / 1e9
        let e = now - start
        let p = (e + 1).multipliedFullWidth(by: rate)
        let (lo, borrow) = p.low.subtractingReportingOverflow(1)
        let hi = borrow ? p.high - 1 : p.high
        let maxG = UInt64(1_000_000_000).dividingFullWidth((hi, lo)).quotient
        guard maxG >= thread else { return 0 }
        return Int64((maxG - thread) / threads + 1)
    }

    /// This stripe's part of the first `count` global requests: the g < count with g ≡ thread (mod threads).
    @inline(__always) func share(of count: Int64) -> Int64 {
        count > Int64(thread) ? (count - Int64(thread) - 1) / Int64(threads) + 1 : 0
    }
}
