import PushPayload
import Testing
@testable import MockGateway

/// FCMTape must be PushPayload's JSONTape, faster: same entries on every document it accepts, same
/// error on every document it refuses.
@Suite struct FCMTapeTests {
    /// Parses `bytes` with both tapes and checks that they agree; returns whether the fast path took it.
    @discardableResult
    func agree(_ bytes: [UInt8], _ tape: inout FCMTape, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        var reference = JSONTape()
        bytes.withUnsafeBytes { body in
            let expected = reference.parse(body)
            let got = tape.parse(body)
            #expect(got == expected, "\(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
            guard expected == nil, got == nil else { return }
            #expect(tape.count == reference.entries.count, sourceLocation: sourceLocation)
            for i in 0..<min(tape.count, reference.entries.count) {
                let e = reference.entries[i], f = tape[i]
                #expect(f == FCMTape.Entry(kind: e.kind, isKey: e.isKey, hasEscapes: e.hasEscapes, start: e.start,
                                           end: e.end, next: e.next, count: e.count),
                        "entry \(i) of \(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
                if e.kind == .string {
                    #expect(tape.string(at: i, in: body) == reference.string(at: i, in: body), sourceLocation: sourceLocation)
                }
            }
        }
        return !tape.usedFallback
    }

    static let documents: [String] = [
        fcmSeedMessage,
        #"{"message":{"topic":"news","notification":{"title":"x"},"data":{"a":"b"}}}"#,
        #" { "a" : [ 1 , -2.5e+3 , 0 , 0.0 , 1E9 , true , false , null , { } , [ ] , "" ] } "#,
        "\t\r\n[\"x\"]\n",
        "0", "-0", "12", "\"s\"", "true", "false", "null", "[]", "{}",
        #"{"k":"caf\#u{e9} \#u{1F600} \#u{20AC}"}"#,
        #"{"a":{"b":{"c":[[[[]]]]}}}"#,
        #"{"a":1,"a":2}"#,
        "{\"x\":\"\u{7F}\"}",
        // Escapes: JSONTape's job.
        #"{"k\u0061y":"v\"q\\\/\b\f\n\r\t"}"#,
        #"{"s":"\ud83d\ude00 \udc00"}"#,
        // Errors, each with its own code, line and column.
        "", " ", "{", "}", "[", "]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "[1,]", "[1 2]", "{\"a\":1 \"b\":2}",
        "{1:2}", "01", "-", "1.", "1e", "1e+", "-a", ".5", "+1", "tru", "fals", "nul", "trUe", "nulL",
        "\"abc", "\"a\u{01}b\"", "\"a\\x\"", "\"\\u12G4\"", "\"\\u12\"", "{} {}", "[]x", "\"\u{80}\"",
        "\"\u{C0}\u{80}\"", "[\"\\", "\n\n  {\"a\":\n  tru }",
    ]

    @Test func agreesWithJSONTapeOnEveryDocument() {
        var tape = FCMTape(capacity: 8)
        for d in Self.documents { agree(Array(d.utf8), &tape) }
        // Raw bytes Swift strings cannot hold: invalid UTF-8 in strings.
        for bad: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xE0, 0x80, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
                             [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xF0, 0x9F, 0x98, 0x22],
                             [0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22], [0x22, 0xEF, 0xBF, 0xBF, 0x22]] {
            agree(bad, &tape)
        }
    }

    @Test func fastPathTakesPlainDocumentsAndLeavesEscapesAndDepth() {
        var tape = FCMTape(capacity: 512)
        #expect(agree(Array(fcmSeedMessage.utf8), &tape))
        #expect(agree(Array(#"{"k":"caf\#u{e9}"}"#.utf8), &tape))
        #expect(!agree(Array(#"{"k":"a\nb"}"#.utf8), &tape))
        let deep = String(repeating: "[", count: FCMTape.fastMaxDepth + 1) + String(repeating: "]", count: FCMTape.fastMaxDepth + 1)
        #expect(!agree(Array(deep.utf8), &tape))
        let ok = String(repeating: "[", count: FCMTape.fastMaxDepth) + String(repeating: "]", count: FCMTape.fastMaxDepth)
        #expect(agree(Array(ok.utf8), &tape))
        let tooDeep = String(repeating: "[", count: JSON.maxDepth + 1) + String(repeating: "]", count: JSON.maxDepth + 1)
        agree(Array(tooDeep.utf8), &tape)
    }

    @Test func growsPastItsCapacityThroughTheFallbackThenTakesTheFastPath() {
        var tape = FCMTape(capacity: 8)
        let big = "[" + (0..<100).map { "\($0)" }.joined(separator: ",") + "]"
        #expect(!agree(Array(big.utf8), &tape))
        #expect(agree(Array(big.utf8), &tape))
        #expect(tape.count == 101)
    }

    @Test func escapedKeysAndValuesCompareUnescaped() {
        var tape = FCMTape()
        let body = Array(#"{"m\u0065ssage":{"tok\u0065n":"a\u0062c"},"x":"y"}"#.utf8)
        body.withUnsafeBytes { b in
            #expect(tape.parse(b) == nil)
            #expect(tape.usedFallback)
            let m = tape.member("message", of: tape.root, in: b)
            #expect(m == 2)
            if let m {
                let t = tape.member("token", of: m, in: b)
                #expect(t != nil)
                if let t { #expect(tape.stringEquals(at: t, "abc", in: b) && tape.string(at: t, in: b) == "abc") }
            }
            #expect(tape.member("x", of: tape.root, in: b).map { tape.string(at: $0, in: b) } == "y")
            #expect(tape.member("nope", of: tape.root, in: b) == nil)
        }
        // The last of repeated keys wins; a non-object has no members.
        let repeated = Array(#"{"a":1,"b":2,"a":3}"#.utf8)
        repeated.withUnsafeBytes { b in
            #expect(tape.parse(b) == nil && !tape.usedFallback)
            #expect(tape.member("a", of: tape.root, in: b) == 6)
            #expect(tape.member("a", of: 2, in: b) == nil)
            #expect(tape.bool(at: 2) == nil)
        }
    }

    /// Random edits of FCM-shaped documents (bytes dropped, duplicated, replaced by JSON-significant
    /// bytes): both tapes must agree on every one.
    @Test func agreesWithJSONTapeOnMutatedDocuments() {
        var random = SeededRandom(seed: 8)
        let seeds = [fcmSeedMessage, #"{"a":[1,-2.5e3,true,null,{"b":"c\u00e9"}],"d":"\u20ac"}"#,
                     #"{"message":{"condition":"'a' in topics","apns":{"headers":{"apns-priority":"5"}}}}"#]
        let alphabet = Array(#"{}[]":,"\ 0123456789.eE+-tfnulrsa"#.utf8) + [0x00, 0x0A, 0x7F, 0x80, 0xC3, 0xA9, 0xE2, 0xFF]
        var tape = FCMTape(capacity: 16)
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
            agree(d, &tape)
        }
    }
}
