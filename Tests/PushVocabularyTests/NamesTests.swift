import PushVocabulary
import Testing

@Suite struct NamesTests {
    /// Apple's reasons and statuses, written out independently of the enum.
    static let apns: [(String, UInt16)] = [
        ("BadCollapseId", 400), ("BadDeviceToken", 400), ("BadExpirationDate", 400), ("BadMessageId", 400),
        ("BadPriority", 400), ("BadTopic", 400), ("DeviceTokenNotForTopic", 400), ("DuplicateHeaders", 400),
        ("IdleTimeout", 400), ("InvalidPushType", 400), ("MissingDeviceToken", 400), ("MissingTopic", 400),
        ("PayloadEmpty", 400), ("TopicDisallowed", 400),
        ("BadCertificate", 403), ("BadCertificateEnvironment", 403), ("ExpiredProviderToken", 403), ("Forbidden", 403),
        ("InvalidProviderToken", 403), ("MissingProviderToken", 403), ("UnrelatedKeyIdInToken", 403),
        ("BadEnvironmentKeyIdInToken", 403),
        ("BadPath", 404), ("MethodNotAllowed", 405), ("ExpiredToken", 410), ("Unregistered", 410), ("PayloadTooLarge", 413),
        ("TooManyProviderTokenUpdates", 429), ("TooManyRequests", 429), ("InternalServerError", 500),
        ("ServiceUnavailable", 503), ("Shutdown", 503),
    ]

    @Test func apnsReasonsRoundTripWithTheirStatuses() throws {
        #expect(APNsReason.allCases.map(\.rawValue) == Self.apns.map(\.0))
        for (name, status) in Self.apns {
            let r = try #require(APNsReason(rawValue: name))
            #expect(r.rawValue == name && r.status == status, "\(name)")
        }
        #expect(APNsReason(rawValue: "badDeviceToken") == nil && APNsReason(rawValue: "") == nil)
    }

    @Test func codesAreTheCasesPositions() {
        for (i, r) in APNsReason.allCases.enumerated() {
            #expect(Int(r.code) == i && APNsReason(code: r.code) == r, "\(r)")
        }
        #expect(APNsReason(code: UInt8(APNsReason.allCases.count)) == nil && APNsReason(code: 255) == nil)
        for (i, c) in FCMErrorCode.allCases.enumerated() { #expect(Int(c.code) == i, "\(c)") }
    }

    @Test func fcmCodesRoundTripWithTheirStatuses() throws {
        let expected: [(String, UInt16, String)] = [
            ("INVALID_ARGUMENT", 400, "INVALID_ARGUMENT"), ("THIRD_PARTY_AUTH_ERROR", 401, "UNAUTHENTICATED"),
            ("SENDER_ID_MISMATCH", 403, "PERMISSION_DENIED"), ("UNREGISTERED", 404, "NOT_FOUND"),
            ("QUOTA_EXCEEDED", 429, "RESOURCE_EXHAUSTED"), ("INTERNAL", 500, "INTERNAL"), ("UNAVAILABLE", 503, "UNAVAILABLE"),
        ]
        #expect(FCMErrorCode.allCases.map(\.rawValue) == expected.map(\.0))
        for (name, status, rpc) in expected {
            let c = try #require(FCMErrorCode(rawValue: name))
            #expect(c.status == status && c.rpcStatus == rpc, "\(name)")
        }
        for other in FCMErrorCode.otherNames { #expect(FCMErrorCode(rawValue: other) == nil) }
    }

    @Test func apnsFailuresMapOntoFcmCodesOfTheSameKind() {
        #expect(FCMErrorCode(mapping: .unregistered) == .unregistered && FCMErrorCode(mapping: .expiredToken) == .unregistered)
        #expect(FCMErrorCode(mapping: .invalidProviderToken) == .thirdPartyAuthError)
        #expect(FCMErrorCode(mapping: .tooManyRequests) == .quotaExceeded)
        #expect(FCMErrorCode(mapping: .shutdown) == .unavailable && FCMErrorCode(mapping: .internalServerError) == .internal)
        #expect(FCMErrorCode(mapping: .badDeviceToken) == .invalidArgument)
    }

    @Test func pushTypesAreReadFromHeaderBytes() {
        func read(_ s: String) -> APNsPushType? { Array(s.utf8).withUnsafeBytes { APNsPushType(headerValue: $0) } }
        let names = ["alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity",
                     "pushtotalk", "widgets"]
        #expect(APNsPushType.allCases.map(\.rawValue) == names)
        for n in names { #expect(read(n)?.rawValue == n, "\(n)") }
        for bad in ["", "ALERT", "alerts", "aler", "voip\u{0}", " voip", "liveactivityx", "background-extra-long"] {
            #expect(read(bad) == nil, "\(bad)")
        }
        #expect(APNsPushType.voip.topicSuffix == ".voip" && APNsPushType.alert.topicSuffix.isEmpty)
    }

    @Test func payloadLimits() {
        #expect(PayloadLimits.limit(for: .apns) == 4096 && PayloadLimits.limit(for: .apns, pushType: .voip) == 5120)
        #expect(APNsPushType.voip.payloadLimit == 5120 && APNsPushType.background.payloadLimit == 4096)
        #expect(PayloadLimits.limit(for: .fcm) == 4096 && PayloadLimits.limit(for: .fcm, topic: true) == 2048)
        #expect(PushProtocol.allCases.map(\.rawValue) == ["apns", "fcm"])
    }

    @Test func theVersionIsDottedNumbers() {
        let parts = PushbenchVersion.current.split(separator: ".")
        #expect(parts.count == 3 && parts.allSatisfy { Int($0) != nil })
    }
}
