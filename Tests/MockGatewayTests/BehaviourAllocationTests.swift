import Testing
import CAllocCounter
@testable import MockGateway

@Suite struct BehaviourAllocationTests {
    @Test(arguments: [["--unregistered", "0.1"], ["--fail", "InternalServerError=0.05"], ["--token-rate", "1000000"], ["--latency", "1ms-2ms"], ["--latency", "p50=1ms,p100=3ms"], ["--goaway-after-streams", "10", "--streams-drop-on-error"], ["--fail", "Unregistered=0.5"]])
    func decisionWithBehaviourAllocatesNothing(_ flags: [String]) throws {
        var h = try Harness(flags)
        let request = TestRequest()
        var best = UInt64.max
        request.with { req in
            for round in 0..<5 {
                pb_alloc_reset()
                for _ in 0..<1000 { _ = h.machine.handle(req, connection: &h.connection, now: h.now) }
                if round > 0 { best = min(best, pb_alloc_count()) }
            }
        }
        #expect(best == 0, "\(flags): \(best) allocations per 1000 requests (the apns-id is generated)")
    }
}
