import Testing
@testable import LoadGenerator

@Suite struct ReasonsTests {
    private func index(_ body: String) -> Int {
        Array(body.utf8).withUnsafeBytes { Reasons.index(inBody: $0) }
    }

    @Test func parsesApnsAndFcmErrorBodies() {
        #expect(Reasons.names[index(#"{"reason":"BadDeviceToken"}"#)] == "BadDeviceToken")
        #expect(Reasons.names[index(#"{"reason" : "Unregistered", "timestamp": 1700000000000}"#)] == "Unregistered")
        let fcm = #"{"error":{"code":404,"status":"NOT_FOUND","details":[{"@type":"x","errorCode": "UNREGISTERED"}]}}"#
        #expect(Reasons.names[index(fcm)] == "UNREGISTERED")
        #expect(index(#"{"reason":"SomethingNew"}"#) == Reasons.other)
        #expect(index("") == 0)
        #expect(index(#"{"reason":"#) == 0)
        #expect(index(#"{"reason":"Unterminated"#) == 0)
    }

    /// A reason counts only from a body that is one whole object: a cut-off `{"reason":"Shutdown"` used
    /// to count as Shutdown.
    @Test func aTruncatedOrTrailingBodyIsNotItsReason() {
        #expect(index(#"{"reason":"Shutdown""#) == Reasons.other)
        #expect(index(#"{"reason":"Shutdown"}garbage"#) == Reasons.other)
        #expect(index(#"{"reason":"Shutdown"}{"reason":"Shutdown"}"#) == Reasons.other)
        #expect(Reasons.names[index(#"  {"reason":"BadDeviceToken","x":"}{\"","y":[1,{"z":2}]} "#)] == "BadDeviceToken")
        let whole = Array(#"{"reason":"BadDeviceToken"}"#.utf8)
        #expect(whole.withUnsafeBytes { Reasons.index(inBody: $0, complete: false) } == Reasons.other)
    }

    @Test func reasonsOfGoneTokens() {
        let unregistered = Array(#"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#.utf8)
        let quota = Array(#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"errorCode": "QUOTA_EXCEEDED"}]}}"#.utf8)
        let u = unregistered.withUnsafeBytes { Reasons.index(inBody: $0) }
        let q = quota.withUnsafeBytes { Reasons.index(inBody: $0) }
        #expect(Reasons.names[u] == "UNREGISTERED" && Reasons.names[q] == "QUOTA_EXCEEDED")
        #expect(Reasons.meansTokenGone(status: 404, reason: u))
        #expect(!Reasons.meansTokenGone(status: 404, reason: 0))  // wrong path: NOT_FOUND without errorCode
        #expect(!Reasons.meansTokenGone(status: 429, reason: q))
        #expect(Reasons.meansTokenGone(status: 410, reason: Reasons.index(of: "Unregistered")))
        #expect(Reasons.meansTokenGone(status: 410, reason: Reasons.index(of: "ExpiredToken")))
        #expect(!Reasons.meansTokenGone(status: 400, reason: Reasons.index(of: "BadDeviceToken")))
    }
}
