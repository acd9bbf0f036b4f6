import PushPayload
import PushVocabulary

/// An FCM send request's message as indices into its parsed body: what the decision and the Apple
/// translation read. Built by ``FCMMessageReader``.
struct FCMMessage {
    /// Where the message goes (the tape index of the value naming it); a message has exactly one.
    enum Target: Equatable { case none, token(Int), topic(Int), condition(Int), fid(Int) }

    var target = Target.none
    var data: Int?
    var notification: Int?
    var title: Int?, body: Int?, image: Int?
    /// `notification` holds keys of the legacy API (`badge`, `body_loc_key`, …).
    var legacyNotification = false
    var apnsHeaders: Int?
    var apnsPayload: Int?
    var aps: Int?
    var apnsImage: Int?
    var liveActivityToken: Int?
    /// `validate_only`: check and answer, deliver nothing.
    var validateOnly = false
}

/// Reads an FCM send request's body: parses it onto a reused ``JSONTape`` and checks it as FCM does
/// (unknown fields, wrong types, reserved data keys, at most one target), collecting an
/// ``FCMMessage``. Its walking helpers (members, raw values, repeated keys) serve the Apple
/// translation too. One per loop; the body is borrowed for the request being read.
///
/// Index loops rather than closures throughout: a closure capturing locals costs heap boxes in debug builds.
struct FCMMessageReader {
    private(set) var tape = JSONTape(capacity: 512)
    /// The body being read (valid during its request only).
    private(set) var body = UnsafeRawBufferPointer(start: nil, count: 0)

    /// Parses `body` and reads its message into `m`; the error answer for the first problem found.
    mutating func read(_ body: UnsafeRawBufferPointer, into m: inout FCMMessage) -> FCMResponse? {
        self.body = body
        if let e = tape.parse(body) {
            return .error(.invalidArgument, .invalidJSON, FCMInlineText(e.code.reason), UInt64(e.line), UInt64(e.column))
        }
        let root = tape.root
        guard tape[root].kind == .object else { return .error(.invalidArgument, .wrongType, FCMInlineText("request")) }
        var message: Int?
        var it = members(root)
        while let (k, v) = next(&it) {
            let ke = tape[k]
            if key(k, ke, "message") {
                guard tape[v].kind == .object else { return .error(.invalidArgument, .wrongType, FCMInlineText("message")) }
                message = v
            } else if key(k, ke, "validate_only", "validateOnly") {
                guard let b = tape.bool(at: v) else { return .error(.invalidArgument, .wrongType, FCMInlineText("validate_only")) }
                m.validateOnly = b
            } else {
                return .error(.invalidArgument, .unknownField, FCMInlineText(rawBytes(k)))
            }
        }
        guard let message else { return .error(.invalidArgument, .missingMessage) }
        return readMessage(message, into: &m)
    }

    // MARK: the message's parts

    private func readMessage(_ message: Int, into m: inout FCMMessage) -> FCMResponse? {
        var it = members(message)
        while let (k, v) = next(&it) {
            let ke = tape[k]
            let kind = tape[v].kind
            var target = FCMMessage.Target.none
            var targetName: StaticString = ""
            if key(k, ke, "token") { target = .token(v); targetName = "token" }
            else if key(k, ke, "topic") { target = .topic(v); targetName = "topic" }
            else if key(k, ke, "condition") { target = .condition(v); targetName = "condition" }
            else if key(k, ke, "fid") { target = .fid(v); targetName = "fid" }
            if target != .none {
                guard kind == .string else { return wrongType("message.", targetName) }
                if !Self.sameTarget(m.target, target) && m.target != .none {
                    return .error(.invalidArgument, .twoTargets, FCMInlineText(static: targetName))
                }
                m.target = target
            } else if key(k, ke, "data") {
                guard kind == .object else { return wrongType("message.", "data") }
                if let bad = checkData(v) { return bad }
                m.data = v
            } else if key(k, ke, "notification") {
                guard kind == .object else { return wrongType("message.", "notification") }
                m.notification = v
                if let bad = readNotification(v, into: &m) { return bad }
            } else if key(k, ke, "apns") {
                guard kind == .object else { return wrongType("message.", "apns") }
                if let bad = readApns(v, into: &m) { return bad }
            } else if key(k, ke, "fcm_options", "fcmOptions") {
                guard kind == .object else { return wrongType("message.", "fcm_options") }
                if let bad = checkFcmOptions(v, allowImage: false) { return bad }
            } else if key(k, ke, "android") || key(k, ke, "webpush") {
                // Not used on the Apple path; only its shape is checked.
                if kind != .object { return .error(.invalidArgument, .wrongType, FCMInlineText(rawBytes(k))) }
            } else if key(k, ke, "name") {
                if kind != .string { return wrongType("message.", "name") }
            } else {
                return .error(.invalidArgument, .unknownField, FCMInlineText(rawBytes(k)))
            }
        }
        return nil
    }

    private static func sameTarget(_ a: FCMMessage.Target, _ b: FCMMessage.Target) -> Bool {
        switch (a, b) {
        case (.token, .token), (.topic, .topic), (.condition, .condition), (.fid, .fid): true
        default: false
        }
    }

    private func wrongType(_ prefix: StaticString, _ field: StaticString) -> FCMResponse {
        var text = FCMInlineText()
        let a = UnsafeRawBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        let b = UnsafeRawBufferPointer(start: field.utf8Start, count: field.utf8CodeUnitCount)
        withUnsafeTemporaryAllocation(byteCount: 64, alignment: 1) { buf in
            var w = ByteWriter(buf)
            w.bytes(a); w.bytes(b)
            text = FCMInlineText(UnsafeRawBufferPointer(rebasing: buf[0..<min(w.count, 64)]))
        }
        return .error(.invalidArgument, .wrongType, text)
    }

    /// `data`: every value a string; no reserved key (`from`, `message_type`, `google.*`, `gcm.*`).
    private func checkData(_ data: Int) -> FCMResponse? {
        var it = members(data)
        while let (k, v) = next(&it) {
            let raw = rawBytes(k)
            if equals(raw, "from") || equals(raw, "message_type") || hasPrefix(raw, "google.") || hasPrefix(raw, "gcm.")
                || equals(raw, "google") || equals(raw, "gcm") {
                return .error(.invalidArgument, .reservedDataKey, FCMInlineText(raw))
            }
            if tape[v].kind != .string { return .error(.invalidArgument, .dataNotString, FCMInlineText(raw)) }
        }
        return nil
    }

    private func readNotification(_ n: Int, into m: inout FCMMessage) -> FCMResponse? {
        var it = members(n)
        while let (k, v) = next(&it) {
            let ke = tape[k]
            let isString = tape[v].kind == .string
            if key(k, ke, "title") { m.title = v }
            else if key(k, ke, "body") { m.body = v }
            else if key(k, ke, "image") { m.image = v }
            else if LegacyKey.named(rawBytes(k)) != nil {
                m.legacyNotification = true
                continue
            } else {
                return .error(.invalidArgument, .unknownField, FCMInlineText(rawBytes(k)))
            }
            if !isString { return wrongType("message.notification.", "title/body/image") }
        }
        return nil
    }

    private func readApns(_ a: Int, into m: inout FCMMessage) -> FCMResponse? {
        var it = members(a)
        while let (k, v) = next(&it) {
            let ke = tape[k]
            let kind = tape[v].kind
            if key(k, ke, "headers") {
                guard kind == .object else { return wrongType("message.apns.", "headers") }
                var hs = members(v)
                while let (_, h) = next(&hs) {
                    if tape[h].kind != .string { return wrongType("message.apns.", "headers (values must be strings)") }
                }
                m.apnsHeaders = v
            } else if key(k, ke, "payload") {
                guard kind == .object else { return wrongType("message.apns.", "payload") }
                m.apnsPayload = v
                if let aps = member("aps", of: v) {
                    guard tape[aps].kind == .object else { return wrongType("message.apns.payload.", "aps") }
                    m.aps = aps
                }
            } else if key(k, ke, "fcm_options", "fcmOptions") {
                guard kind == .object else { return wrongType("message.apns.", "fcm_options") }
                if let bad = checkFcmOptions(v, allowImage: true) { return bad }
                if let image = member("image", of: v) { m.apnsImage = image }
            } else if key(k, ke, "live_activity_token", "liveActivityToken") {
                guard kind == .string else { return wrongType("message.apns.", "live_activity_token") }
                m.liveActivityToken = v
            } else {
                return .error(.invalidArgument, .unknownField, FCMInlineText(rawBytes(k)))
            }
        }
        return nil
    }

    /// `fcm_options`: `analytics_label` matching `^[a-zA-Z0-9-_.~%]{1,50}$`; `image` (a string) where allowed.
    private func checkFcmOptions(_ o: Int, allowImage: Bool) -> FCMResponse? {
        var it = members(o)
        while let (k, v) = next(&it) {
            let ke = tape[k]
            if key(k, ke, "analytics_label", "analyticsLabel") {
                let raw = rawBytes(v)
                if tape[v].kind != .string || tape[v].hasEscapes || raw.count > 50 || !FCMNames.isValidTopic(raw) {
                    return .error(.invalidArgument, .badAnalyticsLabel)
                }
            } else if allowImage, key(k, ke, "image") {
                if tape[v].kind != .string { return wrongType("message.apns.fcm_options.", "image") }
            } else {
                return .error(.invalidArgument, .unknownField, FCMInlineText(rawBytes(k)))
            }
        }
        return nil
    }

    // MARK: walking the tape

    /// Whether key `k` (entry `e`) is `a`.
    @inline(__always)
    private func key(_ k: Int, _ e: JSONTape.Entry, _ a: StaticString) -> Bool {
        // Most keys are unescaped: compare lengths, then bytes, without calling into the tape.
        if e.hasEscapes { return tape.stringEquals(at: k, a, in: body) }
        let n = a.utf8CodeUnitCount
        guard e.end - e.start == n else { return false }
        // Field names are short: a byte loop beats a call to memcmp.
        let p = a.utf8Start, q = body.baseAddress!.assumingMemoryBound(to: UInt8.self) + e.start
        var i = 0
        while i < n {
            if p[i] != q[i] { return false }
            i += 1
        }
        return true
    }

    /// Whether key `k` is `a` or `b` (FCM takes snake_case and lowerCamelCase alike).
    @inline(__always)
    private func key(_ k: Int, _ e: JSONTape.Entry, _ a: StaticString, _ b: StaticString) -> Bool {
        key(k, e, a) || key(k, e, b)
    }

    /// A cursor over an object's members.
    struct Members { var index: Int; var left: Int }

    /// The members of object `o` (none if it is not an object).
    @inline(__always)
    func members(_ o: Int) -> Members {
        Members(index: o + 1, left: tape[o].kind == .object ? tape[o].count : 0)
    }

    /// The next `(key, value)` indices, or nil at the end.
    @inline(__always)
    func next(_ it: inout Members) -> (Int, Int)? {
        guard it.left > 0 else { return nil }
        let k = it.index
        it.index = tape[k + 1].next
        it.left -= 1
        return (k, k + 1)
    }

    /// The entry at `i`.
    @inline(__always) func entry(_ i: Int) -> JSONTape.Entry { tape[i] }

    /// The bytes of the value or key at `i` (a string without its quotes, escapes as written).
    @inline(__always) func rawBytes(_ i: Int) -> UnsafeRawBufferPointer { tape.rawBytes(at: i, in: body) }

    /// The JSON text of the value at `v` (a string with its quotes).
    @inline(__always)
    func rawValue(_ v: Int) -> UnsafeRawBufferPointer {
        let e = tape[v]
        if e.kind == .string { return UnsafeRawBufferPointer(rebasing: body[(e.start - 1)...e.end]) }
        return tape.rawBytes(at: v, in: body)
    }

    /// The member named `name` of object `o`, if any.
    @inline(__always) func member(_ name: StaticString, of o: Int) -> Int? { tape.member(name, of: o, in: body) }

    /// The member named `name` (bytes) of object `o`, if any.
    @inline(__always) func member(_ name: UnsafeRawBufferPointer, of o: Int) -> Int? { tape.member(name, of: o, in: body) }

    /// Whether the string or key at `i` is `s`.
    @inline(__always) func stringEquals(_ i: Int, _ s: StaticString) -> Bool { tape.stringEquals(at: i, s, in: body) }

    /// The string at `i`, unescaped (allocates: capture only).
    func string(_ i: Int) -> String? { tape.string(at: i, in: body) }

    /// Whether object `o` (if any) has a member `name`.
    @inline(__always)
    func has(_ o: Int?, _ name: StaticString) -> Bool {
        guard let o else { return false }
        return tape.member(name, of: o, in: body) != nil
    }

    /// Whether a later member of object `object` has the same key as `k` (JSON lets keys repeat; the last wins).
    func laterSibling(_ k: Int, in object: Int) -> Bool {
        let end = tape[object].next
        var i = tape[k + 1].next
        let mine = rawBytes(k)
        while i < end {
            if rawBytes(i).elementsEqual(mine) { return true }
            i = tape[i + 1].next
        }
        return false
    }
}
