import CAllocCounter
import PushVocabulary
import Testing

/// Allocations of one call of `body`: warmed up, minimum over a few runs.
func minAllocations(_ body: () -> Void) -> UInt64 {
    body()
    var best = UInt64.max
    for _ in 0..<5 {
        pb_alloc_reset()
        body()
        best = min(best, pb_alloc_count())
    }
    return best
}

@Suite struct VocabularyAllocationTests {
    @Test func namesOnTheHotPathAllocateNothing() {
        let header = Array("liveactivity".utf8)
        header.withUnsafeBytes { h in
            #expect(minAllocations { for _ in 0..<100 { _ = APNsPushType(headerValue: h) } } == 0)
        }
        #expect(minAllocations { _ = APNsReason.shutdown.code; _ = APNsReason.badTopic.status } == 0)
        #expect(minAllocations { _ = FCMErrorCode.quotaExceeded.code } == 0)
    }
}
