/// Base64url (RFC 4648 §5) without padding, as JWTs use it.
public enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// `bytes` encoded, without padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var buffer: UInt32 = 0
        var bits = 0
        for b in bytes {
            buffer = buffer << 8 | UInt32(b)
            bits += 8
            while bits >= 6 {
                bits -= 6
                out.append(alphabet[Int((buffer >> UInt32(bits)) & 63)])
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(6 - bits)) & 63)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The value of one base64url digit, or nil.
    @inline(__always)
    static func digit(_ c: UInt8) -> UInt32? {
        switch c {
        case 0x41...0x5A: UInt32(c - 0x41)
        case 0x61...0x7A: UInt32(c - 0x61 + 26)
        case 0x30...0x39: UInt32(c - 0x30 + 52)
        case 0x2D: 62
        case 0x5F: 63
        default: nil
        }
    }

    /// Decodes `text` into `out`; returns the number of bytes written, or nil when `text` is not base64url
    /// (a character outside the alphabet, a length no encoding has, or more bytes than `out` holds).
    /// Trailing `=` padding is tolerated. Allocates nothing.
    public static func decode(_ text: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        var end = text.count
        while end > 0 && text[end - 1] == 0x3D { end -= 1 }
        if end % 4 == 1 { return nil }
        var buffer: UInt32 = 0
        var bits = 0
        var n = 0
        for i in 0..<end {
            guard let d = digit(text[i]) else { return nil }
            buffer = buffer << 6 | d
            bits += 6
            if bits >= 8 {
                bits -= 8
                guard n < out.count else { return nil }
                out[n] = UInt8(truncatingIfNeeded: buffer >> UInt32(bits))
                n += 1
            }
        }
        // The bits left over must be zero in a canonical encoding; tolerate them as most decoders do.
        return n
    }

    /// Decodes `text` into a new array, or nil when it is not base64url.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var s = String(text)
        return s.withUTF8 { utf8 in
            var out = [UInt8](repeating: 0, count: utf8.count * 3 / 4 + 3)
            let n = out.withUnsafeMutableBytes { decode(UnsafeRawBufferPointer(utf8), into: $0) }
            guard let n else { return nil }
            out.removeLast(out.count - n)
            return out
        }
    }
}
