#if canImport(Glibc)
import Glibc
#endif
import PushTransport

/// The wall clock and the monotonic clock read at one moment: the gateway turns a request's monotonic
/// time into wall-clock milliseconds (410 timestamps) with no clock read per request, and a test
/// gives a fixed one so the state machine's answers depend on its inputs alone.
public struct GatewayClock: Sendable, Equatable {
    /// Milliseconds since the epoch (CLOCK_REALTIME) at the anchor.
    var wallMillis: Int64
    /// The monotonic time (ns, `EventLoop.nowNanoseconds()`) at the same moment.
    var monotonicNanos: UInt64

    /// An anchor: `wallMillis` since the epoch at monotonic time `monotonicNanos`.
    init(wallMillis: Int64, monotonicNanos: UInt64) {
        self.wallMillis = wallMillis
        self.monotonicNanos = monotonicNanos
    }

    /// Both clocks read now.
    public static func now() -> GatewayClock {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return GatewayClock(wallMillis: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000,
                            monotonicNanos: EventLoop.nowNanoseconds())
    }

    /// Wall-clock milliseconds at monotonic time `monotonic` (earlier than the anchor works too).
    @inline(__always)
    func wallMillis(at monotonic: UInt64) -> Int64 {
        wallMillis &+ Int64(bitPattern: monotonic &- monotonicNanos) / 1_000_000
    }
}
