@testable import PushTransport
import Testing

/// The loop's end-of-turn flush list, seen through its protocol: what HTTP/2 sessions use to write
/// once per turn, without the loop knowing about them.
@Suite struct LoopFlushTests {
    final class Recorder: LoopFlushable {
        var flushScheduled = false
        var flushes = 0
        var onFlush: () -> Void = {}
        func flush() {
            flushes += 1
            onFlush()
        }
    }

    /// A loop with one armed timer: libuv runs no iteration (and so no flush) on a loop with nothing active.
    func busyLoop() throws -> (EventLoop, LoopTimer) {
        let loop = try EventLoop()
        let keepAlive = LoopTimer(loop: loop) {}
        keepAlive.start(afterMilliseconds: 60_000)
        return (loop, keepAlive)
    }

    @Test func anItemScheduledTwiceInATurnFlushesOnce() throws {
        let (loop, keepAlive) = try busyLoop()
        defer { withExtendedLifetime(keepAlive) {} }
        let a = Recorder()
        loop.scheduleFlush(a)
        loop.scheduleFlush(a)
        #expect(a.flushScheduled)
        loop.runOnce(wait: false)
        #expect(a.flushes == 1)
        #expect(!a.flushScheduled)
        loop.runOnce(wait: false)
        #expect(a.flushes == 1)
    }

    @Test func workQueuedDuringAFlushRunsInTheSamePass() throws {
        let (loop, keepAlive) = try busyLoop()
        defer { withExtendedLifetime(keepAlive) {} }
        let a = Recorder(), b = Recorder()
        // a's flush queues b, and a again (as a write completing synchronously may).
        a.onFlush = { [unowned loop] in
            if a.flushes == 1 {
                loop.scheduleFlush(b)
                loop.scheduleFlush(a)
            }
        }
        loop.scheduleFlush(a)
        loop.runOnce(wait: false)
        #expect(a.flushes == 2)
        #expect(b.flushes == 1)
    }
}
