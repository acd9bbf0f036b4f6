import PushVocabulary
import Testing
import CAllocCounter
@testable import MockGateway

@Suite struct GatewayStateMachineTests {
    let tokenPath = "/3/device/" + String(repeating: "ab", count: 32)

    @Test func validRequestIsAnswered200AtOnceWithAGeneratedApnsID() throws {
        var h = Harness()
        let action = h.send(TestRequest())
        guard case .respond = action.decision else { Issue.record("expected an immediate response, got \(action)"); return }
        let r = action.written
        #expect(r.status == 200)
        #expect(r.reason == nil)
        #expect(r.goaway == nil && r.maxConcurrentStreams == nil)
        let id = r.apnsID.description
        #expect(id.count == 36)
        #expect(id == id.lowercased())
        let chars = Array(id)
        #expect(chars[8] == "-" && chars[13] == "-" && chars[18] == "-" && chars[23] == "-")
        #expect(chars[14] == "4") // version 4
        #expect("89ab".contains(chars[19])) // RFC variant
        let other = h.send(TestRequest()).response!.apnsID
        #expect(other != r.apnsID)
    }

    @Test func apnsIDIsEchoedExactlyOnSuccessAndOnError() {
        var h = Harness()
        let id = "8E4F5A2B-1C3D-4E5F-8A9B-0C1D2E3F4A5B"
        let ok = h.send(TestRequest(headers: [("apns-topic", "t"), ("apns-id", id)])).response!
        #expect(ok.status == 200 && ok.apnsID.description == id)
        let bad = h.send(TestRequest(headers: [("apns-id", id)])).response!
        #expect(bad.status == 400 && bad.reason == .missingTopic && bad.apnsID.description == id)
    }

    @Test(arguments: [
        // (description, method, path, headers, body, status, reason)
        ("duplicate apns-topic", "POST", nil, [("apns-topic", "a"), ("apns-topic", "a")], nil, 400, "DuplicateHeaders"),
        ("duplicate apns-priority", "POST", nil, [("apns-topic", "a"), ("apns-priority", "10"), ("apns-priority", "10")], nil, 400, "DuplicateHeaders"),
        ("apns-id not a UUID", "POST", nil, [("apns-topic", "a"), ("apns-id", "not-a-uuid")], nil, 400, "BadMessageId"),
        ("apns-id without dashes", "POST", nil, [("apns-topic", "a"), ("apns-id", "8e4f5a2b1c3d4e5f8a9b0c1d2e3f4a5b0000")], nil, 400, "BadMessageId"),
        ("GET on a device path", "GET", nil, [("apns-topic", "a")], nil, 405, "MethodNotAllowed"),
        ("PUT", "PUT", nil, [("apns-topic", "a")], nil, 405, "MethodNotAllowed"),
        ("no topic", "POST", nil, [], nil, 400, "MissingTopic"),
        ("empty topic", "POST", nil, [("apns-topic", "")], nil, 400, "BadTopic"),
        ("topic with a space", "POST", nil, [("apns-topic", "com.example app")], nil, 400, "BadTopic"),
        ("topic with a space in its first word", "POST", nil, [("apns-topic", "com exam.ple.app")], nil, 400, "BadTopic"),
        ("topic with a tab", "POST", nil, [("apns-topic", "com.example.app\t.x")], nil, 400, "BadTopic"),
        ("topic with DEL", "POST", nil, [("apns-topic", "com.example.\u{7F}app")], nil, 400, "BadTopic"),
        ("short topic with DEL", "POST", nil, [("apns-topic", "ab\u{7F}")], nil, 400, "BadTopic"),
        ("topic with a non-ASCII letter", "POST", nil, [("apns-topic", "com.exämple.app")], nil, 400, "BadTopic"),
        ("topic of 8 bytes ending in DEL", "POST", nil, [("apns-topic", "com.exa\u{7F}")], nil, 400, "BadTopic"),
        ("collapse id of 65 bytes", "POST", nil, [("apns-topic", "a"), ("apns-collapse-id", String(repeating: "c", count: 65))], nil, 400, "BadCollapseId"),
        ("expiration not a number", "POST", nil, [("apns-topic", "a"), ("apns-expiration", "tomorrow")], nil, 400, "BadExpirationDate"),
        ("expiration negative", "POST", nil, [("apns-topic", "a"), ("apns-expiration", "-1")], nil, 400, "BadExpirationDate"),
        ("expiration empty", "POST", nil, [("apns-topic", "a"), ("apns-expiration", "")], nil, 400, "BadExpirationDate"),
        ("priority 7", "POST", nil, [("apns-topic", "a"), ("apns-priority", "7")], nil, 400, "BadPriority"),
        ("priority 010", "POST", nil, [("apns-topic", "a"), ("apns-priority", "010")], nil, 400, "BadPriority"),
        ("push type unknown", "POST", nil, [("apns-topic", "a"), ("apns-push-type", "banner")], nil, 400, "InvalidPushType"),
        ("push type upper case", "POST", nil, [("apns-topic", "a"), ("apns-push-type", "Alert")], nil, 400, "InvalidPushType"),
        ("no token", "POST", "/3/device/", [("apns-topic", "a")], nil, 400, "MissingDeviceToken"),
        ("odd-length token", "POST", "/3/device/" + String(repeating: "a", count: 65), [("apns-topic", "a")], nil, 400, "BadDeviceToken"),
        ("short token", "POST", "/3/device/abcd", [("apns-topic", "a")], nil, 400, "BadDeviceToken"),
        ("token not hex", "POST", "/3/device/" + String(repeating: "zz", count: 32), [("apns-topic", "a")], nil, 400, "BadDeviceToken"),
        ("token too long", "POST", "/3/device/" + String(repeating: "ab", count: 101), [("apns-topic", "a")], nil, 400, "BadDeviceToken"),
        ("token with a query", "POST", "/3/device/" + String(repeating: "ab", count: 32) + "?x=1", [("apns-topic", "a")], nil, 400, "BadDeviceToken"),
        ("other path", "POST", "/3/devices/abc", [("apns-topic", "a")], nil, 404, "BadPath"),
        ("root path", "POST", "/", [("apns-topic", "a")], nil, 404, "BadPath"),
        ("empty body", "POST", nil, [("apns-topic", "a")], "", 400, "PayloadEmpty"),
        ("body is an array", "POST", nil, [("apns-topic", "a")], "[1,2]", 400, "PayloadEmpty"),
        ("body is a string", "POST", nil, [("apns-topic", "a")], "\"hi\"", 400, "PayloadEmpty"),
        ("body is broken JSON", "POST", nil, [("apns-topic", "a")], "{\"aps\":", 400, "PayloadEmpty"),
        ("body is an object then junk", "POST", nil, [("apns-topic", "a")], "{} {}", 400, "PayloadEmpty"),
    ] as [(String, String, String?, [(String, String)], String?, Int, String)])
    func malformedRequestGetsAPNsStatusAndReason(_ c: (String, String, String?, [(String, String)], String?, Int, String)) {
        var h = Harness()
        let r = h.send(TestRequest(method: c.1, path: c.2, headers: c.3, body: c.4)).response
        #expect(r?.status == UInt16(c.5), "\(c.0)")
        #expect(r?.reason?.rawValue == c.6, "\(c.0)")
        #expect(r?.timestampMillis == nil, "\(c.0)")
    }

    @Test func acceptedEdgesAreAnswered200() {
        var h = Harness()
        let ok: [TestRequest] = [
            TestRequest(headers: [("apns-topic", "a"), ("apns-collapse-id", String(repeating: "c", count: 64))]),
            TestRequest(headers: [("apns-topic", "a"), ("apns-priority", "5"), ("apns-expiration", "0"), ("apns-push-type", "background")]),
            TestRequest(headers: [("apns-topic", "a"), ("apns-priority", "1"), ("apns-expiration", "1893456000")]),
            TestRequest(path: "/3/device/" + String(repeating: "AB", count: 32), headers: [("apns-topic", "a")]),
            TestRequest(path: "/3/device/" + String(repeating: "ab", count: 100), headers: [("apns-topic", "a")]),
            TestRequest(headers: [("apns-topic", "a"), ("host", "api.push.apple.com"), ("content-type", "application/json"), ("user-agent", "x"), ("user-agent", "y")]),
            TestRequest(headers: [("apns-topic", "a"), ("authorization", "bearer x.y.z")]),
            TestRequest(headers: [("apns-topic", "a")], body: " \n{\"aps\":{}}\n"),
            TestRequest(bodyBytes: 4096),
            TestRequest(bodyBytes: 5120, headers: [("apns-topic", "a.voip"), ("apns-push-type", "voip")]),
        ]
        for (i, request) in ok.enumerated() {
            let r = h.send(request).response!
            #expect(r.status == 200, "case \(i): \(r.reason?.rawValue ?? "")")
        }
        for type in ["alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk", "widgets"] {
            #expect(h.status(TestRequest(headers: [("apns-topic", "a"), ("apns-push-type", type)])).0 == 200, "\(type)")
        }
    }

    @Test func payloadSizeLimitsAre4096And5120ForVoIP() {
        var h = Harness()
        #expect(h.status(TestRequest(bodyBytes: 4097)) == (413, "PayloadTooLarge"))
        let voip = [("apns-topic", "a.voip"), ("apns-push-type", "voip")]
        #expect(h.status(TestRequest(bodyBytes: 5121, headers: voip)) == (413, "PayloadTooLarge"))
        #expect(h.status(TestRequest(bodyBytes: 4097, headers: voip)).0 == 200)
    }

    @Test func validationFollowsPushysOrder() {
        var h = Harness()
        // Everything wrong at once: each fix reveals the next reason in order.
        var headers: [(String, String)] = [("apns-id", "bad"), ("apns-collapse-id", String(repeating: "c", count: 65)),
                                           ("apns-expiration", "x"), ("apns-priority", "3"), ("apns-push-type", "nope")]
        var method = "GET", path = "/3/device/zz", body = ""
        func next() -> String? { h.status(TestRequest(method: method, path: path, headers: headers, body: body)).1 }
        #expect(next() == "BadMessageId"); headers.removeAll { $0.0 == "apns-id" }
        #expect(next() == "MethodNotAllowed"); method = "POST"
        #expect(next() == "MissingTopic"); headers.append(("apns-topic", "a"))
        #expect(next() == "BadCollapseId"); headers.removeAll { $0.0 == "apns-collapse-id" }
        #expect(next() == "BadExpirationDate"); headers.removeAll { $0.0 == "apns-expiration" }
        #expect(next() == "BadPriority"); headers.removeAll { $0.0 == "apns-priority" }
        #expect(next() == "InvalidPushType"); headers.removeAll { $0.0 == "apns-push-type" }
        #expect(next() == "BadDeviceToken"); path = tokenPath
        #expect(next() == "PayloadEmpty"); body = "{}"
        #expect(next() == nil)
        // Duplicates come before everything.
        #expect(h.status(TestRequest(method: "GET", headers: [("apns-id", "x"), ("apns-id", "y")])).1 == "DuplicateHeaders")
    }

    @Test func topicOptionalAcceptsAMissingTopic() throws {
        var h = try Harness(["--topic-optional"])
        #expect(h.status(TestRequest(headers: [])).0 == 200)
    }

    @Test func tokenLengthIsConfigurable() throws {
        var h = try Harness(["--token-length", "64"])
        #expect(h.status(TestRequest(path: "/3/device/" + String(repeating: "ab", count: 33))) == (400, "BadDeviceToken"))
        #expect(h.status(TestRequest(path: "/3/device/" + String(repeating: "ab", count: 32))).0 == 200)
        var short = try Harness(["--token-length", "8-16"])
        #expect(short.status(TestRequest(path: "/3/device/abcdef12")).0 == 200)
        #expect(short.status(TestRequest(path: "/3/device/abcdef1")) == (400, "BadDeviceToken"))
    }

    @Test func statsRequestIsRecognisedAndNotCounted() {
        var h = Harness()
        #expect(h.send(TestRequest(method: "GET", path: "/stats")).decision == .stats)
        #expect(h.stats.requests == 0)
        #expect(h.status(TestRequest(method: "POST", path: "/stats")) == (404, "BadPath"))
        #expect(h.stats.requests == 1)
    }

    @Test func countersFollowDecisions() {
        var h = Harness()
        _ = h.send(TestRequest())
        _ = h.send(TestRequest())
        _ = h.send(TestRequest(headers: []))
        _ = h.send(TestRequest(bodyBytes: 5000))
        let s = h.stats
        #expect(s.requests == 4)
        #expect(s.byStatus == [200: 2, 400: 1, 413: 1])
        #expect(s.byReason == ["MissingTopic": 1, "PayloadTooLarge": 1])
        #expect(s.bytesIn == UInt64(3 * 22 + 5000))
        #expect(s.connectionsOpen == 1 && s.connectionsTotal == 1)
        h.machine.connectionClosed()
        #expect(h.stats.connectionsOpen == 0 && h.stats.connectionsTotal == 1)
        #expect(h.stats.json == #"{"requests":4,"by_status":{"200":2,"400":1,"413":1},"by_reason":{"MissingTopic":1,"PayloadTooLarge":1},"bytes_in":5066,"connections_open":0,"connections_total":1,"streams_open":0,"goaways":0,"drops":0}"#)
    }

    @Test func validRequestAllocatesNothing() {
        var h = Harness()
        // The request is built once outside the measured loop; only the decision is counted.
        let request = TestRequest(headers: [("apns-topic", "com.example.app"), ("apns-push-type", "alert"),
                                            ("apns-priority", "10"), ("apns-expiration", "0"),
                                            ("apns-id", "8e4f5a2b-1c3d-4e5f-8a9b-0c1d2e3f4a5b")])
        var best = UInt64.max
        request.with { req in
            for round in 0..<5 {
                pb_alloc_reset()
                for _ in 0..<1000 {
                    let action = h.machine.answer(req, connection: &h.connection, now: h.now)
                    if case .respond = action.decision, action.written.status == 200 {} else { Issue.record("not 200") }
                }
                if round > 0 { best = min(best, pb_alloc_count()) }
            }
        }
        #expect(pb_alloc_counter_active() != 0)
        #expect(best == 0, "allocations per 1000 valid requests: \(best)")
    }
}
