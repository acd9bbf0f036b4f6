import CAllocCounter
import Foundation
import Testing
@testable import MockGateway

/// Writes `text` to a temporary file for the test's lifetime (removed by the returned closure).
func temporaryFile(_ name: String, _ text: String) throws -> (path: String, remove: () -> Void) {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pb-\(getpid())-\(name)").path
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    return (path, { try? FileManager.default.removeItem(atPath: path) })
}

/// Device tokens that belong to topics (`--token-topics`, `--not-for-topic`) and topics the gateway refuses
/// (`--disallowed-topics`): DeviceTokenNotForTopic with the token checks, TopicDisallowed with the topic checks.
@Suite struct TokenTopicsTests {
    static let a = token(1), b = token(2), c = token(3)

    func request(_ tok: String, topic: String?, body: String? = nil, headers: [(String, String)] = []) -> TestRequest {
        TestRequest(path: "/3/device/" + tok, headers: (topic.map { [("apns-topic", $0)] } ?? []) + headers, body: body)
    }

    @Test func aListedTokenSentWithAnotherTopicIsNotForTopic() throws {
        let file = try temporaryFile("topics.txt", """
            # token topics
            \(Self.a) com.example.app
            \(Self.b.uppercased())\tcom.example.app,com.example.app.voip
            \(Self.a) com.example.other
            """)
        defer { file.remove() }
        var h = try Harness(["--token-topics", file.path, "--topic-optional"])
        #expect(h.machine.configuration.tokenTopics?.tokenCount == 2)
        #expect(h.status(request(Self.a, topic: "com.example.app")) == (200, nil))
        #expect(h.status(request(Self.a, topic: "com.example.other")) == (200, nil), "a token listed twice has both topics")
        #expect(h.status(request(Self.a, topic: "com.example.app.voip")) == (400, "DeviceTokenNotForTopic"))
        #expect(h.status(request(Self.b, topic: "com.example.app.voip")) == (200, nil))
        #expect(h.status(request(Self.b.uppercased(), topic: "com.example.app")) == (200, nil), "hex in either case")
        #expect(h.status(request(Self.b, topic: "com.example")) == (400, "DeviceTokenNotForTopic"))
        #expect(h.status(request(Self.c, topic: "com.example.anything")) == (200, nil), "a token not listed is not checked")
        #expect(h.status(request(Self.a, topic: nil)) == (200, nil), "no topic to compare (single-topic certificate)")
        #expect(h.machine.configuration.isNotForTopic(token: Self.a, topic: "com.example.app.voip"))
        #expect(!h.machine.configuration.isNotForTopic(token: Self.a, topic: "com.example.app"))
    }

    @Test func aStableFractionOfTokensIsNotForTopicBySeed() throws {
        let n = 4000
        func picked(_ flags: [String]) throws -> Set<Int> {
            var h = try Harness(flags)
            return Set((0..<n).filter { h.status(request(token($0), topic: "com.example.app")).1 == "DeviceTokenNotForTopic" })
        }
        let first = try picked(["--not-for-topic", "0.25"])
        #expect(abs(Double(first.count) / Double(n) - 0.25) < 0.04, "\(first.count) of \(n)")
        #expect(try picked(["--not-for-topic", "0.25"]) == first, "the same tokens every start")
        let other = try picked(["--not-for-topic", "0.25", "--seed", "2"])
        #expect(other != first && abs(Double(other.count) / Double(n) - 0.25) < 0.04)
        let config = try GatewayConfiguration.parse(["--not-for-topic", "0.25"])
        #expect((0..<n).filter { config.isNotForTopic(token: token($0), topic: "t") }.count == first.count)
        #expect(first.allSatisfy { config.isNotForTopic(token: token($0), topic: nil) })
        // A token the file lists is decided by the file alone.
        let file = try temporaryFile("listed.txt", "\(token(first.first!)) com.example.app\n")
        defer { file.remove() }
        var h = try Harness(["--not-for-topic", "0.25", "--token-topics", file.path])
        #expect(h.status(request(token(first.first!), topic: "com.example.app")) == (200, nil))
    }

    @Test func disallowedTopicsAreRefused() throws {
        var h = try Harness(["--disallowed-topics", "com.example.blocked,com.example.blocked.voip"])
        #expect(h.status(request(Self.a, topic: "com.example.blocked")) == (400, "TopicDisallowed"))
        #expect(h.status(request(Self.a, topic: "com.example.blocked.voip")) == (400, "TopicDisallowed"))
        #expect(h.status(request(Self.a, topic: "com.example.blocke")) == (200, nil))
        #expect(h.status(request(Self.a, topic: "com.example.app")) == (200, nil))
    }

    /// Requests that fail several checks get the first in Pushy's order: topic checks before the
    /// collapse id, priority and token; token checks (unregistered first) before the payload.
    @Test func theOrderOfTheChecks() throws {
        let unregistered = try GatewayConfiguration.parse(["--unregistered", "0.5"])
        let mine = token((1..<200).first { !unregistered.isUnregistered(token: token($0)) }!)
        let gone = token((1..<200).first { unregistered.isUnregistered(token: token($0)) }!)
        let file = try temporaryFile("order.txt", "\(mine) com.example.app\n\(gone) com.example.app\n")
        defer { file.remove() }
        var h = try Harness(["--token-topics", file.path, "--disallowed-topics", "com.example.blocked", "--unregistered", "0.5"])
        let cases: [(TestRequest, String)] = [
            (request(mine, topic: "com.example.other", body: ""), "DeviceTokenNotForTopic"),
            (request(mine, topic: "com.example.other", body: "[1]"), "DeviceTokenNotForTopic"),
            (request(mine, topic: "com.example.other", headers: [("apns-priority", "7")]), "BadPriority"),
            (request(mine, topic: "com.example.blocked"), "TopicDisallowed"),
            (request("xyz", topic: "com.example.blocked"), "TopicDisallowed"),
            (request(mine, topic: "com.example.blocked", headers: [("apns-collapse-id", String(repeating: "c", count: 65))]), "TopicDisallowed"),
            (request("xyz", topic: "com.example.other"), "BadDeviceToken"),
            (request(gone, topic: "com.example.other", body: ""), "Unregistered"),
        ]
        for (r, reason) in cases {
            #expect(h.status(r).1 == reason, "\(r.path) \(r.headers)")
        }
    }

    @Test func badTokenTopicFilesNameTheFileAndLine() throws {
        let cases: [(String, String)] = [
            ("\(Self.a) com.example.app\n\(Self.b)\n", ":2: token has no topic"),
            ("\(Self.a) com.example.app,\n", ":1: empty topic after the last comma"),
            ("\(Self.a) a,,b\n", ":1: empty topic at column 68"),
            ("\(Self.a) a b\n", ":1: a space inside the topics at column 67"),
            ("zz com.example.app\n", ":1: token has a non-hex character 'z' at column 1"),
            ("# nothing\n", ": no tokens"),
        ]
        for (k, (text, message)) in cases.enumerated() {
            let file = try temporaryFile("bad-\(k).txt", text)
            defer { file.remove() }
            let e = #expect(throws: GatewayConfigurationError.self) { try GatewayConfiguration.parse(["--token-topics", file.path]) }
            #expect(e?.message.hasPrefix("--token-topics: \(file.path)\(message)") == true, "\(String(describing: e?.message))")
        }
        let e = #expect(throws: GatewayConfigurationError.self) { try GatewayConfiguration.parse(["--token-topics", "/nonexistent/t.txt"]) }
        #expect(e?.message == "--token-topics: /nonexistent/t.txt: no such file")
        for (list, message) in [("a,,b", "has an empty topic"), ("a b", "'a b' is not a topic")] {
            let e = #expect(throws: GatewayConfigurationError.self) { try GatewayConfiguration.parse(["--disallowed-topics", list]) }
            #expect(e?.message.contains(message) == true, "\(String(describing: e?.message))")
        }
    }

    @Test func scenarioKeys() throws {
        let tokens = try temporaryFile("scenario-tokens.txt", "\(Self.a) com.example.app\n")
        defer { tokens.remove() }
        let scenario = try temporaryFile("scenario.json", """
            {"token_topics": "\(tokens.path)", "not_for_topic_fraction": 0.1, "disallowed_topics": ["x.y", "z"]}
            """)
        defer { scenario.remove() }
        let c = try GatewayConfiguration.parse(["--scenario", scenario.path])
        #expect(c.tokenTopics?.tokenCount == 1 && c.notForTopicFraction == 0.1 && c.disallowedTopics == ["x.y", "z"])
        let bad = try temporaryFile("scenario-bad.json", #"{"disallowed_topics": "x.y"}"#)
        defer { bad.remove() }
        let e = #expect(throws: GatewayConfigurationError.self) { try GatewayConfiguration.parse(["--scenario", bad.path]) }
        #expect(e?.message == "scenario \(bad.path): field 'disallowed_topics': must be an array of topic strings")
    }

    @Test func theChecksAllocateNothing() throws {
        let lines = (0..<500).map { "\(token($0)) com.example.app,com.example.app.voip" }.joined(separator: "\n")
        let file = try temporaryFile("alloc.txt", lines)
        defer { file.remove() }
        var h = try Harness(["--token-topics", file.path, "--not-for-topic", "0.3", "--disallowed-topics", "a.b,c.d"])
        let requests = [request(token(7), topic: "com.example.app"), request(token(7), topic: "com.example.other"),
                        request(token(900), topic: "com.example.app"), request(token(7), topic: "c.d")]
        var best = UInt64.max
        // The requests are built once, outside the counted rounds.
        requests[0].with { r0 in requests[1].with { r1 in requests[2].with { r2 in requests[3].with { r3 in
            for round in 0..<5 {
                pb_alloc_reset()
                for _ in 0..<250 {
                    _ = h.machine.answer(r0, connection: &h.connection, now: h.now)
                    _ = h.machine.answer(r1, connection: &h.connection, now: h.now)
                    _ = h.machine.answer(r2, connection: &h.connection, now: h.now)
                    _ = h.machine.answer(r3, connection: &h.connection, now: h.now)
                }
                if round > 0 { best = min(best, pb_alloc_count()) }
            }
        } } } }
        #expect(best == 0, "\(best) allocations per 1000 requests")
        #expect(h.stats.byReason["DeviceTokenNotForTopic", default: 0] > 0 && h.stats.byReason["TopicDisallowed", default: 0] > 0)
    }
}

/// Generated identifiers are random per start, as the real services' are, and reproducible with `--seed`.
@Suite struct GeneratedIdentifierTests {
    func firstIDs(_ flags: [String]) throws -> (apns: [String], fcm: String) {
        let config = try GatewayConfiguration.parse(flags)
        let machine = GatewayStateMachine(configuration: config, loopIndex: 0, counters: GatewayCounters(),
                                          clock: GatewayClock(wallMillis: 1_700_000_000_000, monotonicNanos: 0))
        var connection = machine.connectionOpened(now: 1)
        var apns: [String] = []
        for _ in 0..<3 {
            TestRequest().with { req in
                let a = machine.answer(req, connection: &connection, now: 1)
                if case .respond = a.decision { apns.append(a.written.apnsID.description) }
            }
        }
        var fcm = ""
        fcmRequest(fcmSeedMessage).with { req in
            let a = machine.answer(req, connection: &connection, now: 1)
            if case .respond = a.decision { fcm = a.written.fcm?.body ?? "" }
        }
        return (apns, fcm)
    }

    @Test func freshGatewaysDifferAndSeededOnesMatch() throws {
        let a = try firstIDs([]), b = try firstIDs([])
        #expect(a.apns.count == 3 && Set(a.apns).count == 3)
        #expect(Set(a.apns).isDisjoint(with: b.apns))
        #expect(a.fcm.hasPrefix(#"{"name":"projects/pushbench/messages/0:"#) && a.fcm != b.fcm)
        let s = try firstIDs(["--seed", "5"]), t = try firstIDs(["--seed", "5"]), u = try firstIDs(["--seed", "6"])
        #expect(s.apns == t.apns && s.fcm == t.fcm)
        #expect(s.apns != u.apns && s.fcm != u.fcm)
        // A behaviour's draws do not depend on the id seed: the same --fail answers either way.
        func statuses(idSeed: UInt64) throws -> [UInt16] {
            var c = try GatewayConfiguration.parse(["--fail", "InternalServerError=0.5"])
            c.idSeed = idSeed
            var h = Harness(c)
            return (0..<50).map { _ in h.send(TestRequest()).response!.status }
        }
        let one = try statuses(idSeed: 1)
        #expect(Set(one) == [200, 500])
        #expect(try statuses(idSeed: 99) == one)
    }
}
