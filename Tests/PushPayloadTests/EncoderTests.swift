import AllocationTesting
import Foundation
import PushVocabulary
import Testing
@testable import PushPayload

/// Random strings with the characters that break encoders: quotes, backslashes, every control
/// character, slashes, DEL, U+2028, accents, emoji, CJK.
func randomText(_ rng: inout PushRandom, maxScalars: Int) -> String {
    let pool: [Unicode.Scalar] = (0..<0x20).map { Unicode.Scalar(UInt8($0)) } + [
        "\"", "\\", "/", "a", "Z", "0", " ", "{", "}", "\u{7F}", "\u{2028}", "\u{2029}", "é", "ß", "中", "😀", "\u{301}", "\u{FEFF}", "\u{10FFFF}",
    ]
    var s = String.UnicodeScalarView()
    for _ in 0..<Int(rng.next() % UInt64(maxScalars + 1)) { s.append(pool[Int(rng.next() % UInt64(pool.count))]) }
    return String(s)
}

/// JSON string literal source for `s`, escaped in a random but valid way (so templates exercise
/// the parser's unescaping too).
func jsonSource(_ s: String, _ rng: inout PushRandom) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "/": out += rng.next() % 2 == 0 ? "/" : "\\/"
        case _ where u.value < 0x20: out += String(format: "\\u%04X", u.value)
        default:
            if rng.next() % 4 == 0 && u.value < 0x10000 { out += String(format: "\\u%04x", u.value) }
            else if rng.next() % 4 == 0 && u.value >= 0x10000 {
                let v = u.value - 0x10000
                out += String(format: "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF))
            } else { out.unicodeScalars.append(u) }
        }
    }
    return out + "\""
}

/// A random template: nested objects/arrays, literal strings, numbers, booleans, and placeholders.
func randomTemplate(_ rng: inout PushRandom, depth: Int = 0) -> String {
    func value(_ rng: inout PushRandom, _ depth: Int) -> String {
        switch rng.next() % (depth > 3 ? 8 : 10) {
        case 0: return jsonSource(randomText(&rng, maxScalars: 12), &rng)
        case 1: return ["0", "-1", "42", "1.5", "-0.25", "1e3", "2.5E-3", "9007199254740993", "3.14159"][Int(rng.next() % 9)]
        case 2: return ["true", "false", "null"][Int(rng.next() % 3)]
        case 3: return ["{{seq}}", "{{badge}}"][Int(rng.next() % 2)]
        case 4, 5:
            let ph = ["{{seq}}", "{{badge}}", "{{token}}", "{{message_id}}", "{{uuid}}", "{{text}}", "{{pad:3}}"]
            let lit = jsonSource(randomText(&rng, maxScalars: 4), &rng).dropFirst().dropLast()
            return "\"\(lit)\(ph[Int(rng.next() % UInt64(ph.count))])\(lit)\""
        case 6, 7: return jsonSource(randomText(&rng, maxScalars: 3), &rng)
        case 8: return "[" + (0..<Int(rng.next() % 4)).map { _ in value(&rng, depth + 1) }.joined(separator: ", ") + "]"
        default: return object(&rng, depth + 1)
        }
    }
    func object(_ rng: inout PushRandom, _ depth: Int) -> String {
        var members: [String] = []
        for i in 0..<Int(rng.next() % 5) {
            let key = randomText(&rng, maxScalars: 5) + "#\(i)"  // unique even under canonical equivalence
            members.append(jsonSource(key, &rng) + ": " + value(&rng, depth))
        }
        return "{" + members.joined(separator: ",\n ") + "}"
    }
    return object(&rng, depth)
}

@Suite struct EncoderTests {
    /// Runs every variant on `ctx`, expects identical bytes that parse as JSON, and returns them.
    @discardableResult
    func encodeAll(_ encoders: [any PayloadEncoder], _ ctx: RequestContext, _ note: @autoclosure () -> String) -> [UInt8] {
        var outputs: [[UInt8]] = []
        for e in encoders {
            var slot = [UInt8](repeating: 0xEE, count: 64 * 1024)
            let n = slot.withUnsafeMutableBytes { e.encode(ctx, into: $0) }
            guard let n else {
                Issue.record("\(e.variant) did not fit: \(note())")
                return []
            }
            outputs.append(Array(slot[0..<n]))
        }
        let reference = outputs[0]
        for (e, o) in zip(encoders, outputs) where o != reference {
            Issue.record("\(e.variant) differs from \(encoders[0].variant):\n\(String(decoding: o, as: UTF8.self))\nvs\n\(String(decoding: reference, as: UTF8.self))\n\(note())")
        }
        #expect(reference.count == encoders[0].template.encodedLength(ctx))
        #expect(JSON.validate(reference) == nil, "\(note())")
        #expect((try? JSONSerialization.jsonObject(with: Data(reference))) is [String: Any], "\(note())")
        return reference
    }

    func allEncoders(_ t: PayloadTemplate) -> [any PayloadEncoder] {
        EncoderVariant.allCases.map { makePayloadEncoder($0, template: t) }
    }

    @Test func variantsAreChosenByName() {
        #expect(EncoderVariant(rawValue: "zerocopy") == .zerocopy)
        #expect(EncoderVariant(rawValue: "copy")?.writesInPlace == false)
        #expect(EncoderVariant(rawValue: "nope") == nil)
        let t = PayloadTemplate.defaultAPNs()
        #expect(EncoderVariant.allCases.map { makePayloadEncoder($0, template: t).variant } == EncoderVariant.allCases)
    }

    @Test func variantsAgreeOnThousandsOfGeneratedRequests() throws {
        var rng = PushRandom(seed: 2024)
        let tokens = DeviceTokens(synthetic: 64, seed: 3)
        let fixed: [PayloadTemplate] = [
            .defaultAPNs(), .defaultFCM(),
            try PayloadTemplate(text: "{\"aps\":{\"alert\":{\"body\":\"{{text}}\"},\"badge\":{{badge}}},\"seq\":{{seq}},\"pad\":\"{{pad:3900}}\"}"),
        ]
        var templates = fixed
        for _ in 0..<60 {
            let text = randomTemplate(&rng)
            do {
                templates.append(try PayloadTemplate(text: text, options: .init(limit: nil, maxTextLength: 64)))
            } catch {
                Issue.record("generated template rejected: \(error)\n\(text)")
            }
        }
        var checked = 0
        for (ti, t) in templates.enumerated() {
            let encoders = allEncoders(t)
            for k in 0..<60 {
                let text = Array(randomText(&rng, maxScalars: ti == 2 ? 30 : 16).utf8)
                let seq = k % 3 == 0 ? rng.next() : rng.next() % 1000
                let badge = Int64(bitPattern: rng.next()) >> (rng.next() % 64)
                let uuid = rng.uuid()
                tokens.withToken(k % tokens.count) { tok in
                    text.withUnsafeBytes { tx in
                        let ctx = RequestContext(seq: seq, token: tok, messageID: uuid, badge: badge, text: tx)
                        encodeAll(encoders, ctx, "template \(ti) request \(k)")
                    }
                }
                checked += 1
            }
        }
        #expect(checked >= 3000)
    }

    @Test func fourKiBPayloadsAgreeAndRoundTrip() throws {
        let t = try PayloadTemplate(text: "{\"aps\":{\"alert\":{\"title\":\"{{text}}\",\"body\":\"great match!\"},\"badge\":{{badge}}},\"customKey\":\"customValue\",\"message_id\":\"{{message_id}}\",\"pad\":\"{{pad:3800}}\"}",
                                    options: .init(maxTextLength: 20))
        var rng = PushRandom(seed: 4)
        for k in 0..<200 {
            let s = randomText(&rng, maxScalars: 20)
            let text = Array(s.utf8)
            let uuid = rng.uuid()
            let out = text.withUnsafeBytes {
                encodeAll(allEncoders(t), RequestContext(seq: UInt64(k), messageID: uuid, badge: Int64(k), text: $0), "k=\(k)")
            }
            #expect(out.count > 3800 && out.count <= 4096)
            let obj = try #require(try JSONSerialization.jsonObject(with: Data(out)) as? [String: Any])
            let aps = try #require(obj["aps"] as? [String: Any])
            let alert = try #require(aps["alert"] as? [String: Any])
            // Our own tape gives back the exact text; Foundation's parser drops U+FEFF inside strings.
            var tape = JSONTape()
            try out.withUnsafeBytes { b in
                #expect(tape.parse(b) == nil)
                let a = try #require(tape.member("aps", of: tape.root, in: b))
                let al = try #require(tape.member("alert", of: a, in: b))
                #expect(tape.string(at: try #require(tape.member("title", of: al, in: b)), in: b) == s)
            }
            if !s.unicodeScalars.contains("\u{FEFF}") { #expect(alert["title"] as? String == s) }
            #expect((aps["badge"] as? NSNumber)?.intValue == k)
            #expect(obj["message_id"] as? String == uuid.description)
        }
    }

    @Test func zerocopyAndCopyAllocateNothingPerRequest() {
        let t = PayloadTemplate.defaultAPNs()
        let tokens = DeviceTokens(synthetic: 4, seed: 1)
        var slot = [UInt8](repeating: 0, count: 4096)
        var rng = PushRandom(seed: 1)
        let zero = ZeroCopyEncoder(template: t), copy = CopyEncoder(template: t)
        let big = try! PayloadTemplate(text: "{\"a\":\"{{token}}{{text}}\",\"n\":{{seq}},\"u\":\"{{uuid}}\",\"p\":\"{{pad:3000}}\"}")
        let bigZero = ZeroCopyEncoder(template: big)
        let text = Array("quote \" and \n".utf8)
        slot.withUnsafeMutableBytes { s in
            text.withUnsafeBytes { tx in
                var k: UInt64 = 0
                let step = {
                    k += 1
                    let ctx = RequestContext(seq: k, token: tokens.token(Int(k % 4)), messageID: rng.uuid(), badge: 1, text: tx)
                    _ = zero.encode(ctx, into: s)
                    _ = bigZero.encode(ctx, into: s)
                }
                #expect(minAllocations(step) == 0)
                #expect(minAllocations { _ = copy.encode(RequestContext(seq: k, messageID: rng.uuid()), into: s) } == 0)
                // The baseline does allocate (the counter is live).
                let foundation = FoundationEncoder(template: t)
                #expect(minAllocations { _ = foundation.encode(RequestContext(seq: k, messageID: rng.uuid()), into: s) } > 0)
            }
        }
    }

    @Test func fcmZerocopyAndLimitCheckAllocateNothing() {
        let t = PayloadTemplate.defaultFCM()
        let zero = ZeroCopyEncoder(template: t)
        let tokens = DeviceTokens(synthetic: 8, seed: 5)
        var slot = [UInt8](repeating: 0, count: 4096)
        var rng = PushRandom(seed: 2)
        slot.withUnsafeMutableBytes { s in
            var k: UInt64 = 0
            #expect(minAllocations {
                k += 1
                let ctx = RequestContext(seq: k, token: tokens.token(Int(k % 8)), messageID: rng.uuid())
                if !t.wouldExceed(PayloadLimits.fcm(topic: false), ctx) { _ = zero.encode(ctx, into: s) }
            } == 0)
        }
        let out = slot.withUnsafeMutableBytes { s in zero.encode(RequestContext(seq: 1, token: tokens.token(0), messageID: PushUUID(high: 1, low: 2)), into: s)! }
        let text = String(decoding: slot[0..<out], as: UTF8.self)
        #expect(text.hasPrefix(#"{"message":{"apns":{"payload":{"aps":{"badge":1}}},"data":{"customKey":"customValue","message_id":"00000000-0000-0001-0000-000000000002"},"notification":{"body":"great match!","title":"Portugal vs. Denmark"},"token":""#))
        #expect(text.contains(tokens[0]))
    }

    @Test func everyVariantRefusesASlotThatIsTooSmall() {
        let t = PayloadTemplate.defaultAPNs()
        let ctx = RequestContext(seq: 1, messageID: PushUUID(high: 3, low: 4))
        let exact = t.encodedLength(ctx)
        for e in allEncoders(t) {
            var small = [UInt8](repeating: 0xAB, count: exact - 1)
            #expect(small.withUnsafeMutableBytes { e.encode(ctx, into: $0) } == nil, "\(e.variant)")
            var fits = [UInt8](repeating: 0xAB, count: exact)
            #expect(fits.withUnsafeMutableBytes { e.encode(ctx, into: $0) } == exact, "\(e.variant)")
        }
        #expect(ZeroCopyEncoder(template: t).encode(ctx, into: UnsafeMutableRawBufferPointer(start: nil, count: 0)) == nil)
    }
}
