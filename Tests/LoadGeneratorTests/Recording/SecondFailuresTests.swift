import PushVocabulary
import Testing
@testable import LoadGenerator

/// The driver thread's ring of per-second error answers, as the dashboard reads it.
@Suite struct SecondFailuresTests {
    @Test func aSecondsFailuresAreReadByReasonOrStatusUntilTheRingMovesOn() {
        let ring = SecondFailures()
        var byReason = [Int](repeating: 0, count: Reasons.count)
        var byStatus = [Int](repeating: 0, count: 600)
        byReason[Reasons.index(of: APNsReason.badDeviceToken)] = 3
        byStatus[503] = 2
        ring.put(second: 4, byReason: byReason, byStatus: byStatus, any: true)
        ring.put(second: 5, byReason: byReason, byStatus: byStatus, any: false)

        var counts: [String: Int64] = [:]
        #expect(ring.add(second: 4, into: &counts))
        #expect(counts == ["BadDeviceToken": 3, "503": 2])
        // Another thread's share of the same second adds up.
        #expect(ring.add(second: 4, into: &counts))
        #expect(counts == ["BadDeviceToken": 6, "503": 4])
        var none: [String: Int64] = [:]
        #expect(ring.add(second: 5, into: &none) && none.isEmpty)
        // A second never closed, or one the ring has moved past, is unknown.
        #expect(!ring.add(second: 6, into: &none))
        ring.put(second: 4 + SecondFailures.depth, byReason: byReason, byStatus: byStatus, any: false)
        #expect(!ring.add(second: 4, into: &none))
    }
}
