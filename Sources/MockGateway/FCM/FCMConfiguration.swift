#if canImport(Glibc)
import Glibc
#endif

/// The FCM side of the mock gateway (and token churn, which both routes share), from
/// `pushbench gateway` flags. Everything is off by default except fan-out (10,000 devices/s, FCM's
/// typical speed) and the Apple topic FCM uses for the generated APNs request.
///
/// ```swift
/// let config = try GatewayConfiguration.parse(["--topic-subscribers", "news=100000", "--fcm-quota", "600000/min"])
/// config.fcm.subscribers(ofTopic: "news")   // 100000
/// ```
public struct FCMConfiguration: Equatable, Sendable {
    /// Subscribers per topic name (`--topic-subscribers NAME=N`, repeatable).
    public var topicSubscribers: [String: Int] = [:]
    /// Subscribers of a topic not named above (`--topic-subscribers N` or `*=N`); default 1000.
    public var defaultSubscribers = 1000
    /// Devices reached per second by a topic or condition fan-out (`--fanout-rate 10000/s`), per gateway.
    public var fanoutPerSecond = 10_000.0
    /// The project send quota (`--fcm-quota 600000/min`): messages per rolling window; nil = no quota.
    public var quota: FCMQuota?
    /// Fraction of the token space invalidated per second (`--token-churn 0.01/s`); 0 = none.
    public var tokenChurnPerSecond = 0.0
    /// How many delivered Apple pushes to keep for inspection (`--capture N`).
    public var capture = 0
    /// Failures injected on the FCM route by FCM error code (`--fcm-fail CODE=FRACTION`). When empty,
    /// the APNs `--fail` reasons are mapped onto FCM's codes instead.
    public var failures: [FCMFailureRate] = []
    /// The `apns-topic` FCM puts on the APNs request when `apns.headers` has none (`--fcm-apns-topic`).
    public var appleTopic = "com.example.pushbench"

    /// The defaults.
    public init() {}

    /// Subscribers a send to `topic` reaches.
    public func subscribers(ofTopic topic: String) -> Int { topicSubscribers[topic] ?? defaultSubscribers }

    /// The FCM options `GatewayConfiguration.parse` accepts.
    public static let options: [GatewayConfiguration.Option] = [
        .init(name: "--topic-subscribers", takesValue: true, repeats: true),
        .init(name: "--fanout-rate", takesValue: true, repeats: false),
        .init(name: "--fcm-quota", takesValue: true, repeats: false),
        .init(name: "--token-churn", takesValue: true, repeats: false),
        .init(name: "--capture", takesValue: true, repeats: false),
        .init(name: "--fcm-fail", takesValue: true, repeats: true),
        .init(name: "--fcm-apns-topic", takesValue: true, repeats: false),
    ]

    /// Help lines for the FCM options.
    public static let optionsHelp = """
      FCM (POST /v1/projects/<id>/messages:send; the behaviours above apply with FCM's codes):
      --topic-subscribers NAME=N  devices a topic send fans out to (repeatable); a bare N (or *=N)
                                  sets every other topic (default 1000)
      --fanout-rate N/s           devices reached per second by fan-out (default 10000/s)
      --fcm-quota N/UNIT          project quota, rolling window (e.g. 600000/min); 429 QUOTA_EXCEEDED over it
      --token-churn F/s           fraction of the token space invalidated per second (APNs: 410, FCM: 404)
      --capture N                 keep the first N delivered Apple pushes (headers + payload) in /stats
      --fcm-fail CODE=FRACTION    answer a fraction of valid FCM sends with an FCM error code (repeatable),
                                  e.g. --fcm-fail UNAVAILABLE=1%; without it --fail reasons are mapped
      --fcm-apns-topic TOPIC      apns-topic of the generated APNs request (default com.example.pushbench)
    """

    /// Applies one FCM option; false when `name` is not an FCM option.
    mutating func apply(option name: String, value: String) throws(GatewayConfigurationError) -> Bool {
        func fail(_ why: String) -> GatewayConfigurationError { GatewayConfigurationError("\(name): '\(value)' \(why)") }
        switch name {
        case "--topic-subscribers":
            if let eq = value.firstIndex(of: "=") {
                let topic = String(value[..<eq])
                guard let n = Int(value[value.index(after: eq)...]), n >= 0 else { throw fail("has a count that is not a whole number ≥ 0") }
                if topic == "*" { defaultSubscribers = n; return true }
                guard FCMNames.isValidTopic(topic) else { throw fail("has a topic name outside [a-zA-Z0-9-_.~%]") }
                topicSubscribers[topic] = n
            } else {
                guard let n = Int(value), n >= 0 else { throw fail("is not NAME=N or N (e.g. news=100000)") }
                defaultSubscribers = n
            }
        case "--fanout-rate":
            guard let (n, seconds) = Self.rate(value), n > 0 else { throw fail("is not a positive rate N/s (e.g. 10000/s)") }
            fanoutPerSecond = n / seconds
        case "--fcm-quota":
            guard let (n, seconds) = Self.rate(value), n >= 1, n == n.rounded() else {
                throw fail("is not a quota N/UNIT with a whole N ≥ 1 (e.g. 600000/min)")
            }
            quota = FCMQuota(messages: UInt64(n), windowNanos: UInt64(seconds * 1e9))
        case "--token-churn":
            guard let (f, seconds) = Self.rate(value), f >= 0, f / seconds <= 1 else {
                throw fail("is not a fraction per time unit (e.g. 0.01/s)")
            }
            tokenChurnPerSecond = f / seconds
        case "--capture":
            guard let n = Int(value), (0...100_000).contains(n) else { throw fail("is not a count 0...100000") }
            capture = n
        case "--fcm-fail":
            guard let eq = value.firstIndex(of: "=") else { throw fail("is not CODE=FRACTION") }
            let codeName = String(value[..<eq])
            guard let code = FCMErrorCode(name: codeName), code.status != 400 || code == .invalidArgument else {
                throw GatewayConfigurationError("\(name): '\(codeName)' is not an FCM error code (e.g. UNAVAILABLE, INTERNAL, UNREGISTERED)")
            }
            let fraction = try GatewayConfiguration.fraction(String(value[value.index(after: eq)...]), name)
            failures.removeAll { $0.code == code }
            failures.append(FCMFailureRate(code: code, fraction: fraction))
        case "--fcm-apns-topic":
            guard !value.isEmpty, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw fail("is not a bundle id") }
            appleTopic = value
        default:
            return false
        }
        return true
    }

    /// Checks what no single option can.
    func validate() throws(GatewayConfigurationError) {
        let total = failures.reduce(0) { $0 + $1.fraction }
        if total > 1.0000001 { throw GatewayConfigurationError("FCM failure fractions add up to \(total), more than 1") }
    }

    /// `N/s`, `N/min`, `N/m`, `N/h`, `N` (per second), `N/10s`: the count and the window in seconds.
    static func rate(_ text: String) -> (Double, Double)? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let n = Double(parts[0]), n.isFinite, n >= 0 else { return nil }
        guard parts.count == 2 else { return (n, 1) }
        var unit = parts[1]
        var scale = 1.0
        if let i = unit.firstIndex(where: { !($0.isNumber || $0 == ".") }), i != unit.startIndex {
            guard let s = Double(unit[..<i]), s > 0 else { return nil }
            scale = s
            unit = unit[i...]
        }
        switch unit {
        case "s", "sec": return (n, scale)
        case "m", "min": return (n, scale * 60)
        case "h", "hour": return (n, scale * 3600)
        default: return nil
        }
    }
}

/// A project quota: at most `messages` in any rolling window of `windowNanos`.
public struct FCMQuota: Equatable, Sendable {
    /// Messages allowed per window.
    public var messages: UInt64
    /// The window length in nanoseconds.
    public var windowNanos: UInt64
    /// A quota.
    public init(messages: UInt64, windowNanos: UInt64) { self.messages = messages; self.windowNanos = windowNanos }
}

/// A fraction of otherwise valid FCM sends answered with `code`.
public struct FCMFailureRate: Equatable, Sendable {
    /// The FCM error code (and so the status).
    public var code: FCMErrorCode
    /// The fraction, 0...1.
    public var fraction: Double
    /// A failure rate.
    public init(code: FCMErrorCode, fraction: Double) { self.code = code; self.fraction = fraction }
}

/// Name checks shared by the configuration and the request validator.
enum FCMNames {
    /// firebase-admin's topic rule `^[a-zA-Z0-9-_.~%]+$`.
    static func isValidTopic(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { isValidTopic(UnsafeRawBufferPointer($0)) }
    }

    @inline(__always)
    static func isValidTopic(_ b: UnsafeRawBufferPointer) -> Bool {
        guard !b.isEmpty else { return false }
        for c in b where !isTopicByte(c) { return false }
        return true
    }

    @inline(__always)
    static func isTopicByte(_ c: UInt8) -> Bool {
        switch c {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
             UInt8(ascii: "~"), UInt8(ascii: "%"): true
        default: false
        }
    }
}
