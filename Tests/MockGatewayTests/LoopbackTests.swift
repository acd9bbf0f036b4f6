import Foundation
import Testing
@testable import MockGateway

/// The gateway over real sockets: the python h2 probe sees every frame, curl and h2load act as clients.
@Suite(.serialized) struct LoopbackTests {
    /// apns-id is new on every response: only the first one on a connection goes into the HPACK dynamic
    /// table (so later ones refer to its name by index), and every later value is a never-indexed literal.
    @Test func apnsIDNameIsIndexedOnceAndLaterValuesAreLiterals() throws {
        try withGateway { gateway in
            let r = try probe(port: gateway.port, [probeRequest(), probeRequest(), probeRequest()], sequential: true)
            #expect(r.streams.count == 3 && r.streams.allSatisfy { $0.status == 200 })
            #expect(!r.streams[0].neverIndexed.contains("apns-id"))
            #expect(r.streams[1].neverIndexed == ["apns-id"] && r.streams[2].neverIndexed == ["apns-id"])
            #expect(Set(r.streams.compactMap { $0.header("apns-id") }).count == 3, "each response has its own id")
        }
    }

    @Test func successIsOneHeadersFrameAndErrorsAreHeadersPlusOneDataFrame() throws {
        try withGateway { gateway in
            #expect(gateway.port > 0 && gateway.host == "127.0.0.1")
            let id = "8E4F5A2B-1C3D-4E5F-8A9B-0C1D2E3F4A5B"
            let r = try probe(port: gateway.port, [
                probeRequest(),
                probeRequest(headers: [("apns-topic", "t"), ("apns-id", id)]),
                probeRequest(authority: false, headers: [("host", "api.push.apple.com"), ("apns-topic", "t")]),
                probeRequest(headers: []),
                probeRequest(path: "/3/device/xyz"),
                probeRequest(path: "/nope"),
                probeRequest(method: "PUT"),
                probeRequest(body: ""),
                probeRequest(body: String(repeating: " ", count: 4000) + "{}" + String(repeating: " ", count: 95)),
                probeRequest(body: "not json"),
                probeRequest(headers: [("apns-topic", "t"), ("apns-priority", "10"), ("apns-priority", "5")]),
            ])
            #expect(r.streams.count == 11 && r.pending == 0 && !r.closed && r.goaway == nil)
            let expected: [(Int, String?)] = [(200, nil), (200, nil), (200, nil), (400, "MissingTopic"), (400, "BadDeviceToken"),
                                              (404, "BadPath"), (405, "MethodNotAllowed"), (400, "PayloadEmpty"),
                                              (413, "PayloadTooLarge"), (400, "PayloadEmpty"), (400, "DuplicateHeaders")]
            for (s, e) in zip(r.streams, expected) {
                #expect(s.status == e.0)
                #expect(s.reset == nil, "never RST_STREAM for an application error")
                #expect(s.headerCount("apns-id") == 1)
                #expect(s.header("apns-id")?.count == 36)
                if let reason = e.1 {
                    #expect(!s.endedOnHeaders && s.dataFrames == 1, "\(reason): one DATA frame ends the stream")
                    #expect(s.body == #"{"reason":"\#(reason)"}"#)
                    #expect(s.header("content-type") == "application/json")
                } else {
                    #expect(s.endedOnHeaders && s.dataFrames == 0 && s.body.isEmpty)
                }
            }
            #expect(r.streams[1].header("apns-id") == id)
            let ids = Set(r.streams.compactMap { $0.header("apns-id") })
            #expect(ids.count == 11)
            let s = gateway.stats()
            #expect(s.requests == 11)
            #expect(s.byStatus == [200: 3, 400: 5, 404: 1, 405: 1, 413: 1])
            #expect(s.byReason == ["MissingTopic": 1, "BadDeviceToken": 1, "BadPath": 1, "MethodNotAllowed": 1,
                                   "PayloadEmpty": 2, "PayloadTooLarge": 1, "DuplicateHeaders": 1])
            #expect(s.connectionsTotal == 1)
        }
    }

    /// Bodies up to --max-body (64 KiB) are read and answered 413; a larger one is reset (CANCEL) as soon
    /// as it passes the bound, before the gateway buffers more of it.
    @Test func bodiesUpToMaxBodyAre413AndLargerOnesReset() throws {
        try withGateway { gateway in
            var request = probeRequest()
            request["body_size"] = 60 << 10
            var r = try probe(port: gateway.port, [request], timeout: 60)
            var s = try #require(r.streams.first)
            #expect(s.reset == nil && s.status == 413 && s.body == #"{"reason":"PayloadTooLarge"}"#)
            request["body_size"] = 2 << 20
            r = try probe(port: gateway.port, [request], timeout: 60)
            s = try #require(r.streams.first)
            #expect(s.reset == 8 && s.status == nil)
            #expect(gateway.stats().limits == ["request_body_size": 1])
        }
    }

    @Test func unregisteredAnswers410WithMillisecondTimestamp() throws {
        try withGateway(["--unregistered", "1"]) { gateway in
            let r = try probe(port: gateway.port, [probeRequest()])
            let s = try #require(r.streams.first)
            #expect(s.status == 410 && s.dataFrames == 1 && !s.endedOnHeaders)
            let o = try JSONSerialization.jsonObject(with: Data(s.body.utf8)) as? [String: Any]
            #expect(o?["reason"] as? String == "Unregistered")
            let ts = try #require(o?["timestamp"] as? Int64)
            let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
            #expect(ts <= nowMs && ts > nowMs - 31 * 86_400_000, "timestamp \(ts) is milliseconds in the last 30 days")
        }
    }

    @Test func statsEndpointMatchesTheEmbeddedAPI() throws {
        try withGateway { gateway in
            _ = try probe(port: gateway.port, [probeRequest(), probeRequest(headers: [])])
            let r = try probe(port: gateway.port, [probeRequest(method: "GET", path: "/stats", body: "")])
            let s = try #require(r.streams.first)
            #expect(s.status == 200 && s.header("content-type") == "application/json")
            let o = try #require(try JSONSerialization.jsonObject(with: Data(s.body.utf8)) as? [String: Any])
            #expect(o["requests"] as? Int == 2)
            #expect((o["by_status"] as? [String: Int]) == ["200": 1, "400": 1])
            #expect((o["by_reason"] as? [String: Int]) == ["MissingTopic": 1])
            #expect(o["bytes_in"] as? Int == 44)
            #expect(o["connections_open"] as? Int == 1 && o["connections_total"] as? Int == 2)
            #expect(gateway.statsJSON().contains(#""requests":2,"#))
        }
    }

    @Test func goawayAfterNStreamsCarriesTheJSONReason() throws {
        try withGateway(["--goaway-after-streams", "2", "--goaway-reason", "IdleTimeout"]) { gateway in
            let r = try probe(port: gateway.port, [probeRequest(), probeRequest()], sequential: true, linger: 1)
            #expect(r.streams.map(\.status) == [200, 200])
            let g = try #require(r.goaway)
            #expect(g.errorCode == 0 && g.lastStreamID == 3 && g.debug == #"{"reason":"IdleTimeout"}"#)
            #expect(gateway.stats().goaways == 1)
        }
    }

    @Test func timedGoaway() throws {
        try withGateway(["--goaway-after", "200ms"]) { gateway in
            let r = try probe(port: gateway.port, [probeRequest()], linger: 3)
            #expect(r.streams.first?.status == 200)
            #expect(r.goaway?.debug == #"{"reason":"Shutdown"}"#, "\(r.error ?? "")")
        }
    }

    @Test func maxConcurrentStreamsDropsToOneAfterARejection() throws {
        try withGateway(["--streams-drop-on-error", "--max-streams", "300"]) { gateway in
            let r = try probe(port: gateway.port, [probeRequest(), probeRequest(headers: []), probeRequest()], sequential: true)
            #expect(r.streams.map(\.status) == [200, 400, 200])
            let maxStreams = r.settings.filter { $0.0 == 3 }.map(\.1)
            #expect(maxStreams == [300, 1, 300])
        }
    }

    @Test func abruptDropClosesWithoutGoaway() throws {
        try withGateway(["--drop-after-streams", "2"]) { gateway in
            let r = try probe(port: gateway.port, [probeRequest(), probeRequest()], sequential: true, linger: 1)
            #expect(r.streams.first?.status == 200)
            #expect(r.streams.count == 2 && r.streams[1].status == nil)
            #expect(r.closed && r.goaway == nil)
            #expect(gateway.stats().drops == 1)
        }
    }

    @Test func latencyDelaysResponsesAndStopFinishesThemBeforeGoaway() throws {
        let gateway = try EmbeddedGateway.start(try GatewayConfiguration.parse(["--latency", "1500ms"]))
        let spec: [String: Any] = ["requests": (0..<20).map { _ in probeRequest() }, "linger": 2, "timeout": 30]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: spec), as: UTF8.self)
        let child = try startProcess(which("python3") ?? "/usr/bin/python3", [probeScript, String(gateway.port), json])
        // Wait until the 20 requests are in, then stop while every one of them is still waiting.
        let deadline = Date().addingTimeInterval(20)
        while gateway.stats().requests < 20 && Date() < deadline { usleep(10_000) }
        #expect(gateway.stats().requests == 20)
        let final = gateway.stop()
        #expect(final.byStatus[200] == 20)
        #expect(final.connectionsOpen == 0)
        let out = child.finish(timeout: 40)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any])
        let streams = try #require(o["streams"] as? [String: [String: Any]])
        #expect(streams.count == 20)
        #expect(streams.values.allSatisfy { $0["status"] as? Int == 200 }, "every stream in flight is answered")
        let goaway = o["goaway"] as? [String: Any]
        #expect(goaway?["error_code"] as? Int == 0)
        #expect(gateway.stop() == final) // idempotent
    }

    @Test func curlWithPriorKnowledge() throws {
        guard let curl = which("curl") else { Issue.record("curl is missing (scripts/setup)"); return }
        try withGateway { gateway in
            let url = "http://127.0.0.1:\(gateway.port)/3/device/\(validToken)"
            let ok = try runProcess(curl, ["-s", "-i", "--http2-prior-knowledge", "-H", "apns-topic: com.example.app",
                                           "-H", "apns-push-type: alert", "-d", #"{"aps":{"alert":"hi"}}"#, url])
            #expect(ok.status == 0 && ok.stdout.hasPrefix("HTTP/2 200"))
            #expect(ok.stdout.contains("apns-id: "))
            let bad = try runProcess(curl, ["-s", "--http2-prior-knowledge", "-d", #"{"aps":{}}"#, url])
            #expect(bad.stdout == #"{"reason":"MissingTopic"}"#)
            let stats = try runProcess(curl, ["-s", "--http2-prior-knowledge", "http://127.0.0.1:\(gateway.port)/stats"])
            // The same numbers, except that curl's own connection was still open while it asked; the
            // gateway's loop sees that connection close a moment after curl exits.
            var now = gateway.statsJSON()
            for _ in 0..<200 where now.contains(#""connections_open":1"#) {
                usleep(10_000)
                now = gateway.statsJSON()
            }
            #expect(stats.stdout.replacingOccurrences(of: #""connections_open":1"#, with: #""connections_open":0"#) == now)
        }
    }

    @Test(arguments: [1, 2])
    func h2loadRunHasNoFailures(threads: Int) throws {
        guard let h2load = which("h2load") else { Issue.record("h2load is missing (scripts/setup)"); return }
        try withGateway(["--threads", String(threads)]) { gateway in
            let payload = NSTemporaryDirectory() + "pushbench-gw-payload-\(UUID().uuidString).json"
            try #"{"aps":{"alert":{"title":"Portugal vs. Denmark","body":"great match!"},"badge":1},"customKey":"customValue"}"#
                .write(toFile: payload, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: payload) }
            let r = try runProcess(h2load, ["-n", "4000", "-c", "8", "-m", "50", "-t", "1", "-d", payload,
                                            "-H", "apns-topic: com.example.app",
                                            "http://127.0.0.1:\(gateway.port)/3/device/\(validToken)"], timeout: 120)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.contains("4000 succeeded, 0 failed, 0 errored"), "\(r.stdout)")
            let s = gateway.stats()
            #expect(s.requests == 4000 && s.byStatus == [200: 4000])
            #expect(s.bytesIn == 4000 * 108)
            #expect(s.connectionsTotal == 8)
        }
    }

    @Test func busyPortIsAClearStartError() throws {
        try withGateway { gateway in
            var config = GatewayConfiguration()
            config.port = gateway.port
            #expect {
                _ = try EmbeddedGateway.start(config, port: gateway.port)
            } throws: { error in
                "\(error)".hasPrefix("listen 127.0.0.1:\(gateway.port):")
            }
        }
    }
}
