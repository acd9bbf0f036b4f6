import CUV
import Synchronization

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

