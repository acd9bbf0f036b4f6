import CAllocCounter
@testable import MockGateway
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
        var config = LoadConfiguration(host: gateway.host, port: gateway.port, template: .defaultAPNs(),
                                       tokens: DeviceTokens(synthetic: 4000, seed: 3))
        config.connections = 2
        config.streams = 32
        config.pruneGoneTokens = true
        let path = try ClientPath(config)
        defer { path.close() }
        // Warm up until some tokens are pruned, so the measured windows both prune and skip.
        #expect(path.serve(3_000))
        #expect(path.loop.run(until: { path.pool.pruned.count >= 50 }, timeoutNanoseconds: 30_000_000_000))
        var pruned0 = path.pool.pruned.count
        let best = path.allocationsOutsideNghttp2 {
            #expect(path.pool.pruned.count > pruned0, "no token pruned in the window")
            pruned0 = path.pool.pruned.count
        }
        #expect(best <= 20, "\(best) allocations outside nghttp2 for 2000 requests")
        #expect(!path.pool.tokensExhausted)
        // Each pruned token was refused once, and (closed loop, 64 in flight over 4000 tokens) sent to
        // again only if it was already in flight when its refusal came.
        let gone = path.core.recorder.measured.byReason[Reasons.unregistered]
        let pruned = path.pool.pruned.count
        #expect(gone >= pruned && gone <= pruned + 64, "gone answers \(gone), pruned \(pruned)")
    }
}
