import Foundation
import Testing
@testable import MockGateway
import PushPayload
@testable import LoadGenerator

/// A token file whose lines name topics (`token topic[,topic...]`): each request carries its token's first
/// topic as `apns-topic`, or `--topic` for a line without one. The embedded gateway, given the same kind of
/// file with `--token-topics`, says whether each arrived with its own topic.
@Suite(.serialized) struct TokenTopicRunTests {
    static func token(_ i: Int) -> String { String(repeating: "0", count: 62) + String(format: "%02x", i) }

    /// 21 tokens: 0-19 split between two apps, 20 with no topic on its line. The gateway lists 0-19; the run's
    /// file gives token 3 the other app's topic.
    static func files() -> (gateway: String, run: String) {
        let gateway = (0..<20).map { "\(token($0)) \($0 % 2 == 0 ? "com.example.a" : "com.example.b,com.example.b.voip")" }
        var run = gateway
        run[3] = "\(token(3)) com.example.a"
        run.append(token(20))
        return (gateway.joined(separator: "\n"), run.joined(separator: "\n"))
    }

    @Test(arguments: [true, false])
    func eachRequestCarriesItsTokensTopic(sendsApnsID: Bool) throws {
        let (gatewayLines, runLines) = Self.files()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pb-topics-\(getpid()).txt").path
        try Data(gatewayLines.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let gateway = try EmbeddedGateway.start(GatewayConfiguration.parse(["--token-topics", path]))
        defer { gateway.stop() }
        let tokens = try DeviceTokens(bytes: Array(runLines.utf8), file: "run.txt")
        #expect(tokens.hasTopics && tokens.count == 21)
        var c = LoadConfiguration(host: gateway.host, port: gateway.port, template: .defaultAPNs(), tokens: tokens)
        c.topic = "com.example.c"
        c.sendsApnsID = sendsApnsID
        c.rate = 840
        c.durationNs = 250_000_000
        c.connections = 1
        c.streams = 10
        let r = try LoadRun.run(c)
        let stats = gateway.stop()
        // 210 requests, 10 per token, in token order.
        #expect(r.measured.sent == 210 && r.measured.completed == 210)
        #expect(stats.byReason == ["DeviceTokenNotForTopic": 10], "\(stats.byReason)")
        #expect(stats.byStatus == [200: 200, 400: 10])
    }
}
