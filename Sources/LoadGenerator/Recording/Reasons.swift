import PushVocabulary

/// The `reason` strings a push gateway answers with (APNs) and FCM's `errorCode`s, as a fixed table
/// so a response's reason is counted by index, with no String made per response.
enum Reasons {
    /// Index 0 is "no reason" (a success, or an error body without one); the last index is "Other".
    static let names: [String] = [""] + APNsReason.allCases.map(\.rawValue)
        + FCMErrorCode.allCases.map(\.rawValue) + FCMErrorCode.otherNames + ["Other"]
    /// Number of reason slots.
    public static var count: Int { names.count }
    /// Index of "Other": a reason not in the table.
    static var other: Int { names.count - 1 }
    /// Index of "PayloadTooLarge" (counted locally for oversize payloads that are not sent).
    static let payloadTooLarge = index(of: APNsReason.payloadTooLarge)

    /// Index of APNs "Unregistered" (410: the token is no longer valid).
    static let unregistered = index(of: APNsReason.unregistered)
    /// Index of APNs "ExpiredToken" (410).
    static let expiredToken = index(of: APNsReason.expiredToken)
    /// Index of FCM "UNREGISTERED" (404).
    static let fcmUnregistered = index(of: FCMErrorCode.unregistered)

    /// The index of an APNs reason.
    public static func index(of reason: APNsReason) -> Int { 1 + Int(reason.code) }

    /// The index of an FCM error code.
    public static func index(of code: FCMErrorCode) -> Int { 1 + apnsCount + Int(code.code) }

    private static let apnsCount = APNsReason.allCases.count

    /// Whether an answer says the device token is gone, so a provider should stop sending to it:
    /// APNs 410 Unregistered/ExpiredToken, FCM 404 UNREGISTERED.
    @inline(__always)
    static func meansTokenGone(status: Int, reason: Int) -> Bool {
        (status == 410 && (reason == unregistered || reason == expiredToken)) || (status == 404 && reason == fcmUnregistered)
    }

    private static let utf8Names: [[UInt8]] = names.map { Array($0.utf8) }

    /// Finds the reason in an error body: APNs `{"reason":"BadDeviceToken"}` or FCM's
    /// `"errorCode": "UNREGISTERED"`. Returns 0 when there is none, ``other`` when unknown, and also
    /// ``other`` when the body is not one whole JSON object (cut off, as `{"reason":"Shutdown"`, or
    /// truncated by the client: `complete` false): a reason is only taken from a body that ends.
    /// Scans bytes only: no allocation, no JSON decoding (a body is one small object).
    public static func index(inBody body: UnsafeRawBufferPointer, complete: Bool = true) -> Int {
        let found = value(after: "\"reason\"", in: body) ?? value(after: "\"errorCode\"", in: body)
        guard let found else { return 0 }
        return complete && isWholeObject(body) ? lookup(found) : other
    }

    /// Whether `body` is one JSON object from its first to its last non-blank byte: braces and brackets
    /// balance outside strings and close exactly at the end. A cheap shape check, not a validation.
    static func isWholeObject(_ body: UnsafeRawBufferPointer) -> Bool {
        var i = 0, end = body.count
        while i < end && isBlank(body[i]) { i += 1 }
        while end > i && isBlank(body[end - 1]) { end -= 1 }
        guard i < end, body[i] == UInt8(ascii: "{"), body[end - 1] == UInt8(ascii: "}") else { return false }
        var depth = 0, inString = false, escaped = false
        while i < end {
            let c = body[i]
            i += 1
            if inString {
                if escaped { escaped = false } else if c == UInt8(ascii: "\\") { escaped = true } else if c == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch c {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                // The outermost object closes only at the last byte.
                if depth == 0 && i != end { return false }
                if depth < 0 { return false }
            default: break
            }
        }
        return depth == 0 && !inString
    }

    @inline(__always) private static func isBlank(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }

    /// The reason index of `name`, or ``other``.
    public static func index(of name: String) -> Int {
        names.firstIndex(of: name) ?? other
    }

    private static func lookup(_ value: UnsafeRawBufferPointer) -> Int {
        for i in 1..<(utf8Names.count - 1) {
            let name = utf8Names[i]
            if name.count == value.count && name.withUnsafeBytes({ memcmpEqual($0, value) }) { return i }
        }
        return other
    }

    @inline(__always) private static func memcmpEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        for i in 0..<a.count where a[i] != b[i] { return false }
        return true
    }

    /// The bytes of the string value following `key` (`"key" : "value"`), if any.
    private static func value(after key: StaticString, in body: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        let k = UnsafeRawBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
        guard body.count > k.count else { return nil }
        var i = 0
        while i + k.count <= body.count {
            if body[i] == k[0] && memcmpEqual(k, UnsafeRawBufferPointer(rebasing: body[i..<(i + k.count)])) {
                var j = i + k.count
                while j < body.count && (body[j] == 0x20 || body[j] == 0x09 || body[j] == 0x0A || body[j] == 0x0D) { j += 1 }
                guard j < body.count, body[j] == UInt8(ascii: ":") else { i += 1; continue }
                j += 1
                while j < body.count && (body[j] == 0x20 || body[j] == 0x09 || body[j] == 0x0A || body[j] == 0x0D) { j += 1 }
                guard j < body.count, body[j] == UInt8(ascii: "\"") else { return nil }
                let s = j + 1
                var e = s
                while e < body.count && body[e] != UInt8(ascii: "\"") { e += 1 }
                guard e < body.count else { return nil }
                return UnsafeRawBufferPointer(rebasing: body[s..<e])
            }
            i += 1
        }
        return nil
    }
}
