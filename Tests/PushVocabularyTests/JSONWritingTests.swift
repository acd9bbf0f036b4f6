import Foundation
import Testing
@testable import PushVocabulary

@Suite struct JSONWritingTests {
    /// The escaper (8 bytes at a time) against JSONEncoder, for every special character at every
    /// position of strings around the word size.
    @Test func escapingMatchesJSONEncoderAtEveryPosition() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let specials: [String] = (0..<0x20).map { String(UnicodeScalar(UInt8($0))) } + ["\"", "\\", "/", "\u{7F}", "é", "😀", "\u{2028}"]
        var out = [UInt8](repeating: 0, count: 512)
        for length in [1, 7, 8, 9, 16, 17, 23] {
            for special in specials {
                for position in 0..<length {
                    var s = String(repeating: "a", count: length)
                    let i = s.index(s.startIndex, offsetBy: position)
                    s.replaceSubrange(i...i, with: special)
                    let expected = Array(try encoder.encode(s).dropFirst().dropLast())
                    let bytes = Array(s.utf8)
                    let n = bytes.withUnsafeBytes { src in out.withUnsafeMutableBytes { JSONWriting.writeEscaped(src, to: $0.baseAddress!) } }
                    #expect(Array(out[0..<n]) == expected, "\(s.debugDescription)")
                    #expect(bytes.withUnsafeBytes { JSONWriting.escapedLength($0) } == expected.count)
                }
            }
        }
    }

    @Test func decimalsMatchSwiftFormatting() {
        var out = [UInt8](repeating: 0, count: 24)
        for v: Int64 in [0, 1, 9, 10, 99, 100, -1, -10, 1_234_567_890, .max, .min] {
            let n = out.withUnsafeMutableBytes { JSONWriting.writeDecimal(v, to: $0.baseAddress!) }
            #expect(String(decoding: out[0..<n], as: UTF8.self) == String(v))
            #expect(JSONWriting.decimalLength(v) == n)
        }
        let n = out.withUnsafeMutableBytes { JSONWriting.writeDecimal(UInt64.max, to: $0.baseAddress!) }
        #expect(String(decoding: out[0..<n], as: UTF8.self) == String(UInt64.max))
    }
}
