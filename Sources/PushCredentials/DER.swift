/// The little of ASN.1 DER the certificate code reads and writes itself (OpenSSL has no type for
/// Apple's topics extension): tag-length-value elements with definite lengths.
enum DER {
    static let sequence: UInt8 = 0x30
    static let utf8String: UInt8 = 0x0C

    /// One element: `tag`, the length in DER's minimal form, then `content`.
    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var out = [tag]
        if content.count < 0x80 {
            out.append(UInt8(content.count))
        } else {
            var length: [UInt8] = []
            var n = content.count
            while n > 0 { length.insert(UInt8(n & 0xFF), at: 0); n >>= 8 }
            out.append(0x80 | UInt8(length.count))
            out += length
        }
        return out + content
    }

    /// The elements one after another in `bytes` (tag and content range each), or nil unless `bytes` is
    /// exactly a run of whole elements with minimal definite lengths.
    static func elements(_ bytes: ArraySlice<UInt8>) -> [(tag: UInt8, content: Range<Int>)]? {
        var out: [(tag: UInt8, content: Range<Int>)] = []
        var at = bytes.startIndex
        while at < bytes.endIndex {
            guard at + 2 <= bytes.endIndex else { return nil }
            let tag = bytes[at]
            var length = Int(bytes[at + 1])
            at += 2
            if length >= 0x80 {
                let octets = length & 0x7F
                guard octets >= 1, octets <= 3, at + octets <= bytes.endIndex, bytes[at] != 0 else { return nil }
                length = 0
                for i in 0..<octets { length = length << 8 | Int(bytes[at + i]) }
                guard length >= 0x80 else { return nil }
                at += octets
            }
            guard length <= bytes.endIndex - at else { return nil }
            out.append((tag, at..<(at + length)))
            at += length
        }
        return out
    }
}
