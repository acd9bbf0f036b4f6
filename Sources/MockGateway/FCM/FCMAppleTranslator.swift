import PushPayload
import PushVocabulary

/// Turns an FCM message into the APNs request FCM would send for an Apple target
/// (docs/protocols.md "How FCM builds the APNs push") and checks it with APNs' rules (``GatewayStateMachine/validateAPNs``):
///
/// - the payload: `aps` from the notification, `apns.payload.aps` and the legacy keys, then the
///   custom keys of `apns.payload`, then `data` (`apns.payload` wins a clash), then FCM's own keys;
/// - the headers: `apns.headers`, else FCM's defaults (push type from what the payload shows,
///   priority from the push type, the app's topic, an expiration 30 days out).
///
/// Only `--capture` needs the payload's bytes: the APNs checks look at its size alone (it is a JSON
/// object by construction). Without capture the writer only counts: same walk, same size, no copies.
struct FCMAppleTranslator {
    /// The state machine's configuration at its fixed address: held as a value, Swift copied all of it
    /// onto the stack for every translation, twice.
    let rules: UnsafePointer<GatewayConfiguration>
    /// The reused payload, expiration and topic buffers.
    let storage: FCMStorage

    /// A translator checking against `rules`, which must outlive it (the state machine that owns both).
    init(rules: UnsafePointer<GatewayConfiguration>) {
        self.rules = rules
        storage = FCMStorage(appleTopic: rules.pointee.fcm.appleTopic)
    }

    /// The translation: the APNs request (its views valid until the next translation), or the FCM
    /// error it leads to.
    struct Built {
        var problem: FCMResponse?
        var request = GatewayRequest()
    }

    /// Translates message `m`, read by `reader`. `messageID` goes into `gcm.message_id` (FCM's fake id
    /// when `validateOnly`); `expirationSeconds` is the default `apns-expiration`.
    func build(_ m: FCMMessage, from reader: FCMMessageReader, messageID: UInt64, validateOnly: Bool,
               expirationSeconds: UInt64) -> Built {
        var w = rules.pointee.fcm.capture > 0 ? ByteWriter(storage.payload) : ByteWriter(countingOnly: storage.payload)
        var flags = ApsFlags()
        w.literal("{\"aps\":{")
        var first = true
        writeAlert(m, reader, &w, &first, &flags)
        if let aps = m.aps {
            var it = reader.members(aps)
            while let (k, v) = reader.next(&it) {
                if reader.stringEquals(k, "alert") || reader.laterSibling(k, in: aps) { continue }
                writeApsMember(k, v, reader, &w, &first, &flags)
            }
        }
        if m.legacyNotification, let n = m.notification {
            var it = reader.members(n)
            while let (k, v) = reader.next(&it) {
                guard let legacy = LegacyKey.named(reader.rawBytes(k)), !legacy.inAlert else { continue }
                if legacy.apsName == .badge, flags.badge { continue }
                if legacy.apsName == .sound, flags.sound { continue }
                if legacy.apsName == .category, flags.category { continue }
                Self.member(&w, &first, legacy.apsName.bytes, reader.rawValue(v), quoted: false)
                flags.note(legacy.apsName)
            }
        }
        w.byte(UInt8(ascii: "}"))
        if let p = m.apnsPayload {
            var it = reader.members(p)
            while let (k, v) = reader.next(&it) {
                if reader.stringEquals(k, "aps") || reader.laterSibling(k, in: p) { continue }
                w.byte(UInt8(ascii: ",")); w.quoted(reader.rawBytes(k)); w.byte(UInt8(ascii: ":"))
                w.bytes(reader.rawValue(v))
            }
        }
        if let d = m.data {
            var it = reader.members(d)
            while let (k, v) = reader.next(&it) {
                if reader.laterSibling(k, in: d) { continue }
                if let p = m.apnsPayload, reader.member(reader.rawBytes(k), of: p) != nil { continue }
                w.byte(UInt8(ascii: ",")); w.quoted(reader.rawBytes(k)); w.byte(UInt8(ascii: ":"))
                w.quoted(reader.rawBytes(v))
            }
        }
        w.literal(",\"gcm.message_id\":\"")
        if validateOnly { w.literal("fake_message_id") } else { FCMMessageID.write(messageID, to: &w) }
        w.byte(UInt8(ascii: "\""))
        if let image = m.apnsImage ?? m.image {
            w.literal(",\"fcm_options\":{\"image\":")
            w.quoted(reader.rawBytes(image))
            w.byte(UInt8(ascii: "}"))
        }
        w.byte(UInt8(ascii: "}"))

        var built = Built()
        var r = GatewayRequest()
        r.method = Self.bytes("POST")
        if let h = m.apnsHeaders {
            var it = reader.members(h)
            while let (k, v) = reader.next(&it) {
                let name = reader.rawBytes(k), value = reader.rawBytes(v)
                if Self.equalsIgnoringCase(name, "apns-priority") { r.priority = value }
                else if Self.equalsIgnoringCase(name, "apns-expiration") { r.expiration = value }
                else if Self.equalsIgnoringCase(name, "apns-push-type") { r.pushType = value }
                else if Self.equalsIgnoringCase(name, "apns-collapse-id") { r.collapseID = value }
                else if Self.equalsIgnoringCase(name, "apns-topic") { r.topic = value }
                else if Self.equalsIgnoringCase(name, "apns-id") { r.apnsID = value }
            }
        }
        let explicitPushType = r.pushType != nil
        if r.pushType == nil {
            if m.liveActivityToken != nil { r.pushType = Self.bytes("liveactivity") }
            else { r.pushType = flags.visible ? Self.bytes("alert") : Self.bytes("background") }
        }
        let background = equals(r.pushType!, "background")
        if r.priority == nil {
            r.priority = background ? Self.bytes("5") : Self.bytes("10")
        } else if background, !explicitPushType, equals(r.priority!, "10") {
            built.problem = .error(.invalidArgument, .dataOnlyPriority)
            return built
        }
        if r.topic == nil { r.topic = storage.appleTopicBytes }
        if r.expiration == nil { r.expiration = storage.expirationDigits(expirationSeconds) }
        guard w.count <= storage.payload.count else {
            let limit = PayloadLimits.apns(equals(r.pushType!, "voip") ? .voip : .alert)
            built.problem = .error(.invalidArgument, .payloadTooBig, FCMInlineText(), UInt64(w.count), UInt64(limit))
            return built
        }
        // Without capture these bytes are not the payload (nothing reads them): only the count is.
        r.body = UnsafeRawBufferPointer(rebasing: storage.payload[0..<w.count])
        if let reason = GatewayStateMachine.validateAPNs(r, configuration: rules, checkPath: false) {
            if reason == .payloadTooLarge {
                let limit = PayloadLimits.apns(equals(r.pushType!, "voip") ? .voip : .alert)
                built.problem = .error(.invalidArgument, .payloadTooBig, FCMInlineText(), UInt64(w.count), UInt64(limit))
            } else {
                built.problem = .error(.invalidArgument, .apnsRejected, FCMInlineText(reason.rawValue))
            }
            return built
        }
        built.request = r
        return built
    }

    /// What the `aps` written so far shows.
    struct ApsFlags {
        var alert = false, badge = false, sound = false, category = false, contentAvailable = false
        /// Whether the push shows something (alert, badge or sound): push type alert, else background.
        var visible: Bool { alert || badge || sound }

        mutating func note(_ name: ApsName) {
            switch name {
            case .badge: badge = true
            case .sound: sound = true
            case .category: category = true
            case .contentAvailable: contentAvailable = true
            default: break
            }
        }
    }

    /// `aps.alert`: `apns.payload.aps.alert` as given when it is not an object; otherwise an object
    /// merging the notification's title and body, the legacy alert keys and the payload's alert members.
    private func writeAlert(_ m: FCMMessage, _ reader: FCMMessageReader, _ w: inout ByteWriter,
                            _ first: inout Bool, _ flags: inout ApsFlags) {
        var payloadAlert: Int?
        if let aps = m.aps { payloadAlert = reader.member("alert", of: aps) }
        if let a = payloadAlert, reader.entry(a).kind != .object {
            Self.member(&w, &first, Self.bytes("alert"), reader.rawValue(a), quoted: false)
            flags.alert = true
            return
        }
        var hasLegacyAlert = false
        if m.legacyNotification, let n = m.notification {
            var it = reader.members(n)
            while let (k, _) = reader.next(&it) {
                if LegacyKey.named(reader.rawBytes(k))?.inAlert == true { hasLegacyAlert = true }
            }
        }
        guard payloadAlert != nil || m.title != nil || m.body != nil || hasLegacyAlert else { return }
        if !first { w.byte(UInt8(ascii: ",")) }
        first = false
        w.literal("\"alert\":{")
        var f = true
        if let t = m.title, !reader.has(payloadAlert, "title") {
            Self.member(&w, &f, Self.bytes("title"), reader.rawBytes(t), quoted: true)
        }
        if let b = m.body, !reader.has(payloadAlert, "body") {
            Self.member(&w, &f, Self.bytes("body"), reader.rawBytes(b), quoted: true)
        }
        if hasLegacyAlert, let n = m.notification {
            var it = reader.members(n)
            while let (k, v) = reader.next(&it) {
                guard let legacy = LegacyKey.named(reader.rawBytes(k)), legacy.inAlert else { continue }
                if let a = payloadAlert, reader.member(legacy.apsName.bytes, of: a) != nil { continue }
                Self.member(&w, &f, legacy.apsName.bytes, reader.rawValue(v), quoted: false)
            }
        }
        if let a = payloadAlert {
            var it = reader.members(a)
            while let (k, v) = reader.next(&it) {
                if reader.laterSibling(k, in: a) { continue }
                Self.member(&w, &f, reader.rawBytes(k), reader.rawValue(v), quoted: false)
            }
        }
        w.byte(UInt8(ascii: "}"))
        flags.alert = true
    }

    /// One member of `apns.payload.aps`, with the legacy snake_case names mapped to APNs' names.
    private func writeApsMember(_ k: Int, _ v: Int, _ reader: FCMMessageReader, _ w: inout ByteWriter,
                                _ first: inout Bool, _ flags: inout ApsFlags) {
        var name = reader.rawBytes(k)
        var aps: ApsName = .other
        if equals(name, "content_available") { aps = .contentAvailable }
        else if equals(name, "mutable_content") { aps = .mutableContent }
        else if equals(name, "click_action") { aps = .category }
        else if equals(name, "content-available") { aps = .contentAvailable }
        else if equals(name, "badge") { aps = .badge }
        else if equals(name, "sound") { aps = .sound }
        else if equals(name, "category") { aps = .category }
        if aps != .other { name = aps.bytes }
        let kind = reader.entry(v).kind
        if aps == .contentAvailable || aps == .mutableContent {
            // Legacy booleans: true → 1, false → left out.
            if kind == .false { return }
            if kind == .true {
                Self.member(&w, &first, name, Self.bytes("1"), quoted: false)
                flags.note(aps)
                return
            }
        }
        Self.member(&w, &first, name, reader.rawValue(v), quoted: false)
        flags.note(aps)
    }

    @inline(__always)
    private static func member(_ w: inout ByteWriter, _ first: inout Bool, _ key: UnsafeRawBufferPointer,
                               _ value: UnsafeRawBufferPointer, quoted: Bool) {
        if !first { w.byte(UInt8(ascii: ",")) }
        first = false
        w.quoted(key)
        w.byte(UInt8(ascii: ":"))
        if quoted { w.quoted(value) } else { w.bytes(value) }
    }

    @inline(__always)
    static func bytes(_ s: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)
    }

    static func equalsIgnoringCase(_ b: UnsafeRawBufferPointer, _ lower: StaticString) -> Bool {
        guard b.count == lower.utf8CodeUnitCount else { return false }
        let p = lower.utf8Start
        for i in 0..<b.count {
            let c = b[i]
            if ((c >= 0x41 && c <= 0x5A) ? c | 0x20 : c) != p[i] { return false }
        }
        return true
    }
}

/// APNs `aps` names the legacy keys map to.
enum ApsName {
    case badge, sound, category, contentAvailable, mutableContent, locKey, locArgs, titleLocKey, titleLocArgs, other

    var bytes: UnsafeRawBufferPointer {
        switch self {
        case .badge: FCMAppleTranslator.bytes("badge")
        case .sound: FCMAppleTranslator.bytes("sound")
        case .category: FCMAppleTranslator.bytes("category")
        case .contentAvailable: FCMAppleTranslator.bytes("content-available")
        case .mutableContent: FCMAppleTranslator.bytes("mutable-content")
        case .locKey: FCMAppleTranslator.bytes("loc-key")
        case .locArgs: FCMAppleTranslator.bytes("loc-args")
        case .titleLocKey: FCMAppleTranslator.bytes("title-loc-key")
        case .titleLocArgs: FCMAppleTranslator.bytes("title-loc-args")
        case .other: FCMAppleTranslator.bytes("")
        }
    }
}

/// Legacy-API keys seen in `notification` (docs/protocols.md) and where they go in `aps`.
enum LegacyKey {
    /// The `aps` name of legacy key `raw`, and whether it goes inside `aps.alert`; nil for other keys.
    static func named(_ raw: UnsafeRawBufferPointer) -> (apsName: ApsName, inAlert: Bool)? {
        switch raw.count {
        case 5: if equals(raw, "badge") { return (.badge, false) }
            if equals(raw, "sound") { return (.sound, false) }
        case 12: if equals(raw, "click_action") { return (.category, false) }
            if equals(raw, "body_loc_key") { return (.locKey, true) }
        case 13: if equals(raw, "body_loc_args") { return (.locArgs, true) }
            if equals(raw, "title_loc_key") { return (.titleLocKey, true) }
        case 14: if equals(raw, "title_loc_args") { return (.titleLocArgs, true) }
        default: break
        }
        return nil
    }
}

/// Buffers the translation reuses on every request of one loop.
final class FCMStorage {
    /// The Apple payload being built (anything past 16 KiB is far over every limit).
    let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 8)
    /// Digits of the default `apns-expiration` (bytes 0..<20), their count (byte 23) and the seconds they
    /// spell (bytes 24..<32): raw memory rather than class properties, which cost an exclusivity check each.
    let expiration = UnsafeMutableRawBufferPointer.allocate(byteCount: 32, alignment: 8)
    private let topic: UnsafeMutableRawBufferPointer
    private let topicCount: Int

    init(appleTopic: String) {
        expiration.initializeMemory(as: UInt8.self, repeating: 0)
        payload.initializeMemory(as: UInt8.self, repeating: 0)
        let t = Array(appleTopic.utf8)
        topic = .allocate(byteCount: max(1, t.count), alignment: 1)
        topic.copyBytes(from: t)
        topicCount = t.count
    }

    deinit {
        payload.deallocate()
        expiration.deallocate()
        topic.deallocate()
    }

    /// The app's bundle id, the default `apns-topic`.
    var appleTopicBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: topic[0..<topicCount]) }

    /// The decimal digits of `seconds`, rewritten only when the second changes.
    @inline(__always)
    func expirationDigits(_ seconds: UInt64) -> UnsafeRawBufferPointer {
        let base = expiration.baseAddress!
        if base.load(fromByteOffset: 24, as: UInt64.self) != seconds || base.load(fromByteOffset: 23, as: UInt8.self) == 0 {
            let n = JSONWriting.writeDecimal(seconds, to: base)
            base.storeBytes(of: UInt8(n), toByteOffset: 23, as: UInt8.self)
            base.storeBytes(of: seconds, toByteOffset: 24, as: UInt64.self)
        }
        return UnsafeRawBufferPointer(start: base, count: Int(base.load(fromByteOffset: 23, as: UInt8.self)))
    }
}
