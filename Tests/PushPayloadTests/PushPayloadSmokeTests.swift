import Testing
@testable import PushPayload

@Suite struct PushPayloadSmokeTests {
    @Test func moduleLinks() { #expect(Bool(true)) }
}
