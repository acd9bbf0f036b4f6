/// An FCM HTTP v1 `errorCode` that FCM answers a send with, with its HTTP status and the canonical
/// google.rpc `status` of the error body. The raw value is FCM's exact string.
public enum FCMErrorCode: String, CaseIterable, Sendable {
    case invalidArgument = "INVALID_ARGUMENT", thirdPartyAuthError = "THIRD_PARTY_AUTH_ERROR"
    case senderIdMismatch = "SENDER_ID_MISMATCH", unregistered = "UNREGISTERED", quotaExceeded = "QUOTA_EXCEEDED"
    case `internal` = "INTERNAL", unavailable = "UNAVAILABLE"

    /// `errorCode` strings a sender may read that come with no status of their own, so the gateway never
    /// answers them: FCM's `UNSPECIFIED_ERROR`, and the older `APNS_AUTH_ERROR` (an auth error like
    /// `THIRD_PARTY_AUTH_ERROR`).
    public static let otherNames = ["UNSPECIFIED_ERROR", "APNS_AUTH_ERROR"]

    /// The HTTP status.
    public var status: UInt16 {
        switch self {
        case .invalidArgument: 400
        case .thirdPartyAuthError: 401
        case .senderIdMismatch: 403
        case .unregistered: 404
        case .quotaExceeded: 429
        case .internal: 500
        case .unavailable: 503
        }
    }

    /// The canonical google.rpc `status` string of the error body.
    public var rpcStatus: String {
        switch self {
        case .invalidArgument: "INVALID_ARGUMENT"
        case .thirdPartyAuthError: "UNAUTHENTICATED"
        case .senderIdMismatch: "PERMISSION_DENIED"
        case .unregistered: "NOT_FOUND"
        case .quotaExceeded: "RESOURCE_EXHAUSTED"
        case .internal: "INTERNAL"
        case .unavailable: "UNAVAILABLE"
        }
    }

    /// The code's position in ``allCases``, for per-code counters on the hot path.
    @inlinable public var code: UInt8 {
        // A case without a payload is stored as its declaration index (checked by the tests).
        unsafeBitCast(self, to: UInt8.self)
    }

    /// The code FCM answers when APNs answered `reason` (how an APNs failure shows through FCM).
    public init(mapping reason: APNsReason) {
        switch reason {
        case .unregistered, .expiredToken: self = .unregistered
        case .deviceTokenNotForTopic, .topicDisallowed: self = .senderIdMismatch
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
             .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken:
            self = .thirdPartyAuthError
        case .tooManyRequests, .tooManyProviderTokenUpdates: self = .quotaExceeded
        case .internalServerError: self = .internal
        case .serviceUnavailable, .shutdown, .idleTimeout: self = .unavailable
        default: self = .invalidArgument
        }
    }
}
