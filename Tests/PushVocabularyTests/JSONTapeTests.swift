import AllocationTesting
@testable import PushVocabulary
import Testing

/// The tape's entries must describe the document exactly: rebuilt from the entries alone (kinds, byte
/// ranges, counts, next links), a document comes back as itself without its whitespace.
@Suite struct JSONTapeTests {
    static let fcmMessage = #"{"message":{"token":"TOKEN","notification":{"title":"Portugal vs. Denmark","body":"great match!"},"apns":{"payload":{"aps":{"badge":1}}},"data":{"customKey":"customValue"}}}"#

    /// The document written back from the tape's entries.
    func rebuilt(_ tape: JSONTape, _ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        func value() {
            let e = tape[i]
            let me = i
            i += 1
            switch e.kind {
            case .object, .array:
                let object = e.kind == .object
                out.append(bytes[e.start])
                for k in 0..<e.count {
                    if k > 0 { out.append(UInt8(ascii: ",")) }
                    if object {
                        #expect(tape[i].kind == .string && tape[i].isKey)
                        value()
                        out.append(UInt8(ascii: ":"))
                    }
                    #expect(!tape[i].isKey)
                    value()
                }
                out.append(bytes[e.end - 1])
                #expect(e.next == i, "entry \(me): next \(e.next), subtree ends at \(i)")
            case .string:
                out.append(0x22)
                out += tape.rawBytes(at: me, in: bytes)
                out.append(0x22)
                #expect(e.hasEscapes == tape.rawBytes(at: me, in: bytes).contains(0x5C))
                #expect(e.next == me + 1)
            default:
                out += tape.rawBytes(at: me, in: bytes)
                #expect(e.next == me + 1)
            }
        }
        value()
        #expect(i == tape.count)
        return out
    }

    /// `bytes` without the whitespace between tokens (the document is valid JSON).
    func compact(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var inString = false, escaped = false
        for b in bytes {
            if inString {
                if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
                out.append(b)
            } else if b == 0x22 {
                inString = true
                out.append(b)
            } else if ![0x20, 0x09, 0x0A, 0x0D].contains(b) {
                out.append(b)
            }
        }
        return out
    }

    /// Parses `bytes` onto `tape`; checks the error against `JSON.validate`, and an accepted document
    /// against its entries. Returns whether it was accepted.
    @discardableResult
    func check(_ bytes: [UInt8], _ tape: inout JSONTape, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        bytes.withUnsafeBytes { b in
            let error = tape.parse(b)
            #expect(error == JSON.validate(b), "\(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
            guard error == nil else {
                #expect(tape.isEmpty, sourceLocation: sourceLocation)
                return false
            }
            #expect(rebuilt(tape, b) == compact(bytes), "\(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
            return true
        }
    }

    static let documents: [String] = [
        fcmMessage,
        #"{"message":{"topic":"news","notification":{"title":"x"},"data":{"a":"b"}}}"#,
        #" { "a" : [ 1 , -2.5e+3 , 0 , 0.0 , 1E9 , true , false , null , { } , [ ] , "" ] } "#,
        "\t\r\n[\"x\"]\n",
        "0", "-0", "12", "\"s\"", "true", "false", "null", "[]", "{}",
        #"{"k":"caf\#u{e9} \#u{1F600} \#u{20AC}"}"#,
        #"{"a":{"b":{"c":[[[[]]]]}}}"#,
        #"{"a":1,"a":2}"#,
        "{\"x\":\"\u{7F}\"}",
        #"{"k\u0061y":"v\"q\\\/\b\f\n\r\t"}"#,
        #"{"s":"\ud83d\ude00 \udc00"}"#,
        "", " ", "{", "}", "[", "]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "[1,]", "[1 2]", "{\"a\":1 \"b\":2}",
        "{1:2}", "01", "-", "1.", "1e", "1e+", "-a", ".5", "+1", "tru", "fals", "nul", "trUe", "nulL", "falsy",
        "\"abc", "\"a\u{01}b\"", "\"a\\x\"", "\"\\u12G4\"", "\"\\u12\"", "{} {}", "[]x", "\"\u{80}\"",
        "\"\u{C0}\u{80}\"", "[\"\\", "\n\n  {\"a\":\n  tru }",
    ]

    @Test func entriesDescribeEveryDocumentAndErrorsAreValidatesOwn() {
        var tape = JSONTape(capacity: 8)
        for d in Self.documents { check(Array(d.utf8), &tape) }
        for bad: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xE0, 0x80, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
                             [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xF0, 0x9F, 0x98, 0x22],
                             [0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22], [0x22, 0xEF, 0xBF, 0xBF, 0x22]] {
            check(bad, &tape)
        }
        let deepest = String(repeating: "[", count: JSON.maxDepth) + String(repeating: "]", count: JSON.maxDepth)
        #expect(check(Array(deepest.utf8), &tape))
        #expect(!check(Array(("[" + deepest + "]").utf8), &tape))
    }

    @Test func growsPastItsCapacityAndCopiesKeepTheirEntries() {
        var tape = JSONTape(capacity: 8)
        let big = "[" + (0..<100).map { "\($0)" }.joined(separator: ",") + "]"
        #expect(check(Array(big.utf8), &tape) && tape.count == 101)
        let copy = tape
        #expect(check(Array("[true]".utf8), &tape) && tape.count == 2)
        #expect(copy.count == 101 && copy[100] == JSONTape.Entry(kind: .number, isKey: false, hasEscapes: false,
                                                                 start: big.utf8.count - 3, end: big.utf8.count - 1,
                                                                 next: 101, count: 0))
    }

    @Test func escapedKeysAndValuesCompareUnescaped() {
        var tape = JSONTape()
        let body = Array(#"{"m\u0065ssage":{"tok\u0065n":"a\u0062c"},"x":"y"}"#.utf8)
        body.withUnsafeBytes { b in
            #expect(tape.parse(b) == nil)
            let m = tape.member("message", of: tape.root, in: b)
            #expect(m == 2)
            if let m {
                let t = tape.member("token", of: m, in: b)
                #expect(t != nil)
                if let t { #expect(tape.stringEquals(at: t, "abc", in: b) && tape.string(at: t, in: b) == "abc") }
                if let t { #expect(!tape.stringEquals(at: t, "abd", in: b) && !tape.stringEquals(at: t, "ab", in: b)) }
            }
            #expect(tape.member("x", of: tape.root, in: b).map { tape.string(at: $0, in: b) } == "y")
            #expect(tape.member("nope", of: tape.root, in: b) == nil)
        }
        let repeated = Array(#"{"a":1,"b":2,"a":3}"#.utf8)
        repeated.withUnsafeBytes { b in
            #expect(tape.parse(b) == nil)
            #expect(tape.member("a", of: tape.root, in: b) == 6)
            #expect(tape.member("a", of: 2, in: b) == nil)
            #expect(tape.bool(at: 2) == nil)
        }
    }

    /// Random edits of FCM-shaped documents (bytes dropped, duplicated, replaced by JSON-significant bytes).
    @Test func entriesDescribeMutatedDocuments() {
        var random = SeededSplitMix(seed: 8)
        let seeds = [Self.fcmMessage, #"{"a":[1,-2.5e3,true,null,{"b":"c\u00e9"}],"d":"\u20ac"}"#,
                     #"{"message":{"condition":"'a' in topics","apns":{"headers":{"apns-priority":"5"}}}}"#]
        let alphabet = Array(#"{}[]":,"\ 0123456789.eE+-tfnulrsa"#.utf8) + [0x00, 0x0A, 0x7F, 0x80, 0xC3, 0xA9, 0xE2, 0xFF]
        var tape = JSONTape(capacity: 16)
        var accepted = 0
        for _ in 0..<3000 {
            var d = Array(seeds[Int(random.next() % UInt64(seeds.count))].utf8)
            for _ in 0..<(1 + random.next() % 3) {
                let at = Int(random.next() % UInt64(d.count))
                switch random.next() % 3 {
                case 0: d.remove(at: at)
                case 1: d.insert(d[at], at: at)
                default: d[at] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                }
                if d.isEmpty { break }
            }
            if check(d, &tape) { accepted += 1 }
        }
        #expect(accepted > 100)
    }

    @Test func aReusedTapeAllocatesNothingEvenForEscapes() {
        let body = Array(#"{"message":{"token":"abc","notification":{"title":"caf\u00e9 \"x\"","body":"a\nb"},"d\u0061ta":{"k":"v"}}}"#.utf8)
        body.withUnsafeBytes { b in
            var tape = JSONTape()
            _ = tape.parse(b)
            #expect(minAllocations {
                _ = tape.parse(b)
                if let m = tape.member("message", of: tape.root, in: b) {
                    _ = tape.member("data", of: m, in: b)
                    _ = tape.member("token", of: m, in: b).map { tape.stringEquals(at: $0, "abc", in: b) }
                }
            } == 0)
        }
    }
}
