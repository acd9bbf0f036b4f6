/// A 64-bit fingerprint of a device token, so a push's token travels from the gateway's loops to a
/// pipeline run (and its `--log`) as one number: the run finds the token in its own list by it. FNV-1a
/// over the token with ASCII letters lowercased (APNs tokens are hex in either case); never 0, which
/// means "no token".
public enum PushTokenHash {
    /// The fingerprint of `token`; 0 for an empty one.
    @inline(__always)
    public static func of(_ token: UnsafeRawBufferPointer) -> UInt64 {
        guard !token.isEmpty else { return 0 }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for c in token {
            h = (h ^ UInt64(c >= 65 && c <= 90 ? c | 0x20 : c)) &* 0x0000_0100_0000_01B3
        }
        return h == 0 ? 1 : h
    }

    /// The fingerprint of `token`'s UTF-8 bytes.
    public static func of(_ token: String) -> UInt64 {
        var t = token
        return t.withUTF8 { of(UnsafeRawBufferPointer($0)) }
    }

    /// The token of an APNs push, the path's part after `/3/device/` (up to a `?`); 0 when the path is
    /// not such a path.
    @inline(__always)
    public static func ofAPNsPath(_ path: UnsafeRawBufferPointer) -> UInt64 {
        let prefix = DeviceTokens.apnsPathPrefix
        let n = prefix.utf8CodeUnitCount, p = prefix.utf8Start
        guard path.count > n else { return 0 }
        for i in 0..<n where path[i] != p[i] { return 0 }
        var end = n
        while end < path.count && path[end] != UInt8(ascii: "?") { end += 1 }
        return of(UnsafeRawBufferPointer(rebasing: path[n..<end]))
    }

    /// The token of an FCM send, the string value of the body's first `"token"` member (a byte scan:
    /// a `"token"` key in the message's data before the target's would be taken instead); 0 when
    /// there is none.
    @inline(__always)
    public static func ofFCMBody(_ body: UnsafeRawBufferPointer) -> UInt64 {
        let key: StaticString = "\"token\""
        let k = key.utf8CodeUnitCount, kb = key.utf8Start
        var i = 0
        search: while i + k <= body.count {
            for j in 0..<k where body[i + j] != kb[j] { i += 1; continue search }
            var v = i + k
            while v < body.count && (body[v] == 0x20 || body[v] == 0x09 || body[v] == 0x0A || body[v] == 0x0D) { v += 1 }
            guard v < body.count, body[v] == UInt8(ascii: ":") else { i += 1; continue search }
            v += 1
            while v < body.count && (body[v] == 0x20 || body[v] == 0x09 || body[v] == 0x0A || body[v] == 0x0D) { v += 1 }
            guard v < body.count, body[v] == UInt8(ascii: "\"") else { return 0 }
            let start = v + 1
            var end = start
            while end < body.count && body[end] != UInt8(ascii: "\"") { end += 1 }
            guard end < body.count else { return 0 }
            return of(UnsafeRawBufferPointer(rebasing: body[start..<end]))
        }
        return 0
    }
}
