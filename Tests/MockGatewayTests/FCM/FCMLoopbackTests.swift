import Foundation
import PushVocabulary
import Testing
@testable import MockGateway

/// One curl request (HTTP/2 prior knowledge) against a gateway on loopback: (status, body).
func curl(_ port: Int, path: String = fcmPath, method: String = "POST", body: String? = nil,
          headers: [String] = ["authorization: Bearer test"]) throws -> (Int, String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    var args = ["-s", "--http2-prior-knowledge", "--max-time", "30", "-X", method, "-w", "\n%{http_code}"]
    for h in headers { args += ["-H", h] }
    if body != nil { args += ["-H", "content-type: application/json", "--data-binary", "@-"] }
    args.append("http://127.0.0.1:\(port)\(path)")
    p.arguments = args
    let input = Pipe(), output = Pipe()
    p.standardInput = input
    p.standardOutput = output
    try p.run()
    if let body { input.fileHandleForWriting.write(Data(body.utf8)) }
    try input.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    guard let nl = text.lastIndex(of: "\n"), let status = Int(text[text.index(after: nl)...]) else {
        throw CurlError(output: text)
    }
    return (status, String(text[..<nl]))
}

struct CurlError: Error { var output: String }

@Suite(.serialized) struct FCMLoopbackTests {
    func withGateway(_ flags: [String], _ body: (EmbeddedGateway) throws -> Void) throws {
        let gateway = try EmbeddedGateway.start(try GatewayConfiguration.parse(flags))
        defer { gateway.stop() }
        try body(gateway)
    }

    @Test func seedsExampleOverHTTP2AndTheCaptureInStats() throws {
        try withGateway(["--capture", "2"]) { g in
            let (status, body) = try curl(g.port, body: fcmSeedMessage.replacingOccurrences(of: "TOKEN", with: "abc:123"))
            #expect(status == 200)
            let name = try #require((try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["name"] as? String)
            #expect(name.hasPrefix("projects/pushbench/messages/0:"))
            let (s, stats) = try curl(g.port, path: "/stats", method: "GET", headers: [])
            #expect(s == 200)
            let o = try #require(try JSONSerialization.jsonObject(with: Data(stats.utf8)) as? [String: Any])
            let fcm = try #require(o["fcm"] as? [String: Any])
            #expect(fcm["messages_accepted"] as? Int == 1 && fcm["device_deliveries"] as? Int == 1)
            let captured = try #require(fcm["captured"] as? [[String: Any]])
            #expect(captured.count == 1)
            let payload = try #require(captured.first?["payload"] as? [String: Any])
            #expect(payload["gcm.message_id"] as? String == String(name.dropFirst("projects/pushbench/messages/".count)))
            #expect((captured.first?["headers"] as? [String: String])?["apns-priority"] == "10")
            #expect(g.stats().fcm.captured.count == 1)
        }
    }

    @Test func everyFcmErrorCodeOverHTTP2() throws {
        for code in FCMErrorCode.allCases {
            try withGateway(["--fcm-fail", "\(code.rawValue)=1"]) { g in
                let (status, body) = try curl(g.port, body: fcmMessage(""))
                #expect(status == Int(code.status), "\(code.rawValue)")
                let e = try #require(parseError(body), "\(code.rawValue): \(body)")
                #expect(e.code == Int(code.status) && e.status == code.rpcStatus && e.errorCode == code.rawValue)
                #expect(g.stats().fcm.byCode[code.rawValue] == 1)
            }
        }
    }

    @Test func validationErrorsAuthAndPathOverHTTP2() throws {
        try withGateway([]) { g in
            var (status, body) = try curl(g.port, body: fcmSeedMessage, headers: [])
            #expect(status == 401 && parseError(body)?.status == "UNAUTHENTICATED" && parseError(body)?.errorCode == nil)
            (status, body) = try curl(g.port, body: fcmSeedMessage, headers: ["authorization: Basic x"])
            #expect(status == 401 && parseError(body)?.errorCode == nil)
            (status, body) = try curl(g.port, path: "/v1/projects/p/messages:list", body: fcmSeedMessage)
            #expect(status == 404 && parseError(body)?.status == "NOT_FOUND")
            (status, body) = try curl(g.port, body: #"{"message":{"token":"a","topic":"b"}}"#)
            #expect(status == 400 && parseError(body)?.errorCode == "INVALID_ARGUMENT")
            (status, body) = try curl(g.port, body: fcmMessage(#""data":{"k":"\#(String(repeating: "y", count: 5000))"}"#))
            #expect(status == 400 && (parseError(body)?.message.contains("too big") ?? false), "\(body)")
            (status, body) = try curl(g.port, body: #"{"validate_only":true,"message":{"token":"a"}}"#)
            #expect(status == 200 && body.contains("fake_message_id"))
            // The APNs route still works beside it.
            (status, body) = try curl(g.port, path: "/3/device/" + String(repeating: "ab", count: 32), body: #"{"aps":{}}"#,
                                      headers: ["apns-topic: com.example"])
            #expect(status == 200)
            let s = g.stats()
            #expect(s.fcm.requests == 6 && s.requests == 7)
            #expect(s.fcm.byCode == ["UNAUTHENTICATED": 2, "NOT_FOUND": 1, "INVALID_ARGUMENT": 2])
        }
    }

    @Test func topicFanOutCountInStats() throws {
        try withGateway(["--topic-subscribers", "news=300", "--fanout-rate", "1000000/s"]) { g in
            let (status, _) = try curl(g.port, body: #"{"message":{"topic":"news","notification":{"title":"goal"}}}"#)
            #expect(status == 200)
            var s = g.stats().fcm
            let deadline = Date().addingTimeInterval(20)
            while s.deviceDeliveries < 300, Date() < deadline {
                usleep(10_000)
                s = g.stats().fcm
            }
            #expect(s.messagesAccepted == 1 && s.topicMessages == 1 && s.deviceDeliveries == 300 && s.fanoutPending == 0)
            let (_, json) = try curl(g.port, path: "/stats", method: "GET", headers: [])
            #expect(json.contains(#""device_deliveries":300"#) && json.contains(#""messages_accepted":1"#))
        }
    }

    @Test func delayedAnswersKeepTheirBodies() throws {
        try withGateway(["--latency", "20ms", "--fcm-fail", "UNAVAILABLE=0.5", "--seed", "3"]) { g in
            var ok = 0, unavailable = 0
            for i in 0..<12 {
                let (status, body) = try curl(g.port, body: fcmMessage("", token: "t\(i)"))
                if status == 200, body.hasPrefix(#"{"name":"projects/pushbench/messages/0:"#) { ok += 1 }
                if status == 503, parseError(body)?.errorCode == "UNAVAILABLE" { unavailable += 1 }
            }
            #expect(ok + unavailable == 12 && ok > 0 && unavailable > 0)
        }
    }

    @Test func quotaExhaustionOverHTTP2() throws {
        try withGateway(["--fcm-quota", "2/min"]) { g in
            #expect(try curl(g.port, body: fcmMessage("")).0 == 200)
            #expect(try curl(g.port, body: fcmMessage("")).0 == 200)
            let (status, body) = try curl(g.port, body: fcmMessage(""))
            #expect(status == 429 && parseError(body)?.errorCode == "QUOTA_EXCEEDED")
        }
    }

    @Test func tokenChurnOverHTTP2OnBothRoutes() throws {
        try withGateway(["--token-churn", "1/s"]) { g in
            #expect(try curl(g.port, body: fcmMessage("", token: "t1")).0 == 200)
            usleep(1_200_000)
            let (status, body) = try curl(g.port, body: fcmMessage("", token: "t2"))
            #expect(status == 404 && parseError(body)?.errorCode == "UNREGISTERED")
            let (apns, apnsBody) = try curl(g.port, path: "/3/device/" + String(repeating: "cd", count: 32), body: #"{"aps":{}}"#,
                                            headers: ["apns-topic: com.example"])
            #expect(apns == 410 && apnsBody.contains(#""reason":"Unregistered","timestamp":"#))
            #expect(g.stats().fcm.churnedTokens == 2)
        }
    }
}
