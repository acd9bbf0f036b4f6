import Foundation
import PushCredentials
import PushVocabulary

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
    var topicSubscribers: [String: Int] = [:]
    /// Subscribers of a topic not named above (`--topic-subscribers N` or `*=N`); default 1000.
    var defaultSubscribers = 1000
    /// Devices reached per second by a topic or condition fan-out (`--fanout-rate 10000/s`), per gateway.
    var fanoutPerSecond = 10_000.0
    /// The project send quota (`--fcm-quota 600000/min`): messages per rolling window; nil = no quota.
    var quota: FCMQuota?
    /// Fraction of the token space invalidated per second (`--token-churn 0.01/s`); 0 = none.
    public var tokenChurnPerSecond = 0.0
    /// How many delivered Apple pushes to keep for inspection (`--capture N`).
    public var capture = 0
    /// Failures injected on the FCM route by FCM error code (`--fcm-fail CODE=FRACTION`). When empty,
    /// the APNs `--fail` reasons are mapped onto FCM's codes instead.
    var failures: [FCMFailureRate] = []
    /// The `apns-topic` FCM puts on the APNs request when `apns.headers` has none (`--fcm-apns-topic`).
    var appleTopic = "com.example.pushbench"
    /// How the send route checks bearer tokens (`--fcm-auth`): any well-formed one, or only access
    /// tokens the token endpoint issued and that have not expired.
    public var auth = FCMAuthMode.off
    /// The service account whose key checks token-endpoint assertions (`--fcm-service-account FILE`);
    /// nil accepts any well-formed assertion.
    public var serviceAccount: ServiceAccount?
    /// Paths the OAuth2 token endpoint answers on: `/token` and each `--fcm-token-path`.
    var tokenPaths = ["/token"]
    /// `expires_in` of the access tokens issued, and how long they are accepted (`--fcm-token-lifetime`).
    var accessTokenLifetimeSeconds = 3599

    /// The defaults.
    init() {}

    /// Subscribers a send to `topic` reaches.
    func subscribers(ofTopic topic: String) -> Int { topicSubscribers[topic] ?? defaultSubscribers }

    /// Checks what no single option can.
    func validate() throws(GatewayConfigurationError) {
        let total = failures.reduce(0) { $0 + $1.fraction }
        if total > 1.0000001 { throw GatewayConfigurationError("FCM failure fractions add up to \(total), more than 1") }
    }
}

/// A project quota: at most `messages` in any rolling window of `windowNanos`.
struct FCMQuota: Equatable, Sendable {
    /// Messages allowed per window.
    var messages: UInt64
    /// The window length in nanoseconds.
    var windowNanos: UInt64
    /// A quota.
    init(messages: UInt64, windowNanos: UInt64) { self.messages = messages; self.windowNanos = windowNanos }
}

/// A fraction of otherwise valid FCM sends answered with `code`.
struct FCMFailureRate: Equatable, Sendable {
    /// The FCM error code (and so the status).
    var code: FCMErrorCode
    /// The fraction, 0...1.
    var fraction: Double
    /// A failure rate.
    init(code: FCMErrorCode, fraction: Double) { self.code = code; self.fraction = fraction }
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

extension FCMConfiguration {
    /// Reads the `"fcm"` object of a scenario file:
    ///
    ///     "fcm": {"topic_subscribers": {"news": 100000, "*": 1000}, "fanout_per_second": 10000,
    ///             "quota": {"messages": 600000, "window_seconds": 60}, "token_churn_per_second": 0.01,
    ///             "capture": 10, "failures": {"UNAVAILABLE": 0.01}, "apns_topic": "com.example.app"}
    mutating func applyScenario(_ value: JSONValue, path: String) throws(GatewayConfigurationError) {
        func error(_ field: String, _ why: String) -> GatewayConfigurationError {
            GatewayConfigurationError("scenario \(path): field 'fcm.\(field)': \(why)")
        }
        func number(_ v: JSONValue, _ field: String) throws(GatewayConfigurationError) -> Double {
            guard let n = v.number, n.isFinite else { throw error(field, "must be a number") }
            return n
        }
        func count(_ v: JSONValue, _ field: String) throws(GatewayConfigurationError) -> Int {
            let d = try number(v, field)
            guard d >= 0, d == d.rounded(), d < 1e15 else { throw error(field, "must be a whole number ≥ 0") }
            return Int(d)
        }
        guard let o = value.object else {
            throw GatewayConfigurationError("scenario \(path): field 'fcm': must be a JSON object")
        }
        let allowed = ["topic_subscribers", "fanout_per_second", "quota", "token_churn_per_second", "capture", "failures", "apns_topic"]
        for key in o.keys.sorted() where !allowed.contains(key) {
            throw error(key, "unknown field (expected one of \(allowed.joined(separator: ", ")))")
        }
        if let v = o["topic_subscribers"] {
            guard let t = v.object else { throw error("topic_subscribers", "must be a JSON object of topic: count") }
            for (name, n) in t.sorted(by: { $0.key < $1.key }) {
                let c = try count(n, "topic_subscribers.\(name)")
                if name == "*" { defaultSubscribers = c; continue }
                guard FCMNames.isValidTopic(name) else { throw error("topic_subscribers.\(name)", "the topic name must match [a-zA-Z0-9-_.~%]+") }
                topicSubscribers[name] = c
            }
        }
        if let v = o["fanout_per_second"] {
            let r = try number(v, "fanout_per_second")
            guard r > 0 else { throw error("fanout_per_second", "must be more than 0") }
            fanoutPerSecond = r
        }
        if let v = o["quota"] {
            guard let q = v.object, let m = q["messages"] else { throw error("quota", "must be {\"messages\": N, \"window_seconds\": S}") }
            let messages = try count(m, "quota.messages")
            let window = try number(q["window_seconds"] ?? .int(60), "quota.window_seconds")
            guard messages >= 1, window > 0 else { throw error("quota", "needs messages ≥ 1 and window_seconds > 0") }
            quota = FCMQuota(messages: UInt64(messages), windowNanos: UInt64(window * 1e9))
        }
        if let v = o["token_churn_per_second"] {
            let f = try number(v, "token_churn_per_second")
            guard f >= 0, f <= 1 else { throw error("token_churn_per_second", "must be a fraction between 0 and 1") }
            tokenChurnPerSecond = f
        }
        if let v = o["capture"] {
            let n = try count(v, "capture")
            guard n <= 100_000 else { throw error("capture", "must be at most 100000") }
            capture = n
        }
        if let v = o["failures"] {
            guard let f = v.object else { throw error("failures", "must be a JSON object of CODE: fraction") }
            failures = []
            for (name, fraction) in f.sorted(by: { $0.key < $1.key }) {
                guard let code = FCMErrorCode(rawValue: name) else { throw error("failures.\(name)", "not an FCM error code (e.g. UNAVAILABLE)") }
                let x = try number(fraction, "failures.\(name)")
                guard x >= 0, x <= 1 else { throw error("failures.\(name)", "must be a fraction between 0 and 1") }
                failures.append(FCMFailureRate(code: code, fraction: x))
            }
        }
        if let v = o["apns_topic"] {
            guard let s = v.string, !s.isEmpty, s.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw error("apns_topic", "must be a bundle id string")
            }
            appleTopic = s
        }
    }
}
