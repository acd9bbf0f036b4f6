import Foundation
import Glibc
@testable import PushTransport
import Synchronization
import Testing

/// The loop's timers, cross-thread handle, signals and SO_REUSEPORT.
@Suite struct EventLoopTests {
    /// A peer that closes while a client writes must not kill the process: any process with a loop
    /// ignores SIGPIPE, not only one that also runs the gateway (a `pushbench run --target` from a shell,
    /// whose SIGPIPE is at its default, died with status 141 against a gateway retiring connections).
    @Test func aLoopLeavesSIGPIPEIgnored() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        var current = sigaction()
        #expect(sigaction(SIGPIPE, nil, &current) == 0)
        #expect(unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self))
    }

    @Test func loopTimerFiresAndRepeats() throws {
        let loop = try EventLoop()
        var fired = 0
        let t = LoopTimer(loop: loop) { fired += 1 }
        t.start(afterMilliseconds: 1, repeatMilliseconds: 1)
        #expect(t.isActive)
        #expect(loop.run(until: { fired >= 3 }, timeoutNanoseconds: 10 * seconds))
        t.stop()
        #expect(!t.isActive)
    }

    @Test func preciseTimerTicksBelowOneMillisecond() throws {
        let loop = try EventLoop()
        var ticks: UInt64 = 0
        var calls = 0
        let t = try PreciseTimer(loop: loop) { n in ticks += n; calls += 1 }
        let start = EventLoop.nowNanoseconds()
        t.start(firstDeadline: start + 20_000, intervalNanoseconds: 20_000)  // 50,000 per second
        #expect(loop.run(until: { ticks >= 2_000 }, timeoutNanoseconds: 20 * seconds))
        t.stop()
        let elapsed = EventLoop.nowNanoseconds() - start
        // 2,000 expirations of 20 µs cannot happen in less than 40 ms: the interval is honoured.
        #expect(elapsed >= 40_000_000)
        #expect(calls > 0)
    }

    @Test func handleRunsClosuresAndStopsTheLoopFromAnotherThread() throws {
        let loop = try EventLoop()
        let handle = loop.handle
        let ran = Atomic<Int>(0)
        let thread = Thread {
            for _ in 0..<10 { handle.execute { ran.add(1, ordering: .relaxed) } }
            usleep(50_000)
            handle.execute { handle.stop() }
        }
        thread.start()
        let start = EventLoop.nowNanoseconds()
        loop.run()
        #expect(ran.load(ordering: .relaxed) == 10)
        #expect(EventLoop.nowNanoseconds() - start < 30 * seconds)
        loop.close()
        #expect(handle.execute {} == false)
    }

    @Test func signalWatcherSeesSignals() throws {
        let loop = try EventLoop()
        var got: Int32 = 0
        let w = SignalWatcher(loop: loop, signals: [SIGUSR2]) { got = $0 }
        kill(getpid(), SIGUSR2)  // process-directed: test threads may block signals
        #expect(loop.run(until: { got == SIGUSR2 }, timeoutNanoseconds: 10 * seconds))
        withExtendedLifetime(w) {}
    }

    @Test func reusePortLetsTwoServersShareAPort() throws {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        config.reusePort = true
        let a = HTTP2Server(loop: loop, configuration: config, delegate: nil)
        let port = try a.listen(host: "127.0.0.1", port: 0)
        let b = HTTP2Server(loop: loop, configuration: config, delegate: nil)
        #expect(try b.listen(host: "127.0.0.1", port: port) == port)
        // Without the option the second bind fails with a clear error.
        let c = HTTP2Server(loop: loop, delegate: nil)
        #expect(throws: TransportError.self) { try c.listen(host: "127.0.0.1", port: port) }
    }
}

/// Thread names reach the kernel (what `top -H` and `perf` show), cut to its 15 bytes on a UTF-8 boundary.
@Suite struct ThreadNameTests {
    private func nameSeenByKernel(_ name: String) -> String {
        let seen = Mutex("")
        let thread = Thread {
            nameCurrentThread(name)
            seen.withLock { $0 = currentThreadName() }
        }
        thread.start()
        for _ in 0..<5_000 where seen.withLock({ $0.isEmpty }) { usleep(1_000) }  // at most 5 s
        return seen.withLock { $0 }
    }

    @Test func aShortNameIsKept() {
        #expect(nameSeenByKernel("pb-driver-0") == "pb-driver-0")
    }

    @Test func aLongNameIsCutToFifteenBytesWithoutSplittingACharacter() {
        #expect(nameSeenByKernel("pushbench-driver-12") == "pushbench-drive")
        // "é" is two bytes; byte 15 would fall inside the eighth one.
        #expect(nameSeenByKernel("ééééééééé") == "ééééééé")
    }
}
