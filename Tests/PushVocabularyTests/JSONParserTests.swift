import AllocationTesting
import Foundation
import Testing
@testable import PushVocabulary

@Suite struct JSONParserTests {
    func error(_ text: String) -> JSONError? { JSON.validate(Array(text.utf8)) }

    @Test func acceptsValidDocuments() {
        let good = [
            "{}", "[]", "0", "-0", "1.5e-3", "-12.25E+10", "\"\"", "true", "false", "null", " \n\t{ } \r\n",
            #"{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00\n\"\\\/","d":-0.0}"#,
            "\"é😀\u{2028}\"", "[[[[[]]]]]", #"{"a":1,"a":2}"#,
        ]
        for g in good { #expect(error(g) == nil, "\(g)") }
    }

    @Test func rejectsInvalidDocumentsWithCodeAndPosition() {
        let cases: [(String, JSONError.Code, Int, Int)] = [
            ("", .emptyInput, 1, 1),
            ("   ", .emptyInput, 1, 4),
            ("{", .unexpectedEnd, 1, 2),
            ("{\"a\" 1}", .expectedColon, 1, 6),
            ("{\"a\":1,}", .expectedKey, 1, 8),
            ("[1,]", .expectedValue, 1, 4),
            ("[1 2]", .expectedCommaOrArrayEnd, 1, 4),
            ("{\"a\":1 \"b\":2}", .expectedCommaOrObjectEnd, 1, 8),
            ("{\n  \"a\": tru\n}", .invalidLiteral, 2, 8),
            ("01", .invalidNumber, 1, 2),
            ("1.", .invalidNumber, 1, 3),
            ("-", .invalidNumber, 1, 1),
            ("1e+", .invalidNumber, 1, 4),
            ("\"a\u{1}b\"", .controlCharacterInString, 1, 3),
            ("\"a\nb\"", .controlCharacterInString, 1, 3),
            ("\"\\x\"", .invalidEscape, 1, 2),
            ("\"\\u12g4\"", .invalidUnicodeEscape, 1, 2),
            ("\"abc", .unterminatedString, 1, 1),
            ("{} x", .trailingData, 1, 4),
            ("{\"é\": [1, \"😀\" 2]}", .expectedCommaOrArrayEnd, 1, 15),
            ("{'a':1}", .expectedKey, 1, 2),
            ("NaN", .expectedValue, 1, 1),
        ]
        for (text, code, line, column) in cases {
            let e = error(text)
            #expect(e?.code == code, "\(text.debugDescription): \(String(describing: e))")
            #expect(e?.line == line && e?.column == column, "\(text.debugDescription): \(String(describing: e))")
        }
    }

    @Test func findsEveryCharacterClassAtEveryPositionOfLongStrings() {
        // The string scanner reads 8 bytes at a time: put each kind of byte at each offset.
        for length in Array(1...17) + [23, 24, 25, 31] {
            for position in 0..<length {
                func doc(_ insert: [UInt8]) -> [UInt8] {
                    var body = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    body.replaceSubrange(position...position, with: insert)
                    return [0x22] + body + [0x22]
                }
                let control = JSON.validate(doc([0x07]))
                #expect(control?.code == .controlCharacterInString && control?.offset == position + 1)
                #expect(JSON.validate(doc(Array("é".utf8))) == nil)
                #expect(JSON.validate(doc(Array("\\n".utf8))) == nil)
                #expect(JSON.validate(doc([0xFF]))?.code == .invalidUTF8)
                var tape = JSONTape()
                let quoted = doc(Array("\\\"".utf8))
                #expect(tape.parse(quoted) == nil)
                #expect(quoted.withUnsafeBytes { tape.string(at: 0, in: $0) }?.count == length)
                #expect(JSON.validate(doc([0x22]))?.code == .trailingData)
            }
        }
    }

    @Test func rejectsInvalidUTF8() {
        let bad: [[UInt8]] = [
            [0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xE0, 0x80, 0xAF, 0x22],
            [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xC3, 0x22],
            [0x22, 0xE2, 0x82, 0x22],
        ]
        for b in bad { #expect(JSON.validate(b)?.code == .invalidUTF8, "\(b)") }
        #expect(JSON.validate([0x22, 0xC3, 0xA9, 0xF0, 0x9F, 0x98, 0x80, 0x22]) == nil)
    }

    @Test func rejectsNestingDeeperThanTheLimit() {
        let deep = String(repeating: "[", count: JSON.maxDepth + 1) + String(repeating: "]", count: JSON.maxDepth + 1)
        #expect(error(deep)?.code == .tooDeep)
        let ok = String(repeating: "[", count: JSON.maxDepth) + String(repeating: "]", count: JSON.maxDepth)
        #expect(error(ok) == nil)
    }

    @Test func topLevelKindTellsObjectsApart() {
        #expect(Array("{\"a\":1}".utf8).withUnsafeBytes { JSON.topLevelKind($0) } == .object)
        #expect(Array(" [1]".utf8).withUnsafeBytes { JSON.topLevelKind($0) } == .array)
        #expect(Array("\"x\"".utf8).withUnsafeBytes { JSON.topLevelKind($0) } == .string)
        #expect(Array("{\"a\":}".utf8).withUnsafeBytes { JSON.topLevelKind($0) } == nil)
    }

    @Test func agreesWithJSONSerializationOnMutatedInputs() throws {
        // Random single-byte mutations of a valid document: whatever we accept, Foundation must parse,
        // and what Foundation rejects we must reject too.
        let base = Array(#"{"aps":{"alert":{"title":"T\u00e9","body":"b\n"},"badge":12,"x":[1.5e3,-2,true,false,null]},"k":"v"}"#.utf8)
        var rng = SeededSplitMix(seed: 7)
        let alphabet = Array(#"{}[],:"\ -+.eE0123456789abcdefnrtu"#.utf8)
        var accepted = 0
        for _ in 0..<3000 {
            var doc = base
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                let at = Int(rng.next() % UInt64(doc.count))
                switch rng.next() % 3 {
                case 0: doc[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                case 1: doc.remove(at: at)
                default: doc.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at)
                }
            }
            let ours = JSON.validate(doc) == nil
            let theirs = (try? JSONSerialization.jsonObject(with: Data(doc), options: [.fragmentsAllowed])) != nil
            if ours { accepted += 1 }
            // Foundation on Linux accepts a trailing comma ("[1,]", "{..,}"); RFC 8259 does not.
            let text = String(decoding: doc, as: UTF8.self)
            if !ours && theirs && text.range(of: #",\s*[}\]]"#, options: .regularExpression) != nil { continue }
            #expect(ours == theirs, "\(text)")
        }
        #expect(accepted > 100)
    }

    @Test func specialBytesFindsTheFirstByteThatEndsAPlainRun() {
        // Every byte value at every position of a word of plain bytes, then random words: the lowest
        // flagged byte must be the first one below 0x20, '"', '\\' or non-ASCII (none: no flag).
        func firstSpecial(_ bytes: [UInt8]) -> Int? {
            bytes.firstIndex { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 >= 0x80 }
        }
        func flagged(_ bytes: [UInt8]) -> Int? {
            let w = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
            let m = JSONBytes.specialBytes(UInt64(littleEndian: w))
            return m == 0 ? nil : m.trailingZeroBitCount >> 3
        }
        for at in 0..<8 {
            for v in 0...255 {
                var word = Array("abcdefgh".utf8)
                word[at] = UInt8(v)
                #expect(flagged(word) == firstSpecial(word), "\(word)")
            }
        }
        var rng = SeededSplitMix(seed: 11)
        let interesting: [UInt8] = [0x00, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xC3, 0xFF]
        for _ in 0..<20_000 {
            let word = (0..<8).map { _ in
                rng.next() % 2 == 0 ? interesting[Int(rng.next() % UInt64(interesting.count))] : UInt8(truncatingIfNeeded: rng.next())
            }
            #expect(flagged(word) == firstSpecial(word), "\(word)")
        }
    }

    @Test func tapeWalksObjectsArraysAndValues() throws {
        let body = Array(#"{"message":{"token":"ab\u0063","data":{"k":"v","n":"1"},"ttl":-42,"f":2.5,"ok":true,"list":[1,[2,3],{"z":null}]},"message":{"token":"last"}}"#.utf8)
        var tape = JSONTape()
        try body.withUnsafeBytes { b in
            #expect(tape.parse(b) == nil)
            // Repeated keys: the last one wins.
            let last = try #require(tape.member("message", of: tape.root, in: b))
            #expect(tape.string(at: try #require(tape.member("token", of: last, in: b)), in: b) == "last")
            let first = tape.members(of: tape.root)[0].value
            let tok = try #require(tape.member("token", of: first, in: b))
            #expect(tape.string(at: tok, in: b) == "abc")
            #expect(tape.stringEquals(at: tok, "abc", in: b))
            #expect(!tape.stringEquals(at: tok, "abd", in: b))
            #expect(tape.int64(at: try #require(tape.member("ttl", of: first, in: b)), in: b) == -42)
            #expect(tape.double(at: try #require(tape.member("f", of: first, in: b)), in: b) == 2.5)
            #expect(tape.int64(at: try #require(tape.member("f", of: first, in: b)), in: b) == nil)
            #expect(tape.bool(at: try #require(tape.member("ok", of: first, in: b))) == true)
            let list = try #require(tape.member("list", of: first, in: b))
            #expect(tape[list].count == 3)
            let kids = tape.children(of: list)
            #expect(kids.count == 3)
            #expect(tape[kids[1]].kind == .array && tape.children(of: kids[1]).count == 2)
            #expect(tape[tape.member("z", of: kids[2], in: b)!].kind == .null)
            let data = try #require(tape.member("data", of: first, in: b))
            #expect(tape.members(of: data).map { tape.string(at: $0.key, in: b)! } == ["k", "n"])
            #expect(tape.member("missing", of: data, in: b) == nil)
            #expect(tape[tape.root].next == tape.count)
        }
        // A failed parse leaves an empty tape and reports where.
        let bad = Array("{\"a\":\n [1,}".utf8)
        let e = bad.withUnsafeBytes { tape.parse($0) }
        #expect(e?.line == 2 && e?.column == 5)
        #expect(tape.isEmpty)
    }

    @Test func validateAndReusedTapeAllocateNothing() {
        let body = Array(#"{"message":{"token":"abc","notification":{"title":"T","body":"B"},"apns":{"payload":{"aps":{"badge":1}}},"data":{"customKey":"customValue"}}}"#.utf8)
        body.withUnsafeBytes { b in
            #expect(minAllocations { _ = JSON.validate(b) } == 0)
            #expect(minAllocations { _ = JSON.topLevelKind(b) } == 0)
            var tape = JSONTape()
            _ = tape.parse(b)
            #expect(minAllocations {
                _ = tape.parse(b)
                _ = tape.member("message", of: tape.root, in: b)
            } == 0)
        }
    }
}
