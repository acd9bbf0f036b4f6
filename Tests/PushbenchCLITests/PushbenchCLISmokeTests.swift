import Testing
@testable import PushbenchCLI

@Suite struct PushbenchCLISmokeTests {
    @Test func moduleLinks() { #expect(Bool(true)) }
}
