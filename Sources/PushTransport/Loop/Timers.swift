import Glibc
import CUV

/// A libuv millisecond timer on an `EventLoop`: one-shot or repeating, restartable, no allocation per start.
///
/// Dropping the timer closes it; the callback never runs after that.
public final class LoopTimer {
    private let timer: UnsafeMutablePointer<uv_timer_t>
    private let callback: () -> Void

    /// Creates a stopped timer whose `callback` runs on the loop thread at each expiry.
    public init(loop: EventLoop, _ callback: @escaping () -> Void) {
        self.callback = callback
        timer = .allocate(capacity: 1)
        uv_timer_init(loop.uvLoop, timer)
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        uv_timer_stop(timer)
        timer.pointee.data = nil
        uv_close(pb_timer_as_handle(timer)) { h in h?.deallocate() }
    }

    /// Starts (or restarts) the timer: first expiry after `afterMilliseconds`, then every `repeatMilliseconds` if nonzero.
    public func start(afterMilliseconds: UInt64, repeatMilliseconds: UInt64 = 0) {
        uv_timer_start(timer, { t in
            guard let data = t?.pointee.data else { return }
            Unmanaged<LoopTimer>.fromOpaque(data).takeUnretainedValue().callback()
        }, afterMilliseconds, repeatMilliseconds)
    }

    /// Stops the timer; `start` may be called again.
    public func stop() { uv_timer_stop(timer) }

    /// Whether the timer is armed.
    var isActive: Bool { uv_is_active(pb_timer_as_handle(timer)) != 0 }

    /// Whether an armed timer keeps `EventLoop.run()` from returning on its own (default true).
    public func setKeepsLoopAlive(_ on: Bool) {
        if on { uv_ref(pb_timer_as_handle(timer)) } else { uv_unref(pb_timer_as_handle(timer)) }
    }
}

@available(*, unavailable) extension LoopTimer: Sendable {}

/// A sub-millisecond timer (a `timerfd` on CLOCK_MONOTONIC watched by `uv_poll`), for pacing sends at high rates.
///
/// The callback receives the number of expirations since the last call (more than 1 when the loop
/// fell behind), so an open-loop pacer can catch up without losing intended send times.
///
/// ```swift
/// let pacer = try PreciseTimer(loop: loop) { expirations in sendNext(expirations) }
/// pacer.start(firstDeadline: EventLoop.nowNanoseconds() + 20_000, intervalNanoseconds: 20_000) // 50k/s
/// ```
public final class PreciseTimer {
    private let poll: UnsafeMutablePointer<uv_poll_t>
    private let fd: Int32
    private let callback: (UInt64) -> Void

    /// Creates a disarmed timer; `callback(expirations)` runs on the loop thread.
    public init(loop: EventLoop, _ callback: @escaping (UInt64) -> Void) throws(TransportError) {
        self.callback = callback
        fd = pb_timerfd_create()
        if fd < 0 { throw TransportError(errno: errno, "timerfd_create") }
        poll = .allocate(capacity: 1)
        let r = uv_poll_init(loop.uvLoop, poll, fd)
        if r != 0 {
            poll.deallocate()
            close(fd)
            throw TransportError(uv: r, "uv_poll_init")
        }
        poll.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        uv_poll_stop(poll)
        // The fd must outlive the poll handle's registration, so the close callback closes it; the
        // handle's data now points at the fd instead of this timer.
        let fdBox = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        fdBox.pointee = fd
        poll.pointee.data = UnsafeMutableRawPointer(fdBox)
        uv_close(pb_poll_as_handle(poll)) { h in
            guard let h else { return }
            if let d = h.pointee.data {
                let box = d.assumingMemoryBound(to: Int32.self)
                close(box.pointee)
                box.deallocate()
            }
            h.deallocate()
        }
    }

    /// Arms the timer: first expiry at the absolute monotonic time `firstDeadline` (ns), then every
    /// `intervalNanoseconds` (0 = one-shot).
    public func start(firstDeadline: UInt64, intervalNanoseconds: UInt64) {
        _ = pb_timerfd_arm(fd, max(firstDeadline, 1), intervalNanoseconds)
        uv_poll_start(poll, Int32(UV_READABLE.rawValue)) { p, status, _ in
            guard let p, let data = p.pointee.data else { return }
            let t = Unmanaged<PreciseTimer>.fromOpaque(data).takeUnretainedValue()
            let n = pb_timerfd_read(t.fd)
            if n > 0 && status == 0 { t.callback(n) }
        }
    }

    /// Disarms the timer.
    public func stop() {
        _ = pb_timerfd_arm(fd, 0, 0)
        uv_poll_stop(poll)
    }
}

@available(*, unavailable) extension PreciseTimer: Sendable {}

/// Watches SIGINT/SIGTERM (or other signals) on a loop for graceful shutdown.
///
/// ```swift
/// let signals = SignalWatcher(loop: loop, signals: [SIGINT, SIGTERM]) { _ in server.shutdownGracefully() }
/// ```
public final class SignalWatcher {
    private var handles: [UnsafeMutablePointer<uv_signal_t>] = []
    private let callback: (Int32) -> Void

    /// Starts watching `signals`; `callback(signal)` runs on the loop thread each time one arrives.
    /// The watcher does not keep `EventLoop.run()` alive on its own.
    public init(loop: EventLoop, signals: [Int32], _ callback: @escaping (Int32) -> Void) {
        self.callback = callback
        for sig in signals {
            let h = UnsafeMutablePointer<uv_signal_t>.allocate(capacity: 1)
            uv_signal_init(loop.uvLoop, h)
            h.pointee.data = Unmanaged.passUnretained(self).toOpaque()
            uv_signal_start(h, { h, signum in
                guard let data = h?.pointee.data else { return }
                Unmanaged<SignalWatcher>.fromOpaque(data).takeUnretainedValue().callback(signum)
            }, sig)
            uv_unref(pb_signal_as_handle(h))
            handles.append(h)
        }
    }

    deinit {
        for h in handles {
            uv_signal_stop(h)
            h.pointee.data = nil
            uv_close(pb_signal_as_handle(h)) { h in h?.deallocate() }
        }
    }
}

@available(*, unavailable) extension SignalWatcher: Sendable {}
