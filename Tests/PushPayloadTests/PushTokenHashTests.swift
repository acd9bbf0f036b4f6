import Testing
@testable import PushPayload

/// A push's device token as one number: found in an APNs path or an FCM body, the same for either case
/// of hex, 0 for none.
@Suite struct PushTokenHashTests {
    static func apns(_ path: String) -> UInt64 {
        var p = path
        return p.withUTF8 { PushTokenHash.ofAPNsPath(UnsafeRawBufferPointer($0)) }
    }

    static func fcm(_ body: String) -> UInt64 {
        var b = body
        return b.withUTF8 { PushTokenHash.ofFCMBody(UnsafeRawBufferPointer($0)) }
    }

    @Test func theTokenIsFoundWhereEachRouteCarriesIt() {
        let token = String(repeating: "ab", count: 32)
        let h = PushTokenHash.of(token)
        #expect(h != 0 && h != PushTokenHash.of(String(repeating: "ab", count: 31) + "ac"))
        #expect(PushTokenHash.of(token.uppercased()) == h, "hex in either case")
        #expect(Self.apns("/3/device/" + token) == h)
        #expect(Self.apns("/3/device/" + token + "?x=1") == h)
        #expect(Self.apns("/3/device/") == 0 && Self.apns("/v1/projects/p/messages:send") == 0)
        #expect(Self.fcm(#"{"message":{"token":"\#(token)","notification":{"title":"t"}}}"#) == h)
        #expect(Self.fcm("{\"message\": {\"data\": {\"tokens\": \"x\"}, \"token\" : \"\(token)\"}}") == h)
        #expect(Self.fcm(#"{"message":{"topic":"news"}}"#) == 0)
        #expect(Self.fcm(#"{"message":{"token":12}}"#) == 0 && Self.fcm(#"{"message":{"token":"abc"#) == 0)
        #expect(PushTokenHash.of("") == 0)
    }
}
