/// The two forms of an ES256 signature APNs accepts in a provider token, read into r ‖ s: the JWS form
/// (RFC 7518, r and s as 32 bytes each) and the DER form, an ASN.1 `SEQUENCE { INTEGER r, INTEGER s }`,
/// which Java's `SHA256withECDSA` (and so every JVM client that signs with it) puts in the token.
///
/// ```swift
/// ES256Signature.raw(fromDER: der)    // 64 bytes r ‖ s, or nil unless der is strict DER with 1 ≤ r, s < n
/// ```
enum ES256Signature {
    /// The order n of P-256's base point, big-endian: r and s lie in 1...n-1.
    static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// The longest DER form: a SEQUENCE of two INTEGERs of 33 bytes (a zero before a high bit).
    static let maxDERLength = 72

    /// r ‖ s from a DER ECDSA signature, or nil unless `der` is exactly one SEQUENCE of two INTEGERs in
    /// DER's one encoding (definite minimal lengths, minimal non-negative integers, nothing after it)
    /// with r and s in 1...n-1.
    static func raw(fromDER der: UnsafeRawBufferPointer) -> [UInt8]? {
        guard der.count >= 8, der.count <= maxDERLength, der[0] == 0x30,
              der[1] < 0x80, Int(der[1]) == der.count - 2 else { return nil }
        var raw = [UInt8](repeating: 0, count: 64)
        var at = 2
        for half in 0..<2 {
            guard at + 2 <= der.count, der[at] == 0x02, der[at + 1] < 0x80 else { return nil }
            let length = Int(der[at + 1])
            let start = at + 2
            at = start + length
            guard length > 0, at <= der.count else { return nil }
            // Non-negative and minimal: a leading zero only when the next byte's high bit needs it.
            if der[start] & 0x80 != 0 { return nil }
            var first = start
            if der[start] == 0 && length > 1 {
                guard der[start + 1] & 0x80 != 0 else { return nil }
                first += 1
            }
            let digits = at - first
            guard digits <= 32 else { return nil }
            for i in 0..<digits { raw[half * 32 + 32 - digits + i] = der[first + i] }
        }
        guard at == der.count else { return nil }
        return inRange(raw) ? raw : nil
    }

    /// Whether r and s of `raw` (r ‖ s, 64 bytes) both lie in 1...n-1, as a valid signature's must.
    static func inRange(_ raw: [UInt8]) -> Bool {
        guard raw.count == 64 else { return false }
        return isScalar(raw[0..<32]) && isScalar(raw[32..<64])
    }

    /// Whether the 32 big-endian bytes `v` are neither zero nor n or more.
    private static func isScalar(_ v: ArraySlice<UInt8>) -> Bool {
        guard v.contains(where: { $0 != 0 }) else { return false }
        for (a, b) in zip(v, order) where a != b { return a < b }
        return false
    }
}
