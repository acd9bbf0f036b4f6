import AllocationTesting
import Foundation
import PushVocabulary
import Testing
@testable import PushPayload

@Suite struct DeviceTokensTests {
    func parse(_ text: String) throws(TokenFileError) -> DeviceTokens {
        try DeviceTokens(bytes: Array(text.utf8), file: "tokens.txt")
    }

    func failure(_ text: String) -> TokenFileError? {
        do { _ = try parse(text); return nil } catch { return error }
    }

    @Test func parsesTokensSkippingBlanksAndComments() throws {
        let a = String(repeating: "ab", count: 32), b = String(repeating: "0F", count: 32)
        let t = try parse("# tokens\n\n  \(a)  \r\n# another\n\(b)\n\n")
        #expect(t.count == 2)
        #expect(t[0] == a)
        #expect(t[1] == b.lowercased())
        #expect(t.maxLength == 64)
        #expect(t.token(1).count == 64)
        #expect(String(decoding: t.apnsPath(1), as: UTF8.self) == "/3/device/" + b.lowercased())
        #expect(minAllocations { _ = t.apnsPath(0).count } == 0)
        // Variable-length tokens are accepted (Apple says the length may change).
        #expect(try parse("abcd\n" + a).maxLength == 64)
    }

    @Test func rejectsBadLinesWithLineAndReason() {
        let cases: [(String, Int, String)] = [
            ("abcd\nabc\n", 2, "odd number of hex digits (3)"),
            ("# c\nabzz\n", 2, "non-hex character 'z' at column 3"),
            ("ab c d\n", 1, "a space inside the topics at column 5"),
            ("abcd com.example.app,\n", 1, "empty topic after the last comma"),
            ("abcd a,,b\n", 1, "empty topic at column 8"),
            ("abcd a\u{7f}b\n", 1, "topic has a character byte 0x7f at column 7"),
            ("abc com.example.app\n", 1, "odd number of hex digits (3)"),
            ("", 0, "no tokens"),
            ("# only a comment\n\n", 0, "no tokens"),
            // A 10 MB line is refused: taken, it would size every request's memory after it.
            ("abcd\n" + String(repeating: "ab", count: 5_000_000) + "\n", 2, "token is 10000000 characters, over the 1024-digit limit"),
            (String(repeating: "a", count: 1026) + "\n", 1, "over the 1024-digit limit"),
        ]
        for (text, line, reason) in cases {
            let e = failure(text)
            #expect(e?.line == line, "\(text.debugDescription): \(String(describing: e))")
            #expect(e?.reason.contains(reason) == true, "\(text.debugDescription): \(String(describing: e))")
            #expect(e?.description.hasPrefix(line > 0 ? "tokens.txt:\(line): " : "tokens.txt: ") == true)
        }
    }

    @Test func linesMayNameTheTokensTopics() throws {
        let a = String(repeating: "ab", count: 32), b = String(repeating: "0F", count: 32), c = String(repeating: "12", count: 32)
        let t = try parse("\(a) com.example.app\n\(b)\t com.example.app.voip,com.example.app  \r\n\(c)\n")
        #expect(t.count == 3 && t.hasTopics)
        #expect(t[1] == b.lowercased() && t.token(1).count == 64)
        #expect(String(decoding: t.topic(0), as: UTF8.self) == "com.example.app")
        #expect(String(decoding: t.topic(1), as: UTF8.self) == "com.example.app.voip")
        #expect(t.topic(2).isEmpty)
        #expect(t.topics(1) == ["com.example.app.voip", "com.example.app"])
        #expect(t.topics(2) == [])
        #expect(minAllocations { _ = t.topic(1).count } == 0)
        let plain = try parse(a)
        #expect(!plain.hasTopics && plain.topic(0).isEmpty && plain.topics(0) == [])
        let e = #expect(throws: TokenFileError.self) {
            try DeviceTokens(bytes: Array("\(a) t\n\(b)\n".utf8), file: "t.txt", requireTopics: true)
        }
        #expect(e?.description == "t.txt:2: token has no topic (a line is 'token topic[,topic...]')")
    }

    @Test func loadsAFileAndNamesAMissingOne() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pb-tokens-\(getpid()).txt").path
        try Data("\(String(repeating: "1", count: 64))\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try DeviceTokens(path: path).count == 1)
        #expect(throws: TokenFileError.self) { try DeviceTokens(path: path + ".missing") }
    }

    @Test func syntheticTokensAreDeterministicHexAndDistinct() {
        let a = DeviceTokens(synthetic: 1000, seed: 42), b = DeviceTokens(synthetic: 1000, seed: 42)
        let c = DeviceTokens(synthetic: 1000, seed: 43)
        #expect((0..<1000).allSatisfy { a[$0] == b[$0] })
        #expect(a[0] != c[0])
        #expect(Set((0..<1000).map { a[$0] }).count == 1000)
        for i in 0..<1000 {
            #expect(a[i].utf8.count == 64 && a[i].utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        }
        #expect(minAllocations { _ = a.token(7).count } == 0)
    }

    @Test func fcmKindKeepsTokensAsWrittenAndRejectsOthers() throws {
        let t = try DeviceTokens(bytes: Array("AbC:d_e-f.9\n# c\n\nx\n".utf8), file: "f", kind: .fcm)
        #expect(t.count == 2 && t[0] == "AbC:d_e-f.9" && t[1] == "x" && t.maxLength == 11)
        let e = #expect(throws: TokenFileError.self) { try DeviceTokens(bytes: Array("ok\na/b\n".utf8), file: "f", kind: .fcm) }
        #expect(e?.description == "f:2: FCM registration token has a character '/' at column 2; allowed: A-Z a-z 0-9 _ : . -")
        let tooLong = String(repeating: "a", count: DeviceTokens.maxFCMTokenLength + 1)
        #expect(throws: TokenFileError.self) { try DeviceTokens(bytes: Array(tooLong.utf8), file: "f", kind: .fcm) }
        #expect(throws: TokenFileError.self) { try DeviceTokens(bytes: Array("# only\n".utf8), file: "f", kind: .fcm) }
        // APNs stays hex-only.
        #expect(throws: TokenFileError.self) { try DeviceTokens(bytes: Array("AbC:d\n".utf8), file: "f") }
    }
}

@Suite struct PushUUIDTests {
    @Test func writesLowercaseCanonicalVersion4() {
        var rng = PushRandom(seed: 9)
        var seen = Set<String>()
        for _ in 0..<1000 {
            let u = rng.uuid()
            let s = u.description
            seen.insert(s)
            #expect(s.count == 36)
            #expect(Array(s)[14] == "4")  // version
            #expect("89ab".contains(Array(s)[19]))  // variant
            #expect(s == s.lowercased())
            #expect(UUID(uuidString: s)?.uuidString.lowercased() == s)  // Foundation agrees on the layout
            #expect(PushUUID(s) == u)
        }
        #expect(seen.count == 1000)
        #expect(PushUUID("not-a-uuid") == nil)
        #expect(PushUUID("123E4567-E89B-12D3-A456-426614174000")?.description == "123e4567-e89b-12d3-a456-426614174000")
    }

    @Test func sameSeedSameSequenceAndNoAllocation() {
        var a = PushRandom(seed: 1), b = PushRandom(seed: 1)
        #expect((0..<100).allSatisfy { _ in a.next() == b.next() })
        var buf = [UInt8](repeating: 0, count: 36)
        buf.withUnsafeMutableBytes { p in
            #expect(minAllocations { a.uuid().write(to: p.baseAddress!) } == 0)
        }
        let u = a.uuid()
        #expect(u.derived(0) == u.derived(0) && u.derived(0) != u.derived(1))
    }
}

@Suite struct NotificationModelTests {
    @Test func exampleRendersApplesPayloadPlusMessageID() {
        #expect(PushNotification.example.templateJSON()
            == #"{"aps":{"alert":{"title":"Portugal vs. Denmark","body":"great match!"},"badge":1},"customKey":"customValue","message_id":"{{message_id}}"}"#)
    }

    @Test func everyAPSKeyRendersAndCompiles() throws {
        let n = PushNotification(
            aps: APS(alert: .dictionary(Alert(title: "T", subtitle: "S", body: "B \"q\"", launchImage: "l.png",
                                              titleLocKey: "TK", titleLocArgs: ["a", "b"], subtitleLocKey: "SK",
                                              subtitleLocArgs: [], locKey: "LK", locArgs: ["x"], actionLocKey: "AK")),
                     badge: 3, sound: .critical(name: "alarm.caf", volume: 0.5, critical: true), threadID: "chat-42",
                     category: "MSG", contentAvailable: true, mutableContent: true, targetContentID: "w1",
                     interruptionLevel: .timeSensitive, relevanceScore: 0.75),
            custom: [(key: "n", value: .placeholder("seq")), (key: "i", value: .int(-5)), (key: "d", value: .double(2.5)),
                     (key: "b", value: .bool(false))])
        let json = n.templateJSON()
        let t = try PayloadTemplate(text: json)
        var out = [UInt8](repeating: 0, count: 4096)
        let len = out.withUnsafeMutableBytes { ZeroCopyEncoder(template: t).encode(RequestContext(seq: 77, messageID: PushUUID(high: 0, low: 0)), into: $0) }!
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(out[0..<len])) as? [String: Any])
        let aps = try #require(obj["aps"] as? [String: Any])
        #expect(aps["thread-id"] as? String == "chat-42")
        #expect(aps["interruption-level"] as? String == "time-sensitive")
        #expect(aps["content-available"] as? Int == 1 && aps["mutable-content"] as? Int == 1)
        #expect(aps["relevance-score"] as? Double == 0.75)
        #expect((aps["sound"] as? [String: Any])?["volume"] as? Double == 0.5)
        #expect((aps["alert"] as? [String: Any])?["title-loc-args"] as? [String] == ["a", "b"])
        #expect((aps["alert"] as? [String: Any])?["body"] as? String == "B \"q\"")
        #expect(obj["n"] as? Int == 77 && obj["i"] as? Int == -5 && obj["b"] as? Bool == false)
        #expect(PushNotification(aps: APS(alert: .text("hi"), sound: .named("default"))).templateJSON()
            == #"{"aps":{"alert":"hi","sound":"default"}}"#)
    }

    @Test func headersAreCheckedLikeAPNs() {
        #expect(APNsHeaders(pushType: .alert, topic: "com.example.app", priority: 10).problems().isEmpty)
        #expect(APNsHeaders(priority: 7).problems().first?.hasPrefix("BadPriority") == true)
        #expect(APNsHeaders(pushType: .background, priority: 10).problems().first?.hasPrefix("BadPriority") == true)
        #expect(APNsHeaders(collapseID: String(repeating: "c", count: 65)).problems().first?.hasPrefix("BadCollapseId") == true)
        #expect(APNsHeaders(pushType: .voip, topic: "com.example.app").problems().first?.hasPrefix("InvalidPushType") == true)
        #expect(APNsHeaders(pushType: .voip, topic: "com.example.app.voip").problems().isEmpty)
        #expect(APNsPushType.voip.payloadLimit == 5120 && APNsPushType.liveactivity.topicSuffix == ".push-type.liveactivity")
    }
}
