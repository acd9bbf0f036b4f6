import Foundation
@testable import PushPayload
import PushVocabulary
import Testing
@testable import MockGateway

/// The files under examples/ load as the README and examples/README.md use them: the templates within
/// their push type's size limit, the token file, the gateway scenario, the pipeline's request files.
@Suite struct ExampleFilesTests {
    static func example(_ name: String) -> String { packageRoot.appendingPathComponent("examples/\(name)").path }

    @Test(arguments: [("alert.json", PushProtocol.apns, APNsPushType.alert), ("voip.json", .apns, .voip),
                      ("fcm-message.json", .fcm, .alert)])
    func templatesLoadWithinTheirLimit(file: String, proto: PushProtocol, pushType: APNsPushType) throws {
        let tokens = try DeviceTokens(path: Self.example("tokens.txt"))
        let template = try PayloadTemplate.forRun(path: Self.example(file), protocol: proto, pushType: pushType,
                                                  maxTokenLength: tokens.maxLength)
        let length = template.encodedLength(RequestContext(seq: 1, messageID: PushUUID(high: 0x6f1d_2b1c_8a6e_4a4b, low: 0x9d0e_1c2b_3a4d_5e6f)))
        #expect(length > 0 && length <= PayloadLimits.limit(for: proto, pushType: pushType, topic: false))
    }

    @Test func tokenFileHasSixteenTokens() throws {
        let tokens = try DeviceTokens(path: Self.example("tokens.txt"))
        #expect(tokens.count == 16 && tokens.maxLength == 64)
    }

    /// The walk-through's request files parse as `pushbench pipeline --request` reads them, and expand to
    /// the body examples/pipeline/service.py takes: the correlation id, N tokens, the route.
    @Test(arguments: [("notify.http", 1, "apns"), ("notify-fanout.http", 3, "apns"), ("notify-fcm.http", 1, "fcm")])
    func pipelineRequestsExpandToWhatTheServiceTakes(file: String, fanOut: Int, route: String) throws {
        let request = try RequestFile(path: Self.example("pipeline/" + file))
        #expect(request.method == "POST" && request.path == "/notify")
        #expect(request.headers.contains { $0.name.lowercased() == "content-type" && $0.value == "application/json" })
        let template = try #require(try request.template(options: TemplateOptions(limit: nil)))
        #expect(template.hasPipelineID && template.fanOut == fanOut)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(Self.expand(template).utf8)) as? [String: Any])
        #expect(body["id"] as? String == "pb-7f3a-000000004")
        #expect((body["tokens"] as? [String])?.count == fanOut)
        #expect(body["route"] as? String ?? "apns" == route)
        #expect(body["title"] is String && body["body"] is String)
    }

    /// The relay's request is an APNs push the egress answers 200, carrying the id in its payload.
    @Test func relayRequestIsAnAPNsPushWithTheID() throws {
        let request = try RequestFile(path: Self.example("pipeline/apns-relay.http"))
        #expect(request.method == "POST" && request.path.hasPrefix("/3/device/"))
        #expect(request.headers.contains { $0.name == "apns-topic" })
        let template = try #require(try request.template(options: TemplateOptions(limit: nil)))
        #expect(template.hasPipelineID && template.fanOut == 1)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(Self.expand(template).utf8)) as? [String: Any])
        #expect(body["pipeline_id"] as? String == "pb-7f3a-000000004" && body["aps"] is [String: Any])
    }

    /// Request 4 of a run tagged 7f3a, as the load generator writes it.
    static func expand(_ template: PayloadTemplate) -> String {
        let tokens = DeviceTokens(synthetic: 8, seed: 1)
        let prefix = PipelineID.prefix(tag: 0x7f3a)
        let encoder = makePayloadEncoder(.zerocopy, template: template)
        return prefix.withUnsafeBytes { p in
            let context = RequestContext(seq: 4, messageID: PushUUID(high: 1, low: 2), pipelinePrefix: p, tokens: tokens)
            let slot = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
            defer { slot.deallocate() }
            let n = encoder.encode(context, into: slot) ?? 0
            return String(decoding: UnsafeRawBufferPointer(rebasing: slot[0..<n]), as: UTF8.self)
        }
    }

    @Test func scenarioTurnsOnWhatItsReadmeSays() throws {
        let c = try GatewayConfiguration.parse(["--scenario", Self.example("scenario.json")])
        #expect(c.seed == 7 && c.latency != .none && c.failures.count == 2 && c.unregisteredFraction == 0.02)
        #expect(c.tokenRateLimit != nil && c.goawayAfterStreams == 100_000 && c.goawayReason == .shutdown)
    }
}
