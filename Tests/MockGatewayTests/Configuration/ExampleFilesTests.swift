import Foundation
import PushPayload
import PushVocabulary
import Testing
@testable import MockGateway

/// The files under examples/ load as the README and examples/README.md use them: the templates within
/// their push type's size limit, the token file, the gateway scenario.
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

    @Test func scenarioTurnsOnWhatItsReadmeSays() throws {
        let c = try GatewayConfiguration.parse(["--scenario", Self.example("scenario.json")])
        #expect(c.seed == 7 && c.latency != .none && c.failures.count == 2 && c.unregisteredFraction == 0.02)
        #expect(c.tokenRateLimit != nil && c.goawayAfterStreams == 100_000 && c.goawayReason == .shutdown)
    }
}
