import Testing
@testable import MockGateway

@Suite struct ByteHelpersTests {
    func hexString(_ v: UInt64, digits: Int) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: digits - s.count) + s
    }

    @Test func generatedApnsIDMatchesAPlainFormatting() {
        var random = SeededRandom(seed: 99)
        for _ in 0..<2000 {
            let a = random.next(), b = random.next()
            let hi = (a & 0xFFFF_FFFF_FFFF_0FFF) | 0x4000, lo = (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
            let h = hexString(hi, digits: 16), l = hexString(lo, digits: 16)
            let expected = "\(h.prefix(8))-\(h.dropFirst(8).prefix(4))-\(h.suffix(4))-\(l.prefix(4))-\(l.suffix(12))"
            #expect(APNsID(random: a, b).description == expected)
        }
        #expect(APNsID(random: 0, 0).description == "00000000-0000-4000-8000-000000000000")
        #expect(APNsID(random: .max, .max).description == "ffffffff-ffff-4fff-bfff-ffffffffffff")
    }

    @Test func hexCheckRejectsEveryNonHexByteAtEveryPosition() {
        let valid = Array("0123456789abcdefABCDEF".utf8)
        for length in [2, 8, 14, 64, 66] {
            var token = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            token.withUnsafeBytes { #expect(isHex($0)) }
            for position in 0..<length {
                for byte in 0...255 {
                    token[position] = UInt8(byte)
                    let expected = valid.contains(UInt8(byte))
                    let got = token.withUnsafeBytes { isHex($0) }
                    if got != expected { Issue.record("length \(length) position \(position) byte \(byte): \(got)") }
                }
                token[position] = UInt8(ascii: "a")
            }
        }
    }

    @Test func tokenHashIsCaseInsensitiveAndSpreadsTokens() {
        let lower = String(repeating: "ab12", count: 16), upper = lower.uppercased()
        func hash(_ s: String) -> UInt64 { Array(s.utf8).withUnsafeBytes { tokenHash($0) } }
        #expect(hash(lower) == hash(upper))
        #expect(hash(lower) != hash(String(repeating: "ab12", count: 15) + "ab13"))
        #expect(hash(lower) != hash(lower + "00"))
        var buckets = [Int](repeating: 0, count: 16)
        for i in 0..<16_000 { buckets[Int(hash(token(i)) >> 60)] += 1 }
        #expect(buckets.allSatisfy { (800...1200).contains($0) }, "\(buckets)")
    }
}
