// The notification model of docs/protocols.md, "The payload" (the `aps` dictionary and custom keys) and "Request"
// (APNs request headers). A notification renders to template JSON, so the model, the template
// files and the three encoders share one path.

import PushVocabulary

/// The APNs request headers a provider sends beside the payload.
struct APNsHeaders: Sendable, Equatable {
    /// `apns-push-type`.
    public var pushType: APNsPushType
    /// `apns-topic` (bundle id plus the push type's suffix), or nil with a single-topic certificate.
    public var topic: String?
    /// `apns-priority`: 10, 5 or 1; nil leaves APNs' default (10).
    public var priority: Int?
    /// `apns-expiration`: UNIX seconds, 0 = deliver once; nil = not sent.
    public var expiration: Int64?
    /// `apns-collapse-id` (at most 64 bytes).
    public var collapseID: String?
    /// `apns-id`; per request, normally the request's message id.
    public var apnsID: PushUUID?

    /// Headers; defaults are an alert push with APNs' default priority.
    init(pushType: APNsPushType = .alert, topic: String? = nil, priority: Int? = nil,
                expiration: Int64? = nil, collapseID: String? = nil, apnsID: PushUUID? = nil) {
        self.pushType = pushType
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// Problems APNs would reject (in APNs' reason names, docs/protocols.md), empty when none.
    public func problems() -> [String] {
        var out: [String] = []
        if let p = priority, ![1, 5, 10].contains(p) { out.append("BadPriority: apns-priority must be 10, 5 or 1, not \(p)") }
        if pushType == .background, let p = priority, p != 5 {
            out.append("BadPriority: background pushes must use apns-priority 5")
        }
        if let c = collapseID, c.utf8.count > 64 {
            out.append("BadCollapseId: apns-collapse-id is \(c.utf8.count) bytes, the limit is 64")
        }
        if let e = expiration, e < 0 { out.append("BadExpirationDate: apns-expiration must be >= 0") }
        if let t = topic, t.isEmpty { out.append("BadTopic: apns-topic is empty") }
        if let t = topic, !pushType.topicSuffix.isEmpty, !t.hasSuffix(pushType.topicSuffix) {
            out.append("InvalidPushType: a \(pushType.rawValue) push needs a topic ending in \(pushType.topicSuffix)")
        }
        return out
    }
}

/// The `alert` dictionary (docs/protocols.md "The payload").
public struct Alert: Sendable, Equatable {
    /// `title`.
    public var title: String?
    /// `subtitle`.
    var subtitle: String?
    /// `body`.
    public var body: String?
    /// `launch-image`.
    var launchImage: String?
    /// `title-loc-key`.
    public var titleLocKey: String?
    /// `title-loc-args`.
    public var titleLocArgs: [String]?
    /// `subtitle-loc-key`.
    var subtitleLocKey: String?
    /// `subtitle-loc-args`.
    var subtitleLocArgs: [String]?
    /// `loc-key` (localized body).
    public var locKey: String?
    /// `loc-args`.
    public var locArgs: [String]?
    /// `action-loc-key` (older key).
    var actionLocKey: String?

    /// An alert; every key is optional.
    init(title: String? = nil, subtitle: String? = nil, body: String? = nil, launchImage: String? = nil,
                titleLocKey: String? = nil, titleLocArgs: [String]? = nil, subtitleLocKey: String? = nil,
                subtitleLocArgs: [String]? = nil, locKey: String? = nil, locArgs: [String]? = nil,
                actionLocKey: String? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.launchImage = launchImage
        self.titleLocKey = titleLocKey
        self.titleLocArgs = titleLocArgs
        self.subtitleLocKey = subtitleLocKey
        self.subtitleLocArgs = subtitleLocArgs
        self.locKey = locKey
        self.locArgs = locArgs
        self.actionLocKey = actionLocKey
    }
}

/// `alert`: a plain body string or a dictionary.
enum AlertContent: Sendable, Equatable {
    /// A plain string: the body text.
    case text(String)
    /// The alert dictionary.
    case dictionary(Alert)
}

/// `sound`: a file name (or "default"), or the critical-alert dictionary (docs/protocols.md "The payload").
enum Sound: Sendable, Equatable {
    /// A sound file name, or "default".
    case named(String)
    /// `{"critical": 1, "name": …, "volume": …}`.
    case critical(name: String, volume: Double?, critical: Bool)
}

/// `interruption-level` values.
enum InterruptionLevel: String, Sendable {
    /// `passive`, `active`, `time-sensitive`, `critical`.
    case passive, active, timeSensitive = "time-sensitive", critical
}

/// The `aps` dictionary (docs/protocols.md "The payload").
public struct APS: Sendable, Equatable {
    /// `alert`.
    var alert: AlertContent?
    /// `badge` (0 clears it).
    public var badge: Int?
    /// `sound`.
    var sound: Sound?
    /// `thread-id`.
    var threadID: String?
    /// `category`.
    public var category: String?
    /// `content-available: 1` when true.
    public var contentAvailable: Bool
    /// `mutable-content: 1` when true.
    public var mutableContent: Bool
    /// `target-content-id`.
    var targetContentID: String?
    /// `interruption-level`.
    var interruptionLevel: InterruptionLevel?
    /// `relevance-score` (0…1).
    var relevanceScore: Double?

    /// An `aps` dictionary; absent keys are not written.
    init(alert: AlertContent? = nil, badge: Int? = nil, sound: Sound? = nil, threadID: String? = nil,
                category: String? = nil, contentAvailable: Bool = false, mutableContent: Bool = false,
                targetContentID: String? = nil, interruptionLevel: InterruptionLevel? = nil,
                relevanceScore: Double? = nil) {
        self.alert = alert
        self.badge = badge
        self.sound = sound
        self.threadID = threadID
        self.category = category
        self.contentAvailable = contentAvailable
        self.mutableContent = mutableContent
        self.targetContentID = targetContentID
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
    }
}

/// A custom value beside `aps`.
enum CustomValue: Sendable, Equatable {
    /// A string (may hold placeholders such as `{{message_id}}`).
    case string(String)
    /// An integer.
    case int(Int64)
    /// A floating-point number.
    case double(Double)
    /// true or false.
    case bool(Bool)
    /// A bare placeholder value, e.g. `.placeholder("seq")` → `{{seq}}`.
    case placeholder(String)
}

/// A whole notification: `aps`, custom keys and headers.
///
///     var n = PushNotification.example
///     n.aps.badge = 3
///     let template = try PayloadTemplate(text: n.templateJSON())
struct PushNotification: Sendable, Equatable {
    /// The `aps` dictionary.
    public var aps: APS
    /// Custom top-level keys, in order. String values may hold placeholders (`"{{message_id}}"`).
    var custom: [(key: String, value: CustomValue)]
    /// The APNs request headers.
    public var headers: APNsHeaders

    /// A notification.
    init(aps: APS, custom: [(key: String, value: CustomValue)] = [], headers: APNsHeaders = .init()) {
        self.aps = aps
        self.custom = custom
        self.headers = headers
    }

    /// Equal when aps, custom keys (in order) and headers are equal.
    public static func == (a: PushNotification, b: PushNotification) -> Bool {
        a.aps == b.aps && a.headers == b.headers && a.custom.elementsEqual(b.custom) { $0.key == $1.key && $0.value == $1.value }
    }

    /// The default notification: Apple's and Firebase's example
    /// `{"aps":{"alert":{"title":"Portugal vs. Denmark","body":"great match!"},"badge":1},"customKey":"customValue"}`
    /// plus a per-request `"message_id":"{{message_id}}"`.
    public static let example = PushNotification(
        aps: APS(alert: .dictionary(Alert(title: "Portugal vs. Denmark", body: "great match!")), badge: 1),
        custom: [(key: "customKey", value: .string("customValue")), (key: "message_id", value: .string("{{message_id}}"))])

    /// The payload as template JSON (placeholders in custom values kept as written).
    func templateJSON() -> String {
        var w = ModelWriter()
        w.open()
        w.key("aps")
        w.open()
        if let alert = aps.alert {
            w.key("alert")
            switch alert {
            case .text(let s): w.string(s)
            case .dictionary(let a):
                w.open()
                w.optional("title", a.title)
                w.optional("subtitle", a.subtitle)
                w.optional("body", a.body)
                w.optional("launch-image", a.launchImage)
                w.optional("title-loc-key", a.titleLocKey)
                w.optionalArray("title-loc-args", a.titleLocArgs)
                w.optional("subtitle-loc-key", a.subtitleLocKey)
                w.optionalArray("subtitle-loc-args", a.subtitleLocArgs)
                w.optional("loc-key", a.locKey)
                w.optionalArray("loc-args", a.locArgs)
                w.optional("action-loc-key", a.actionLocKey)
                w.close()
            }
        }
        if let b = aps.badge { w.key("badge"); w.raw(String(b)) }
        if let s = aps.sound {
            w.key("sound")
            switch s {
            case .named(let name): w.string(name)
            case .critical(let name, let volume, let critical):
                w.open()
                w.key("critical"); w.raw(critical ? "1" : "0")
                w.optional("name", name)
                if let v = volume { w.key("volume"); w.raw(String(v)) }
                w.close()
            }
        }
        w.optional("thread-id", aps.threadID)
        w.optional("category", aps.category)
        if aps.contentAvailable { w.key("content-available"); w.raw("1") }
        if aps.mutableContent { w.key("mutable-content"); w.raw("1") }
        w.optional("target-content-id", aps.targetContentID)
        w.optional("interruption-level", aps.interruptionLevel?.rawValue)
        if let r = aps.relevanceScore { w.key("relevance-score"); w.raw(String(r)) }
        w.close()
        for (k, v) in custom {
            w.key(k)
            switch v {
            case .string(let s): w.string(s)
            case .int(let i): w.raw(String(i))
            case .double(let d): w.raw(String(d))
            case .bool(let b): w.raw(b ? "true" : "false")
            case .placeholder(let name): w.raw("{{\(name)}}")
            }
        }
        w.close()
        return String(decoding: w.out, as: UTF8.self)
    }
}

/// A tiny JSON writer for the model (not the hot path).
struct ModelWriter {
    var out: [UInt8] = []
    var needComma = false

    mutating func open() { comma(); out.append(UInt8(ascii: "{")); needComma = false }
    mutating func close() { out.append(UInt8(ascii: "}")); needComma = true }
    mutating func comma() { if needComma { out.append(UInt8(ascii: ",")) } }
    mutating func key(_ k: String) {
        comma()
        quoted(k)
        out.append(UInt8(ascii: ":"))
        needComma = false
    }
    mutating func quoted(_ s: String) {
        out.append(0x22)
        var u = Array(s.utf8)
        u.withUnsafeMutableBytes { JSONWriting.appendEscaped(UnsafeRawBufferPointer($0), to: &out) }
        out.append(0x22)
    }
    mutating func string(_ s: String) { comma(); quoted(s); needComma = true }
    mutating func raw(_ s: String) { comma(); out.append(contentsOf: Array(s.utf8)); needComma = true }
    mutating func optional(_ k: String, _ v: String?) { if let v { key(k); string(v) } }
    mutating func optionalArray(_ k: String, _ v: [String]?) {
        guard let v else { return }
        key(k)
        out.append(UInt8(ascii: "["))
        needComma = false
        for s in v { string(s) }
        out.append(UInt8(ascii: "]"))
        needComma = true
    }
}
