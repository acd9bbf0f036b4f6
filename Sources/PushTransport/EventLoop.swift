import CUV
import Synchronization

/// A libuv event loop confined to the thread that runs it (one loop per thread).
///
/// Everything created on a loop (connections, servers, timers) must be used on that loop's thread
/// only. The one exception is `handle`, a `Sendable` value other threads use to stop the loop or run
/// a closure on it.
///
/// ```swift
/// let loop = try EventLoop()
/// let timer = LoopTimer(loop: loop) { loop.stop() }
/// timer.start(afterMilliseconds: 10)
/// loop.run()
/// ```
public final class EventLoop {
    /// The libuv loop; valid until `close()`.
    public let uvLoop: UnsafeMutablePointer<uv_loop_t>
    /// The thread-safe handle: stop the loop or run a closure on it from any thread.
    public let handle: EventLoopHandle
    private let prepare: UnsafeMutablePointer<uv_prepare_t>
    private let check: UnsafeMutablePointer<uv_check_t>
    /// Sessions with output queued during this loop turn; flushed once per turn (one write each).
    private var dirty: [HTTP2Session] = []
    /// One read buffer for every connection of the loop: reads are consumed synchronously by nghttp2.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// nghttp2's allocator for every session of this loop (counts, and pools small blocks).
    public let nghttp2Memory = NGHTTP2Memory()
    private var closed = false
    private var stopRequested = false

    /// Creates a loop (not yet running).
    public init() throws(TransportError) {
        uvLoop = .allocate(capacity: 1)
        let r = uv_loop_init(uvLoop)
        if r != 0 { uvLoop.deallocate(); throw TransportError(uv: r, "uv_loop_init") }
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        prepare = .allocate(capacity: 1)
        check = .allocate(capacity: 1)
        dirty.reserveCapacity(1024)
        let async = UnsafeMutablePointer<uv_async_t>.allocate(capacity: 1)
        handle = EventLoopHandle(async: async)
        uv_async_init(uvLoop, async) { a in
            guard let a, let data = a.pointee.data else { return }
            Unmanaged<EventLoop>.fromOpaque(data).takeUnretainedValue().drainCrossThread()
        }
        async.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_unref(pb_async_as_handle(async))
        uv_prepare_init(uvLoop, prepare)
        prepare.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_prepare_start(prepare) { p in EventLoop.from(p?.pointee.data).flushDirty() }
        uv_unref(pb_prepare_as_handle(prepare))
        uv_check_init(uvLoop, check)
        check.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_check_start(check) { c in EventLoop.from(c?.pointee.data).flushDirty() }
        uv_unref(pb_check_as_handle(check))
    }

    static func from(_ p: UnsafeMutableRawPointer?) -> EventLoop {
        Unmanaged<EventLoop>.fromOpaque(p!).takeUnretainedValue()
    }

    deinit { close() }

    /// Monotonic time in nanoseconds (CLOCK_MONOTONIC), the clock every timestamp of this module uses.
    @inline(__always) public static func nowNanoseconds() -> UInt64 { pb_monotonic_ns() }

    /// Monotonic time in nanoseconds (same clock as `EventLoop.nowNanoseconds()`).
    @inline(__always) public var now: UInt64 { pb_monotonic_ns() }

    /// Runs the loop until `stop()` (from the loop) or `handle.stop()` (from any thread).
    public func run() {
        stopRequested = false
        while !stopRequested && !closed {
            if handle.stopFlag.exchange(false, ordering: .acquiringAndReleasing) { break }
            // The cross-thread async handle is unref'd otherwise, so only run() waits for a stop.
            uv_ref(pb_async_as_handle(handle.async))
            uv_run(uvLoop, UV_RUN_DEFAULT)
            uv_unref(pb_async_as_handle(handle.async))
        }
        handle.stopFlag.store(false, ordering: .releasing)
    }

    /// Runs one loop iteration; blocks for I/O when `wait` is true.
    public func runOnce(wait: Bool = true) {
        uv_run(uvLoop, wait ? UV_RUN_ONCE : UV_RUN_NOWAIT)
    }

    /// Runs the loop until `condition` is true or `timeoutNanoseconds` pass; returns the final value of `condition`.
    ///
    /// Meant for tests and tools that drive a client and a server on one thread.
    @discardableResult
    public func run(until condition: () -> Bool, timeoutNanoseconds: UInt64) -> Bool {
        let deadline = now &+ timeoutNanoseconds
        // A short repeating timer bounds each blocking uv_run so the deadline is honoured.
        let tick = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        uv_timer_init(uvLoop, tick)
        uv_timer_start(tick, { _ in }, 5, 5)
        defer {
            uv_timer_stop(tick)
            uv_close(pb_timer_as_handle(tick)) { h in h?.deallocate() }
        }
        while !condition() {
            if now >= deadline { return false }
            uv_run(uvLoop, UV_RUN_ONCE)
        }
        return true
    }

    /// Stops `run()` after the current iteration (loop thread only; other threads use `handle.stop()`).
    public func stop() {
        stopRequested = true
        uv_stop(uvLoop)
    }

    /// Closes the loop's own handles and releases the loop (its memory is kept if objects created on it
    /// are still open, so their later close stays safe).
    ///
    /// Idempotent; also done by `deinit`. Objects created on this loop must not be used afterwards.
    public func close() {
        if closed { return }
        handle.markClosed()
        uv_prepare_stop(prepare)
        uv_check_stop(check)
        dirty.removeAll()
        uv_close(pb_async_as_handle(handle.async)) { h in h?.deallocate() }
        uv_close(pb_prepare_as_handle(prepare)) { h in h?.deallocate() }
        uv_close(pb_check_as_handle(check)) { h in h?.deallocate() }
        uv_run(uvLoop, UV_RUN_NOWAIT)
        uv_run(uvLoop, UV_RUN_NOWAIT)
        closed = true
        // Objects still open on this loop (a server, a connection, a timer) close their handles when
        // they go away; the loop memory must outlive them, so it is leaked rather than freed under them.
        if uv_loop_close(uvLoop) == 0 {
            uvLoop.deallocate()
            readBuffer.deallocate()
        }
    }

    /// Queues a session for the end-of-turn flush (idempotent per turn).
    @inline(__always) func scheduleFlush(_ session: HTTP2Session) {
        if session.flushScheduled { return }
        session.flushScheduled = true
        dirty.append(session)
    }

    private func flushDirty() {
        if dirty.isEmpty { return }
        // A flush may schedule more work (write completes synchronously, streams close); loop by index.
        var i = 0
        while i < dirty.count {
            let s = dirty[i]
            s.flushScheduled = false
            s.flush()
            i += 1
        }
        dirty.removeAll(keepingCapacity: true)
    }

    private func drainCrossThread() {
        if handle.stopFlag.load(ordering: .acquiring) { stop() }
        while let job = handle.takeJob() { job() }
    }
}

@available(*, unavailable) extension EventLoop: Sendable {}

/// A `Sendable` reference to an `EventLoop`: stop it, or run a closure on its thread.
///
/// Meant for rare control messages (shutdown, a report tick), not for per-request work.
public final class EventLoopHandle: Sendable {
    // uv_async_send is the one libuv call documented as thread-safe; the pointer is only sent to it
    // under the mutex while the loop is open, and closed by the loop after `markClosed()`.
    nonisolated(unsafe) let async: UnsafeMutablePointer<uv_async_t>
    let stopFlag = Atomic<Bool>(false)
    private let state = Mutex<State>(State())

    private struct State: ~Copyable {
        var closed = false
        var jobs: [@Sendable () -> Void] = []
    }

    init(async: UnsafeMutablePointer<uv_async_t>) { self.async = async }

    /// Asks the loop to stop; `run()` returns after the current iteration. Safe from any thread.
    public func stop() {
        stopFlag.store(true, ordering: .releasing)
        wake()
    }

    /// Runs `body` on the loop's thread during a later iteration; returns false if the loop is closed.
    @discardableResult
    public func execute(_ body: @escaping @Sendable () -> Void) -> Bool {
        return state.withLock { s in
            if s.closed { return false }
            s.jobs.append(body)
            uv_async_send(async)
            return true
        }
    }

    private func wake() {
        state.withLock { s in
            if !s.closed { uv_async_send(async) }
        }
    }

    func takeJob() -> (@Sendable () -> Void)? {
        state.withLock { s in s.jobs.isEmpty ? nil : s.jobs.removeFirst() }
    }

    func markClosed() {
        state.withLock { s in s.closed = true; s.jobs.removeAll() }
    }
}

