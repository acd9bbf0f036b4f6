import CAllocCounter
@testable import MockGateway
import PushPayload
import PushTransport
import Testing
@testable import LoadGenerator

/// pushbench's HTTP/1.1 sender path (`--protocol fcm --http1`): the driver, the HTTP/1.1 pool, the
/// zerocopy encoder writing into the connection's body buffer, the client connection and its parser,
/// against the embedded gateway (its own threads). Counted on this thread only.
@Suite struct HTTP1ClientPathAllocationTests {
    @Test func http1SenderPathAllocatesNothingPerRequest() throws {
        let gateway = try EmbeddedGateway.start(GatewayConfiguration.parse([]))
        defer { gateway.stop() }
        let loop = try EventLoop()
        var config = LoadConfiguration(host: gateway.host, port: gateway.port, template: .defaultFCM(),
                                       tokens: DeviceTokens(synthetic: 100, seed: 3))
        config.pushProtocol = .fcm
        config.http1 = true
        config.connections = 16
        config.streams = 1
        // A refreshed access token: the head is rebuilt once, then the path is steady again.
        let tokens = AccessTokenSource(token: "first")
        config.accessTokens = tokens
        let core = DriverCore(plan: DriverPlan(rate: nil, durationNs: 600_000_000_000, capacity: 16),
                              clock: MonotonicClock.shared, recorder: Recorder())
        var pool: HTTP1ConnectionPool? = try HTTP1ConnectionPool(loop: loop, config: config, core: core, thread: 0) { core.pump() }
        core.attach(pool!)
        pool!.connectAll()
        #expect(loop.run(until: { pool!.initialConnected == 16 }, timeoutNanoseconds: 10_000_000_000))
        core.begin(at: MonotonicClock.nanoseconds())
        core.pump()
        func serve(_ n: Int) -> Bool {
            let target = core.recorder.measured.completed + n
            return loop.run(until: { core.recorder.measured.completed >= target }, timeoutNanoseconds: 30_000_000_000)
        }
        #expect(serve(2_000))
        tokens.update("second")
        #expect(serve(2_000))   // warm up: buffers reach their steady size
        var best = Int.max
        for _ in 0..<3 {
            pb_alloc_reset()
            #expect(serve(2_000))
            best = min(best, Int(pb_alloc_count()))
        }
        // A few per window are the run(until:) helper's own timer and a second's timeline entry; one per
        // request would be 2000.
        #expect(best <= 20, "\(best) allocations for 2000 HTTP/1.1 requests")
        #expect(core.recorder.measured.succeeded == core.recorder.measured.completed)
        #expect(gateway.stats().http1Requests >= 10_000)
        pool!.release()
        pool = nil
        loop.run(until: { false }, timeoutNanoseconds: 20_000_000)
        loop.close()
    }
}
