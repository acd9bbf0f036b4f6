import Testing
@testable import MockGateway

@Suite struct MockGatewaySmokeTests {
    @Test func moduleLinks() { #expect(Bool(true)) }
}
