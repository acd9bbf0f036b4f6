import CUV
#if canImport(Glibc)
import Glibc
#endif
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
    /// Objects with output queued during this loop turn; flushed once per turn (one write each).
    private var dirty: [any LoopFlushable] = []
    /// One read buffer for every connection of the loop: whoever reads consumes it synchronously.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// One object per type that other layers keep per loop (see `local(_:_:)`).
    private var locals: [ObjectIdentifier: AnyObject] = [:]
    private var closed = false
    private var stopRequested = false

    /// Creates a loop (not yet running). SIGPIPE is ignored from then on, for the whole process.
    public init() throws(TransportError) {
        // libuv writes with write(2): a peer that closes while we write would otherwise kill a client
        // process as readily as a server (a load run against a gateway retiring connections with GOAWAY).
        signal(SIGPIPE, SIG_IGN)
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

    /// Starts counting the time the loop waits for events (``idleNanoseconds``); call before it runs.
    public func measureIdleTime() { _ = pb_loop_measure_idle_time(uvLoop) }

    /// Nanoseconds the loop has waited for events since ``measureIdleTime()`` (0 without it); from the
    /// loop's thread.
    public var idleNanoseconds: UInt64 { uv_metrics_idle_time(uvLoop) }

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

    /// Queues `item` for the end-of-turn flush (idempotent per turn). Generic so that a caller's
    /// concrete type is specialized in: the per-request check of `flushScheduled` is a field read.
    @inline(__always) func scheduleFlush<Item: LoopFlushable>(_ item: Item) {
        if item.flushScheduled { return }
        item.flushScheduled = true
        dirty.append(item)
    }

    private func flushDirty() {
        if dirty.isEmpty { return }
        // A flush may schedule more work (write completes synchronously, streams close); loop by index.
        var i = 0
        while i < dirty.count {
            let item = dirty[i]
            item.flushScheduled = false
            item.flush()
            i += 1
        }
        dirty.removeAll(keepingCapacity: true)
    }

    /// The loop's one instance of `type`, created by `make` on first use: per-loop state of a layer
    /// above (the HTTP/2 sessions' allocator) without the loop knowing that layer.
    func local<T: AnyObject>(_ type: T.Type, _ make: () -> T) -> T {
        let key = ObjectIdentifier(type)
        if let existing = locals[key] { return unsafeDowncast(existing, to: T.self) }
        let created = make()
        locals[key] = created
        return created
    }

    private func drainCrossThread() {
        if handle.stopFlag.load(ordering: .acquiring) { stop() }
        while let job = handle.takeJob() { job() }
    }
}

@available(*, unavailable) extension EventLoop: Sendable {}

/// Work an `EventLoop` runs at the end of a loop turn, after the I/O and timer callbacks that queued
/// it: an HTTP/2 session writing everything its streams queued during the turn as one batch.
protocol LoopFlushable: AnyObject {
    /// True while the item waits in the loop's flush list (so it is queued once per turn).
    var flushScheduled: Bool { get set }
    /// Writes what was queued; may queue more work, which runs in the same pass.
    func flush()
}
