import Testing
@testable import MockGateway

@Suite struct BehaviourAllocationTests {
    @Test(arguments: [["--unregistered", "0.1"], ["--fail", "InternalServerError=0.05"], ["--token-rate", "1000000"], ["--latency", "1ms-2ms"], ["--latency", "p50=1ms,p100=3ms"], ["--goaway-after-streams", "10", "--streams-drop-on-error"], ["--fail", "Unregistered=0.5"]])
    func decisionWithBehaviourAllocatesNothing(_ flags: [String]) throws {
        var h = try Harness(flags)
        let best = h.allocationsPer1000(TestRequest())
        #expect(best == 0, "\(flags): \(best) allocations per 1000 requests (the apns-id is generated)")
    }
}
