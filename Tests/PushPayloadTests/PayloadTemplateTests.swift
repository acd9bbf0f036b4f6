import Foundation
import PushVocabulary
import Testing
@testable import PushPayload

@Suite struct PayloadTemplateTests {
    func compileError(_ text: String, options: TemplateOptions = .init()) -> TemplateError? {
        do {
            _ = try PayloadTemplate(text: text, file: "t.json", options: options)
            return nil
        } catch {
            return error
        }
    }

    func render(_ t: PayloadTemplate, _ ctx: RequestContext) -> String {
        var buf = [UInt8](repeating: 0, count: 64 * 1024)
        let n = buf.withUnsafeMutableBytes { ZeroCopyEncoder(template: t).encode(ctx, into: $0) }!
        return String(decoding: buf[0..<n], as: UTF8.self)
    }

    let uuid = PushUUID("123e4567-e89b-42d3-a456-426614174000")!

    @Test func defaultTemplateIsApplesExampleWithAMessageID() throws {
        let t = PayloadTemplate.defaultAPNs()
        let out = render(t, RequestContext(seq: 1, messageID: uuid))
        // Keys come out sorted (the canonical order every encoder shares).
        #expect(out == #"{"aps":{"alert":{"body":"great match!","title":"Portugal vs. Denmark"},"badge":1},"customKey":"customValue","message_id":"123e4567-e89b-42d3-a456-426614174000"}"#)
        #expect(t.placeholders == [.messageID])
        #expect(t.lengthBound == 160 && t.staticLength == 124)
        #expect(PayloadTemplate.defaultFCM().lengthBound == nil)  // {{token}} has no fixed bound
        #expect(t.encodedLength(RequestContext(seq: 1, messageID: uuid)) == out.utf8.count)
    }

    @Test func placeholdersAreSubstitutedBareAndInStrings() throws {
        let t = try PayloadTemplate(text: """
            {"seq": {{seq}}, "b": {{badge}}, "s": "n={{seq}}/{{badge}}", "tok": "{{token}}",
             "id": "{{message_id}}", "u": ["{{uuid}}", "{{uuid}}"], "t": "<{{text}}>", "p": "{{pad:5}}!"}
            """)
        let tok = Array("ab12".utf8), text = Array("say \"hi\"\n\u{1}".utf8)
        let out = tok.withUnsafeBytes { tk in text.withUnsafeBytes { tx in
            render(t, RequestContext(seq: 42, token: tk, messageID: uuid, badge: -7, text: tx))
        } }
        let u0 = uuid.derived(0).description, u1 = uuid.derived(1).description
        #expect(u0 != u1)
        #expect(out == #"{"b":-7,"id":"\#(uuid)","p":"xxxxx!","s":"n=42/-7","seq":42,"t":"<say \"hi\"\n\u0001>","tok":"ab12","u":["\#(u0)","\#(u1)"]}"#)
    }

    @Test func rejectsBadTemplatesWithFileLineColumnAndReason() {
        let cases: [(String, Int, Int, String)] = [
            ("{\"a\": 1,\n \"b\": }", 2, 7, "expected a JSON value"),
            ("{\"a\": \"{{sequence}}\"}", 1, 8, "unknown placeholder {{sequence}}"),
            ("{\"a\":\n  {{token}}}", 2, 3, "string placeholder"),
            ("{\"{{seq}}\": 1}", 1, 3, "where an object key belongs"),
            ("{{{seq}}: 1}", 1, 2, "where an object key belongs"),
            ("{\"a\": \"{{seq\"}", 1, 8, "unterminated placeholder"),
            ("{\"a\": 1{{seq}}}", 1, 8, "must be the whole value"),
            ("{\"a\": {{pad:10}}}", 1, 7, "inside quotes"),
            ("{\"a\": \"{{pad:x}}\"}", 1, 8, "bad {{pad:N}}"),
            ("[1, 2]", 1, 1, "must be a JSON object"),
            ("{\"a\": 1, \"a\": 2}", 1, 10, "duplicate key \"a\""),
            ("{\"\\u00e9\": 1, \"e\\u0301\": 2}", 1, 15, "duplicate key"),
            ("{\"a\": \"\\ud800\"}", 1, 8, "lone UTF-16 surrogate"),
            ("{\"a\": 1e999}", 1, 7, "number out of range"),
            ("", 1, 1, "empty input"),
        ]
        for (text, line, column, reason) in cases {
            let e = compileError(text)
            #expect(e != nil, "\(text) compiled")
            guard let e else { continue }
            #expect(e.file == "t.json")
            #expect(e.line == line && e.column == column, "\(text): \(e)")
            #expect(e.reason.contains(reason), "\(text): \(e)")
            #expect(e.description.hasPrefix("t.json:\(line):\(column): "))
        }
    }

    @Test func rejectsTemplatesThatCanExceedTheLimit() throws {
        let big = "{\"aps\":{\"badge\":1},\n\"p\":\"{{pad:4090}}\"}"
        let e = try #require(compileError(big))
        #expect(e.line == 2 && e.column == 6 && e.reason.contains("over the 4096-byte limit"), "\(e)")
        // VoIP has 5120 bytes; the size check can be switched off; a token of 200 bytes counts.
        #expect(compileError(big, options: .init(limit: PayloadLimits.apns(.voip))) == nil)
        #expect(compileError(big, options: .init(allowOversize: true)) == nil)
        let tok = "{\"t\":\"{{token}}\",\"p\":\"{{pad:3950}}\"}"
        #expect(compileError(tok, options: .init(maxTokenLength: 64)) == nil)
        #expect(compileError(tok, options: .init(maxTokenLength: 200)) != nil)
        #expect(compileError(tok, options: .init(limit: PayloadLimits.fcm(topic: true))) != nil)
    }

    @Test func perRequestLimitCheckCountsEscapes() throws {
        let t = try PayloadTemplate(text: "{\"t\":\"{{text}}\"}", options: .init(allowOversize: true))
        let fits = [UInt8](repeating: UInt8(ascii: "a"), count: 4096 - 8)
        let escapes = [UInt8](repeating: 0x01, count: 700)  // 6 bytes each once escaped
        fits.withUnsafeBytes { #expect(!t.wouldExceed(4096, RequestContext(seq: 0, messageID: uuid, text: $0))) }
        escapes.withUnsafeBytes {
            let ctx = RequestContext(seq: 0, messageID: uuid, text: $0)
            #expect(t.encodedLength(ctx) == 8 + 4200)
            #expect(t.wouldExceed(4096, ctx))
            var small = [UInt8](repeating: 0, count: 4096)
            #expect(small.withUnsafeMutableBytes { ZeroCopyEncoder(template: t).encode(ctx, into: $0) } == nil)
        }
    }

    @Test func literalsAreCanonicalized() throws {
        let t = try PayloadTemplate(text: """
            { "z": [ 1.50, 1e3, -0, 0.1, 12345678901234567890, true, false, null ],
              "a": "tab\\there \\u00e9 \\/ \\ud83d\\ude00", "m": {"b": 1, "B": 2, "a": {}} }
            """)
        let out = render(t, RequestContext(seq: 0, messageID: uuid))
        #expect(out == #"{"a":"tab\there é / 😀","m":{"B":2,"a":{},"b":1},"z":[1.5,1000,0,0.1,1.2345678901234567e+19,true,false,null]}"#)
    }

    @Test func loadsFilesAndReportsUnreadableOnes() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pb-template-\(getpid()).json").path
        try Data("{\"aps\":{\"badge\":{{badge}}}}".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let t = try PayloadTemplate(path: path)
        #expect(render(t, RequestContext(seq: 0, messageID: uuid, badge: 9)) == "{\"aps\":{\"badge\":9}}")
        #expect(throws: TemplateError.self) { try PayloadTemplate(path: path + ".missing") }
    }

    @Test func limitsFollowTheProtocolReference() {
        #expect(PayloadLimits.apns(.alert) == 4096 && PayloadLimits.apns(.voip) == 5120)
        #expect(PayloadLimits.limit(for: .fcm) == 4096 && PayloadLimits.limit(for: .fcm, topic: true) == 2048)
        #expect(PayloadLimits.limit(for: .apns, pushType: .background) == 4096)
    }

    @Test func runTemplateDefaultsPerProtocolAndUsesTheRightLimit() throws {
        let apns = try PayloadTemplate.forRun(path: nil, protocol: .apns, maxTokenLength: 64)
        #expect(apns.placeholders == [.messageID])
        let fcm = try PayloadTemplate.forRun(path: nil, protocol: .fcm, maxTokenLength: 163)
        #expect(fcm.placeholders.contains(.token))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pb-run-\(getpid()).json").path
        try Data("{\"p\":\"{{pad:3000}}\"}".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try PayloadTemplate.forRun(path: path, protocol: .fcm, maxTokenLength: 64).maxLength == 3008)
        #expect(throws: TemplateError.self) { try PayloadTemplate.forRun(path: path, protocol: .fcm, fcmTopic: true, maxTokenLength: 64) }
        #expect(try PayloadTemplate.forRun(path: path, protocol: .fcm, fcmTopic: true, maxTokenLength: 64, allowOversize: true).maxLength == 3008)
    }
}
