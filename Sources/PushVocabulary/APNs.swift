/// An APNs error `reason` with the HTTP status APNs answers it with. The raw value is Apple's exact
/// string: some clients turn the reason into an error class by name, so no other spelling is accepted.
public enum APNsReason: String, CaseIterable, Sendable {
    // 400
    case badCollapseId = "BadCollapseId", badDeviceToken = "BadDeviceToken", badExpirationDate = "BadExpirationDate"
    case badMessageId = "BadMessageId", badPriority = "BadPriority", badTopic = "BadTopic"
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic", duplicateHeaders = "DuplicateHeaders"
    case idleTimeout = "IdleTimeout", invalidPushType = "InvalidPushType", missingDeviceToken = "MissingDeviceToken"
    case missingTopic = "MissingTopic", payloadEmpty = "PayloadEmpty", topicDisallowed = "TopicDisallowed"
    // 403
    case badCertificate = "BadCertificate", badCertificateEnvironment = "BadCertificateEnvironment"
    case expiredProviderToken = "ExpiredProviderToken", forbidden = "Forbidden"
    case invalidProviderToken = "InvalidProviderToken", missingProviderToken = "MissingProviderToken"
    case unrelatedKeyIdInToken = "UnrelatedKeyIdInToken", badEnvironmentKeyIdInToken = "BadEnvironmentKeyIdInToken"
    // 404, 405, 410, 413, 429, 500, 503
    case badPath = "BadPath", methodNotAllowed = "MethodNotAllowed", expiredToken = "ExpiredToken"
    case unregistered = "Unregistered", payloadTooLarge = "PayloadTooLarge"
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates", tooManyRequests = "TooManyRequests"
    case internalServerError = "InternalServerError", serviceUnavailable = "ServiceUnavailable", shutdown = "Shutdown"

    /// The HTTP status APNs answers with this reason.
    public var status: UInt16 {
        switch self {
        case .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
             .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
             .missingTopic, .payloadEmpty, .topicDisallowed:
            400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
             .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .expiredToken, .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        }
    }

    /// The reason's position in ``allCases``: a small number that indexes per-reason tables and counters
    /// on the hot path, where a String would be hashed or compared.
    @inlinable public var code: UInt8 {
        // A case without a payload is stored as its declaration index (checked by the tests).
        unsafeBitCast(self, to: UInt8.self)
    }

    /// The reason whose ``code`` is `code`, if there is one.
    public init?(code: UInt8) {
        guard Int(code) < Self.caseCount else { return nil }
        self = unsafeBitCast(code, to: APNsReason.self)
    }

    private static let caseCount = allCases.count
}

/// `apns-push-type` values.
public enum APNsPushType: String, Sendable, CaseIterable {
    /// The push types APNs knows.
    case alert, background, location, voip, complication, fileprovider, mdm, liveactivity, pushtotalk, widgets

    /// The suffix the `apns-topic` carries for this push type (after the bundle id).
    public var topicSuffix: String {
        switch self {
        case .alert, .background, .mdm: return ""
        case .location: return ".location-query"
        case .voip: return ".voip"
        case .complication: return ".complication"
        case .fileprovider: return ".pushkit.fileprovider"
        case .liveactivity: return ".push-type.liveactivity"
        case .pushtotalk: return ".voip-ptt"
        case .widgets: return ".push-type.widgets"
        }
    }

    /// The payload size limit for this push type.
    public var payloadLimit: Int { PayloadLimits.apns(self) }

    /// The push type an `apns-push-type` header value names (exact bytes), without allocating: the
    /// gateway reads one per request.
    @inlinable public init?(headerValue bytes: UnsafeRawBufferPointer) {
        guard let key = PackedName(bytes) else { return nil }
        let names = Self.packedNames
        var i = 0
        while i < names.count {
            if names[i] == key {
                self = unsafeBitCast(UInt8(i), to: APNsPushType.self)
                return
            }
            i += 1
        }
        return nil
    }

    /// ``allCases``' raw values packed, in case order, for ``init(headerValue:)``.
    @usableFromInline static let packedNames: [PackedName] = allCases.map { c in
        var s = c.rawValue
        return s.withUTF8 { PackedName(UnsafeRawBufferPointer($0))! }
    }
}

/// Up to 16 bytes of a short name in two words, so a name is compared in two integer compares.
@usableFromInline struct PackedName: Equatable, Sendable {
    @usableFromInline var low: UInt64
    @usableFromInline var high: UInt64
    @usableFromInline var count: Int

    /// `bytes` packed, or nil when they are longer than 16 bytes.
    @inlinable init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= 16 else { return nil }
        var low: UInt64 = 0, high: UInt64 = 0
        let n = bytes.count
        if n >= 8 {
            low = bytes.loadUnaligned(as: UInt64.self)
            for i in 8..<n { high |= UInt64(bytes[i]) << UInt64((i - 8) * 8) }
        } else {
            for i in 0..<n { low |= UInt64(bytes[i]) << UInt64(i * 8) }
        }
        self.low = low
        self.high = high
        count = bytes.count
    }
}
