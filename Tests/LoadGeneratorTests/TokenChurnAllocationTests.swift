import CAllocCounter
import MockGateway
import PushPayload
import PushTransport
import Testing
@testable import LoadGenerator

@Suite struct TokenChurnAllocationTests {
    /// The client path with token pruning on, against a gateway that churns tokens: marking a token gone
    /// and skipping pruned tokens when one is picked allocate nothing (same method as
    /// `clientPathOverLoopbackAllocatesNothingOutsideNghttp2`), and no pruned token is picked again.
    @Test func pruningAndSkippingAllocateNothing() throws {
        let gateway = try EmbeddedGateway.start(GatewayConfiguration.parse(["--token-churn=0.1/s"]))
        defer { gateway.stop() }
        let loop = try EventLoop()
        defer { loop.close() }
        var config = LoadConfiguration(host: gateway.host, port: gateway.port, template: .defaultAPNs(),
                                       tokens: DeviceTokens(synthetic: 4000, seed: 3))
        config.connections = 2
        config.streams = 32
        config.pruneGoneTokens = true
        let core = DriverCore(plan: DriverPlan(rate: nil, durationNs: 600_000_000_000, capacity: 64),
                              clock: MonotonicClock.shared, recorder: Recorder())
        var pool: ConnectionPool<APNsRequestBuilder>? = try ConnectionPool(loop: loop, config: config, core: core, thread: 0) { core.pump() }
        core.attach(pool!)
        pool!.connectAll()
        #expect(loop.run(until: { pool!.connectedCount == 2 }, timeoutNanoseconds: 10_000_000_000))
        core.begin(at: MonotonicClock.nanoseconds())
        core.pump()
        func serve(_ n: Int) -> Bool {
            let target = core.recorder.measured.completed + n
            return loop.run(until: { core.recorder.measured.completed >= target }, timeoutNanoseconds: 30_000_000_000)
        }
        // Warm up until some tokens are pruned, so the measured windows both prune and skip.
        #expect(serve(3_000))
        #expect(loop.run(until: { pool!.pruned.count >= 50 }, timeoutNanoseconds: 30_000_000_000))
        var best = Int.max
        for _ in 0..<3 {
            let pruned0 = pool!.pruned.count
            let n0 = loop.nghttp2Memory.allocations
            pb_alloc_reset()
            let ok = serve(2_000)
            let total = Int(pb_alloc_count())
            let nghttp2 = Int(loop.nghttp2Memory.allocations - n0)
            #expect(ok)
            #expect(pool!.pruned.count > pruned0, "no token pruned in the window")
            best = min(best, total - nghttp2)
        }
        #expect(best <= 20, "\(best) allocations outside nghttp2 for 2000 requests")
        #expect(!pool!.tokensExhausted)
        // Each pruned token was refused once, and (closed loop, 64 in flight over 4000 tokens) sent to
        // again only if it was already in flight when its refusal came.
        let gone = core.recorder.measured.byReason[Reasons.unregistered]
        let pruned = pool!.pruned.count
        #expect(gone >= pruned && gone <= pruned + 64, "gone answers \(gone), pruned \(pruned)")
        pool!.release()
        pool = nil
        loop.run(until: { false }, timeoutNanoseconds: 20_000_000)
    }
}
