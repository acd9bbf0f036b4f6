/// Which push API a request is for.
public enum PushProtocol: String, Sendable, CaseIterable {
    case apns, fcm
}

/// Payload size limits in body bytes, checked before a request is sent.
public enum PayloadLimits {
    /// APNs: 5120 bytes for VoIP pushes, 4096 for every other push type.
    public static func apns(_ pushType: APNsPushType) -> Int { pushType == .voip ? 5120 : 4096 }

    /// FCM: 4096 bytes, 2048 for messages sent to a topic (or a condition of topics).
    public static func fcm(topic: Bool) -> Int { topic ? 2048 : 4096 }

    /// The limit for a protocol: the APNs push type matters for APNs, `topic` for FCM.
    public static func limit(for proto: PushProtocol, pushType: APNsPushType = .alert, topic: Bool = false) -> Int {
        switch proto {
        case .apns: return apns(pushType)
        case .fcm: return fcm(topic: topic)
        }
    }
}
