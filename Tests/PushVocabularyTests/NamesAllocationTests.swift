import AllocationTesting
import PushVocabulary
import Testing

@Suite struct NamesAllocationTests {
    @Test func namesOnTheHotPathAllocateNothing() {
        let header = Array("liveactivity".utf8)
        header.withUnsafeBytes { h in
            #expect(minAllocations { for _ in 0..<100 { _ = APNsPushType(headerValue: h) } } == 0)
        }
        #expect(minAllocations { _ = APNsReason.shutdown.code; _ = APNsReason.badTopic.status } == 0)
        #expect(minAllocations { _ = FCMErrorCode.quotaExceeded.code } == 0)
    }
}
