import Foundation
import PushVocabulary
import Testing
import CAllocCounter
@testable import MockGateway

@Suite struct FCMStateMachineTests {
    // MARK: success and the Apple payload (golden examples)

    @Test func seedsExampleIsAcceptedAndBuildsTheGoldenApplePush() throws {
        var h = try Harness(["--capture", "5"])
        let r = h.fcm(fcmRequest(fcmSeedMessage))
        #expect(r.status == 200 && r.code == nil)
        #expect(r.body == #"{"name":"projects/pushbench/messages/\#(harnessMessageID(1))"}"#)
        let s = h.stats
        #expect(s.fcm.messagesAccepted == 1 && s.fcm.deviceDeliveries == 1 && s.byStatus[200] == 1)
        let push = try #require(s.fcm.captured.first)
        #expect(push.payload == #"{"aps":{"alert":{"title":"Portugal vs. Denmark","body":"great match!"},"badge":1},"customKey":"customValue","gcm.message_id":"\#(harnessMessageID(1))"}"#)
        // FCM's defaults: priority 10, expiration now + 30 days (the harness's clock starts at 1.7e12 ms).
        #expect(push.headers.map { "\($0.0): \($0.1)" } == ["apns-priority: 10", "apns-expiration: 1702592000",
                                                            "apns-push-type: alert", "apns-topic: com.example.pushbench"])
        #expect(push.target == "token:fcm-token-1")
        #expect(push.name == "projects/pushbench/messages/" + harnessMessageID(1))
        #expect(try JSONSerialization.jsonObject(with: Data(s.fcm.captureJSON.utf8)) is [Any])
    }

    @Test func silentContentAvailableMessageIsBackgroundAtPriority5() throws {
        var h = try Harness(["--capture", "5"])
        let r = h.fcm(fcmRequest(fcmMessage(#""apns":{"payload":{"aps":{"content-available":1}}},"data":{"k":"v"}"#)))
        #expect(r.status == 200)
        let push = try #require(h.stats.fcm.captured.first)
        #expect(push.payload == #"{"aps":{"content-available":1},"k":"v","gcm.message_id":"\#(harnessMessageID(1))"}"#)
        #expect(push.headers[0] == ("apns-priority", "5") as (String, String))
        #expect(push.headers[2].1 == "background")
    }

    @Test func legacyKeysAreMappedToAPNsNames() throws {
        var h = try Harness(["--capture", "5"])
        let body = fcmMessage(#""notification":{"title":"T","click_action":"MATCH","body_loc_key":"K","body_loc_args":["a"],"sound":"default"},"apns":{"payload":{"aps":{"content_available":true,"mutable_content":true}}}"#)
        #expect(h.fcm(fcmRequest(body)).status == 200)
        let push = try #require(h.stats.fcm.captured.first)
        #expect(push.payload == #"{"aps":{"alert":{"title":"T","loc-key":"K","loc-args":["a"]},"content-available":1,"mutable-content":1,"category":"MATCH","sound":"default"},"gcm.message_id":"\#(harnessMessageID(1))"}"#)
        #expect(push.headers[2].1 == "alert")
    }

    @Test func apnsPayloadAlertOverridesNotificationAndHeadersPassThrough() throws {
        var h = try Harness(["--capture", "5"])
        let body = fcmMessage(#""notification":{"title":"T","body":"B","image":"https://x/i.png"},"apns":{"headers":{"apns-priority":"5","apns-collapse-id":"c1","apns-expiration":"0"},"payload":{"aps":{"alert":{"title":"Apple title"}},"custom":{"x":1}},"fcm_options":{"image":"https://x/apple.png"}},"data":{"custom":"loses","d":"e"}"#)
        #expect(h.fcm(fcmRequest(body)).status == 200)
        let push = try #require(h.stats.fcm.captured.first)
        #expect(push.payload == #"{"aps":{"alert":{"body":"B","title":"Apple title"}},"custom":{"x":1},"d":"e","gcm.message_id":"\#(harnessMessageID(1))","fcm_options":{"image":"https://x/apple.png"}}"#)
        #expect(push.headers.map { "\($0.0): \($0.1)" } == ["apns-priority: 5", "apns-expiration: 0", "apns-push-type: alert",
                                                            "apns-topic: com.example.pushbench", "apns-collapse-id: c1"])
    }

    @Test func lowerCamelCaseAndSnakeCaseAreBothAccepted() throws {
        var h = Harness()
        let snake = #"{"validate_only":false,"message":{"token":"t1","fcm_options":{"analytics_label":"l1"},"apns":{"fcm_options":{"analytics_label":"a","image":"i"},"live_activity_token":"la"}}}"#
        let camel = #"{"validateOnly":false,"message":{"token":"t1","fcmOptions":{"analyticsLabel":"l1"},"apns":{"fcmOptions":{"analyticsLabel":"a","image":"i"},"liveActivityToken":"la"}}}"#
        #expect(h.fcm(fcmRequest(snake)).status == 200)
        #expect(h.fcm(fcmRequest(camel)).status == 200)
        // An escaped field name is still the field.
        #expect(h.fcm(fcmRequest(#"{"message":{"\u0074oken":"t1","data":{"a":"b"}}}"#)).status == 200)
        let dry = h.fcm(fcmRequest(#"{"validateOnly":true,"message":{"topic":"news"}}"#))
        #expect(dry.status == 200 && dry.validateOnly)
    }

    @Test func validateOnlyAnswersAFakeIDAndDeliversNothing() throws {
        var h = try Harness(["--capture", "5"])
        let r = h.fcm(fcmRequest(#"{"validate_only":true,"message":{"token":"abc","notification":{"title":"x"}}}"#))
        #expect(r.body == #"{"name":"projects/pushbench/messages/fake_message_id"}"#)
        let s = h.stats.fcm
        #expect(s.validatedOnly == 1 && s.messagesAccepted == 0 && s.deviceDeliveries == 0 && s.captured.isEmpty)
        // A dry run still validates.
        let bad = h.fcm(fcmRequest(#"{"validate_only":true,"message":{"token":"abc","data":{"from":"x"}}}"#))
        #expect(bad.status == 400 && bad.problem == .reservedDataKey)
    }

    /// The Apple payload is not parsed again by the APNs checks, so it must be a JSON object by construction.
    @Test func everyCapturedPayloadIsAJSONObject() throws {
        var h = try Harness(["--capture", "100"])
        let bodies = [fcmSeedMessage,
                      fcmMessage(#""data":{"a":"x\"y\\z\u00e9","b":""},"apns":{"payload":{"aps":{"alert":"plain","sound":{"critical":1,"name":"s"}},"k":[1,{"n":null}],"k":true}}"#),
                      fcmMessage(#""notification":{"title":"\u2603","body":"b","badge":3},"apns":{"payload":{"aps":{"alert":{"subtitle":"s"},"thread-id":"t"}},"fcm_options":{"image":"https://i"}}"#),
                      #"{"message":{"topic":"news","data":{"x":"1","x":"2"}}}"#,
                      #"{"message":{"condition":"'a' in topics","apns":{"live_activity_token":"lat","payload":{"aps":{"event":"update","content-state":{}}}}}}"#]
        for body in bodies { #expect(h.fcm(fcmRequest(body)).status == 200, "\(body)") }
        let captured = h.stats.fcm.captured
        #expect(captured.count == bodies.count)
        for push in captured {
            let o = try JSONSerialization.jsonObject(with: Data(push.payload.utf8)) as? [String: Any]
            #expect(o?["aps"] is [String: Any], "\(push.payload)")
        }
        // Repeated keys: the last one wins.
        #expect(captured[3].payload.contains(#""x":"2""#) && !captured[3].payload.contains(#""x":"1""#))
        #expect(captured[1].payload.contains(#""k":true"#) && !captured[1].payload.contains(#""k":[1"#))
    }

    // MARK: every refusal

    @Test(arguments: [
        ("not JSON", "{\"message\":", FCMProblem.invalidJSON),
        ("empty body", "", .invalidJSON),
        ("array", "[]", .wrongType),
        ("no message", #"{"validate_only":true}"#, .missingMessage),
        ("message not an object", #"{"message":"x"}"#, .wrongType),
        ("unknown top-level field", #"{"message":{"token":"t"},"extra":1}"#, .unknownField),
        ("unknown message field", #"{"message":{"token":"t","badge":1}}"#, .unknownField),
        ("no target", #"{"message":{"notification":{"title":"x"}}}"#, .noTarget),
        ("token and topic", #"{"message":{"token":"t","topic":"news"}}"#, .twoTargets),
        ("topic and condition", #"{"message":{"topic":"news","condition":"'a' in topics"}}"#, .twoTargets),
        ("token not a string", #"{"message":{"token":5}}"#, .wrongType),
        ("token with a space", #"{"message":{"token":"a b"}}"#, .badToken),
        ("empty token", #"{"message":{"token":""}}"#, .badToken),
        ("bad topic", #"{"message":{"topic":"news!"}}"#, .badTopic),
        ("bad condition", #"{"message":{"condition":"'a' in topics &&"}}"#, .badCondition),
        ("six topics", #"{"message":{"condition":"'a' in topics || 'b' in topics || 'c' in topics || 'd' in topics || 'e' in topics || 'f' in topics"}}"#, .badCondition),
        ("data value a number", #"{"message":{"token":"t","data":{"n":1}}}"#, .dataNotString),
        ("reserved from", #"{"message":{"token":"t","data":{"from":"x"}}}"#, .reservedDataKey),
        ("reserved message_type", #"{"message":{"token":"t","data":{"message_type":"x"}}}"#, .reservedDataKey),
        ("reserved google.", #"{"message":{"token":"t","data":{"google.c.a":"x"}}}"#, .reservedDataKey),
        ("reserved gcm.notification.", #"{"message":{"token":"t","data":{"gcm.notification.x":"x"}}}"#, .reservedDataKey),
        ("analytics label", #"{"message":{"token":"t","fcm_options":{"analytics_label":"no spaces"}}}"#, .badAnalyticsLabel),
        ("apns header not a string", #"{"message":{"token":"t","apns":{"headers":{"apns-priority":10}}}}"#, .wrongType),
        ("apns priority 7", #"{"message":{"token":"t","apns":{"headers":{"apns-priority":"7"}}}}"#, .apnsRejected),
        ("apns collapse id 65", #"{"message":{"token":"t","apns":{"headers":{"apns-collapse-id":"\#(String(repeating: "c", count: 65))"}}}}"#, .apnsRejected),
        ("apns push type", #"{"message":{"token":"t","apns":{"headers":{"apns-push-type":"banner"}}}}"#, .apnsRejected),
        ("apns expiration", #"{"message":{"token":"t","apns":{"headers":{"apns-expiration":"soon"}}}}"#, .apnsRejected),
        ("data-only at priority 10", #"{"message":{"token":"t","data":{"a":"b"},"apns":{"headers":{"apns-priority":"10"}}}}"#, .dataOnlyPriority),
        ("notification field unknown", #"{"message":{"token":"t","notification":{"subtitle":"x"}}}"#, .unknownField),
    ])
    func invalidArgument(_ c: (String, String, FCMProblem)) throws {
        var h = Harness()
        let r = h.fcm(fcmRequest(c.1))
        #expect(r.status == 400, "\(c.0)")
        #expect(r.code == .invalidArgument, "\(c.0)")
        #expect(r.problem == c.2, "\(c.0): \(r.problem)")
        let e = try #require(parseError(r.body), "\(c.0): \(r.body)")
        #expect(e.code == 400 && e.status == "INVALID_ARGUMENT" && e.errorCode == "INVALID_ARGUMENT", "\(c.0)")
        #expect(h.stats.fcm.byCode["INVALID_ARGUMENT"] == 1)
    }

    @Test func invalidJSONNamesLineAndColumn() throws {
        var h = Harness()
        let r = h.fcm(fcmRequest("{\"message\":\n  {\"token\": tru}}"))
        let e = try #require(parseError(r.body))
        #expect(e.message.contains("at line 2 column 13"), "\(e.message)")
    }

    @Test func applePayloadOverTheLimitIsRefusedAsFCMDoes() throws {
        var h = Harness()
        let ok = h.fcm(fcmRequest(fcmMessage(#""data":{"k":"\#(String(repeating: "x", count: 3900))"}"#)))
        #expect(ok.status == 200)
        let big = h.fcm(fcmRequest(fcmMessage(#""data":{"k":"\#(String(repeating: "x", count: 4100))"}"#)))
        #expect(big.status == 400 && big.code == .invalidArgument && big.problem == .payloadTooBig)
        let e = try #require(parseError(big.body))
        #expect(e.message.contains("too big") && e.message.contains("4096"), "\(e.message)")
        // Far past the builder's buffer too.
        let huge = h.fcm(fcmRequest(fcmMessage(#""data":{"k":"\#(String(repeating: "x", count: 40_000))"}"#)))
        #expect(huge.problem == .payloadTooBig && huge.number > 40_000)
        // VoIP pushes get APNs' 5120 bytes.
        let voip = h.fcm(fcmRequest(fcmMessage(#""apns":{"headers":{"apns-push-type":"voip"}},"data":{"k":"\#(String(repeating: "x", count: 4500))"}"#)))
        #expect(voip.status == 200)
    }

    @Test func authorizationMissingOrMalformedIs401WithoutFcmError() throws {
        var h = Harness()
        for (headers, problem) in [([], FCMProblem.missingCredentials), ([("authorization", "Basic abc")], .invalidCredentials),
                                   ([("authorization", "Bearer ")], .invalidCredentials),
                                   ([("authorization", "Bearer a b")], .invalidCredentials)] as [([(String, String)], FCMProblem)] {
            let r = h.fcm(fcmRequest(fcmSeedMessage, headers: headers))
            #expect(r.status == 401 && r.code == nil && r.problem == problem)
            let e = try #require(parseError(r.body))
            #expect(e.status == "UNAUTHENTICATED" && e.errorCode == nil && e.code == 401)
        }
        #expect(h.fcm(fcmRequest(fcmSeedMessage, headers: [("authorization", "bearer ya29.x-y_z")])).status == 200)
        #expect(h.stats.fcm.byCode["UNAUTHENTICATED"] == 4)
    }

    @Test func wrongPathOrMethodIs404() throws {
        var h = Harness()
        for (method, path) in [("POST", "/v1/projects/pushbench/messages:sendx"), ("POST", "/v1/projects//messages:send"),
                               ("GET", fcmPath), ("POST", "/v1/projects/a b/messages:send"), ("POST", "/v1/other")] {
            let r = h.fcm(fcmRequest(fcmSeedMessage, path: path, method: method))
            #expect(r.status == 404 && r.code == nil, "\(method) \(path)")
            #expect(parseError(r.body)?.status == "NOT_FOUND")
        }
        // The project number works like the id.
        #expect(h.fcm(fcmRequest(fcmSeedMessage, path: "/v1/projects/123456789012/messages:send")).body.contains("projects/123456789012/messages/"))
    }

    // MARK: behaviours mapped onto FCM's codes

    @Test(arguments: [
        ("INVALID_ARGUMENT", 400, "INVALID_ARGUMENT"), ("UNREGISTERED", 404, "NOT_FOUND"),
        ("SENDER_ID_MISMATCH", 403, "PERMISSION_DENIED"), ("QUOTA_EXCEEDED", 429, "RESOURCE_EXHAUSTED"),
        ("UNAVAILABLE", 503, "UNAVAILABLE"), ("INTERNAL", 500, "INTERNAL"),
        ("THIRD_PARTY_AUTH_ERROR", 401, "UNAUTHENTICATED"),
    ])
    func injectedFcmFailure(_ c: (String, Int, String)) throws {
        var h = try Harness(["--fcm-fail", "\(c.0)=1"])
        let r = h.fcm(fcmRequest(fcmSeedMessage))
        #expect(Int(r.status) == c.1)
        let e = try #require(parseError(r.body))
        #expect(e.code == c.1 && e.status == c.2 && e.errorCode == c.0)
        #expect(h.stats.fcm.byCode[c.0] == 1 && h.stats.byStatus[c.1] == 1)
    }

    @Test(arguments: [("InternalServerError", FCMErrorCode.internal), ("ServiceUnavailable", .unavailable),
                      ("TooManyRequests", .quotaExceeded), ("Unregistered", .unregistered),
                      ("DeviceTokenNotForTopic", .senderIdMismatch), ("InvalidProviderToken", .thirdPartyAuthError)])
    func apnsFailuresMapOntoFcmCodes(_ c: (String, FCMErrorCode)) throws {
        var h = try Harness(["--fail", "\(c.0)=1"])
        let r = h.fcm(fcmRequest(fcmSeedMessage))
        #expect(r.code == c.1 && r.status == c.1.status)
    }

    @Test func unregisteredTokensAreTheSameOnesEveryTimeAndAnswer404() throws {
        var h = try Harness(["--unregistered", "0.3"])
        var refused = 0
        for i in 0..<200 {
            let t = "tok\(i)"
            let r = h.fcm(fcmRequest(fcmSeedMessage, token: t))
            #expect((r.status == 404) == h.machine.configuration.isUnregistered(token: t))
            if r.status == 404 {
                refused += 1
                #expect(parseError(r.body)?.errorCode == "UNREGISTERED")
            }
        }
        #expect(refused > 30 && refused < 100)
    }

    @Test func latencyAndGoawayApplyToTheFCMRoute() throws {
        var h = try Harness(["--latency", "2ms", "--goaway-after-streams", "2"])
        let delayed = h.send(fcmRequest(fcmSeedMessage))
        guard case .respondLater(let d) = delayed.decision else { Issue.record("not delayed"); return }
        let first = delayed.written
        #expect(d == 2_000_000 && first.fcm?.status == 200 && first.goaway == nil)
        #expect(h.send(fcmRequest(fcmSeedMessage)).response?.goaway == .shutdown)
    }

    // MARK: topics, conditions, quota, churn

    @Test func topicSendFansOutAtTheConfiguredRate() throws {
        var h = try Harness(["--topic-subscribers", "news=5000", "--fanout-rate", "1000/s"])
        let t0 = h.now
        #expect(h.fcm(fcmRequest(#"{"message":{"topic":"/topics/news","notification":{"title":"x"}}}"#)).status == 200)
        var s = h.fcmStats(at: t0)
        #expect(s.messagesAccepted == 1 && s.topicMessages == 1 && s.deviceDeliveries == 0 && s.fanoutPending == 5000)
        s = h.fcmStats(at: t0 + 2_000_000_000)
        #expect(s.deviceDeliveries == 2000 && s.fanoutPending == 3000)
        s = h.fcmStats(at: t0 + 10_000_000_000)
        #expect(s.deviceDeliveries == 5000 && s.fanoutPending == 0)
        // The default size for other topics; a condition adds (||) and takes the smaller (&&).
        h.now = t0 + 20_000_000_000
        #expect(h.fcm(fcmRequest(#"{"message":{"topic":"other"}}"#)).status == 200)
        #expect(h.fcm(fcmRequest(#"{"message":{"condition":"'news' in topics || ('other' in topics && 'news' in topics)"}}"#)).status == 200)
        s = h.fcmStats(at: h.now)
        #expect(s.fanoutPending == 1000 + 5000 + 1000)
        #expect(s.messagesAccepted == 3 && s.topicMessages == 3)
    }

    @Test func quotaIsARollingWindowAnswered429() throws {
        var h = try Harness(["--fcm-quota", "3/min"])
        for _ in 0..<2 { #expect(h.fcm(fcmRequest(fcmSeedMessage)).status == 200) }
        // A client error counts against the quota too.
        #expect(h.fcm(fcmRequest(fcmMessage(#""data":{"n":1}"#))).status == 400)
        let r = h.fcm(fcmRequest(fcmSeedMessage))
        #expect(r.status == 429 && r.code == .quotaExceeded)
        #expect(parseError(r.body)?.status == "RESOURCE_EXHAUSTED")
        h.now += 30_000_000_000
        #expect(h.fcm(fcmRequest(fcmSeedMessage)).status == 429)
        h.now += 31_000_000_000
        #expect(h.fcm(fcmRequest(fcmSeedMessage)).status == 200)
        #expect(h.stats.fcm.byCode["QUOTA_EXCEEDED"] == 2)
    }

    /// Tokens answered UNREGISTERED at `seconds` after the first request, out of `tokens`.
    func churned(_ flags: [String], at seconds: Double, tokens: Int = 400) throws -> [Int] {
        var h = try Harness(flags)
        let t0 = h.now
        _ = h.fcm(fcmRequest(fcmSeedMessage, token: "warmup"))
        h.now = t0 + UInt64(seconds * 1e9)
        return (0..<tokens).filter { h.fcm(fcmRequest(fcmSeedMessage, token: "tok\($0)")).status == 404 }
    }

    @Test func tokenChurnInvalidatesTheTokenSpaceAtItsRateDeterministically() throws {
        let flags = ["--token-churn", "0.1/s", "--seed", "7"]
        #expect(try churned(flags, at: 0).isEmpty)
        let half = try churned(flags, at: 5)
        #expect(half.count > 120 && half.count < 280, "\(half.count) of 400 after 5 s at 10 %/s")
        #expect(try churned(flags, at: 5) == half)
        #expect(try churned(["--token-churn", "0.1/s", "--seed", "8"], at: 5) != half)
        // Once churned, a token stays churned.
        #expect(Set(half).isSubset(of: Set(try churned(flags, at: 7))))
        #expect(try churned(flags, at: 10).count == 400)
    }

    @Test func tokenChurnIsCountedAndAnswers410WithTimestampOnAPNs() throws {
        var h = try Harness(["--token-churn", "1/s"])
        let t0 = h.now
        #expect(h.status(TestRequest()) == (200, nil))
        h.now = t0 + 2_000_000_000
        let r = h.send(TestRequest()).response!
        #expect(r.status == 410 && r.reason == .unregistered)
        let ts = try #require(r.timestampMillis)
        #expect(ts >= 1_700_000_000_000 && ts <= 1_700_000_001_000)
        _ = h.send(TestRequest())
        #expect(h.fcm(fcmRequest(fcmSeedMessage)).status == 404)
        let s = h.stats
        #expect(s.fcm.churnedTokens == 2 && s.fcm.churnRefusals == 3)
        #expect(s.json.contains(#""churned_tokens":2"#))
    }

    // MARK: configuration

    @Test func fcmFlagsParseAndBadOnesAreNamed() throws {
        let c = try GatewayConfiguration.parse(["--topic-subscribers", "news=100", "--topic-subscribers", "7", "--fanout-rate", "600000/min",
                                                "--fcm-quota", "600000/min", "--token-churn", "1/h", "--capture", "3",
                                                "--fcm-fail", "UNAVAILABLE=1%"]).fcm
        #expect(c.subscribers(ofTopic: "news") == 100 && c.subscribers(ofTopic: "x") == 7)
        #expect(c.fanoutPerSecond == 10_000 && c.quota == FCMQuota(messages: 600_000, windowNanos: 60_000_000_000))
        #expect(abs(c.tokenChurnPerSecond - 1.0 / 3600) < 1e-12 && c.capture == 3)
        #expect(c.failures == [FCMFailureRate(code: .unavailable, fraction: 0.01)])
        for (flags, message) in [(["--fanout-rate", "fast"], "--fanout-rate: 'fast' is not a rate (N/UNIT as in 100/s, 600000/min, 5/10s)"),
                                 (["--fcm-quota", "1.5/min"], "--fcm-quota: '1.5/min' is not a quota N/UNIT with a whole N ≥ 1 (e.g. 600000/min)"),
                                 (["--topic-subscribers", "a b=3"], "--topic-subscribers: 'a b=3' has a topic name outside [a-zA-Z0-9-_.~%]"),
                                 (["--fcm-fail", "NOPE=1"], "--fcm-fail: 'NOPE' is not an FCM error code (e.g. UNAVAILABLE, INTERNAL, UNREGISTERED)"),
                                 (["--token-churn", "2/s"], "--token-churn: '2/s' is more than the whole token space per second (at most 1/s, e.g. 0.01/s)")] {
            #expect(throws: GatewayConfigurationError(message)) { _ = try GatewayConfiguration.parse(flags) }
        }
    }

    @Test func scenarioFileFcmObject() throws {
        func scenario(_ json: String) throws -> String {
            let path = NSTemporaryDirectory() + "pushbench-fcm-\(UUID().uuidString).json"
            try json.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let good = try scenario(#"{"fcm":{"topic_subscribers":{"news":5,"*":9},"fanout_per_second":50,"quota":{"messages":10,"window_seconds":1},"token_churn_per_second":0.5,"capture":2,"failures":{"INTERNAL":0.25},"apns_topic":"com.x"}}"#)
        defer { try? FileManager.default.removeItem(atPath: good) }
        let c = try GatewayConfiguration.parse(["--scenario", good, "--capture", "3"]).fcm
        #expect(c.subscribers(ofTopic: "news") == 5 && c.subscribers(ofTopic: "other") == 9 && c.fanoutPerSecond == 50)
        #expect(c.quota == FCMQuota(messages: 10, windowNanos: 1_000_000_000) && c.tokenChurnPerSecond == 0.5)
        #expect(c.capture == 3 && c.failures == [FCMFailureRate(code: .internal, fraction: 0.25)] && c.appleTopic == "com.x")
        let bad = try scenario(#"{"fcm":{"failures":{"NOPE":0.1}}}"#)
        defer { try? FileManager.default.removeItem(atPath: bad) }
        #expect(throws: GatewayConfigurationError("scenario \(bad): field 'fcm.failures.NOPE': not an FCM error code (e.g. UNAVAILABLE)")) {
            _ = try GatewayConfiguration.parse(["--scenario", bad])
        }
    }

    // MARK: allocation

    @Test(arguments: [[String](), ["--unregistered", "0.1", "--fcm-quota", "100000000/min", "--token-churn", "0.000001/s"],
                      ["--topic-subscribers", "100"]])
    func fcmDecisionAllocatesNothing(_ flags: [String]) throws {
        var h = try Harness(flags)
        var best = UInt64.max
        // The last body has escapes (unescaped on comparison, still no allocation).
        for body in [fcmSeedMessage, #"{"message":{"topic":"news","notification":{"title":"x"},"data":{"a":"b"}}}"#,
                     fcmMessage(#""data":{"n":1}"#),
                     fcmMessage(#""notification":{"title":"caf\u00e9 \"x\"","body":"a\nb"},"d\u0061ta":{"k":"v"}"#)] {
            let request = fcmRequest(body)
            if flags.isEmpty, body.contains(#"\u0061"#) { #expect(h.fcm(request).status == 200) }
            best = UInt64.max
            request.with { req in
                for round in 0..<5 {
                    pb_alloc_reset()
                    for _ in 0..<500 { _ = h.machine.answer(req, connection: &h.connection, now: h.now) }
                    if round > 0 { best = min(best, pb_alloc_count()) }
                }
            }
            #expect(best == 0, "\(flags) \(body): \(best) allocations per 500 requests")
        }
    }
}
