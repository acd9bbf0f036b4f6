#if canImport(Glibc)
import Glibc
#endif

/// A source of monotonic time in nanoseconds. The driver reads time only through this, so tests can
/// drive the pacer and the coordinated-omission correction with a ``ManualClock``.
public protocol NanoClock: AnyObject {
    /// Monotonic time in nanoseconds (arbitrary origin, never goes back).
    func now() -> UInt64
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of every real run (never Foundation's Date).
public final class MonotonicClock: NanoClock, Sendable {
    /// The shared instance.
    public static let shared = MonotonicClock()
    /// Creates the clock.
    init() {}
    /// CLOCK_MONOTONIC now, in nanoseconds.
    @inline(__always) public func now() -> UInt64 { MonotonicClock.nanoseconds() }
    /// CLOCK_MONOTONIC now, in nanoseconds, without an instance.
    @inline(__always) public static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}

/// A clock that moves only when told to: for tests of the pacer and the driver.
final class ManualClock: NanoClock {
    /// The current time in nanoseconds.
    var time: UInt64
    /// Creates a clock reading `time`.
    init(_ time: UInt64 = 1_000_000_000) { self.time = time }
    /// The current time.
    public func now() -> UInt64 { time }
    /// Moves the clock forward by `ns`.
    func advance(_ ns: UInt64) { time += ns }
}

/// CLOCK_REALTIME in nanoseconds since the Unix epoch: the wall clock a start time (`--start-at`) and
/// a run's t0 are given in, so agents on several machines share one t0 as far as their clocks agree.
public enum WallClock {
    /// Now, in ns since the epoch.
    public static func unixNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }

    /// The monotonic reading that corresponds to the wall-clock instant `unixNs` (which may be in the past).
    static func monotonic(atUnixNanoseconds unixNs: Int64) -> UInt64 {
        let mono = Int64(MonotonicClock.nanoseconds())
        let wall = unixNanoseconds()
        return UInt64(Swift.max(1, mono + (unixNs - wall)))
    }
}
