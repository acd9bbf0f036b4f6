import Testing
@testable import LoadGenerator

@Suite struct LoadGeneratorSmokeTests {
    @Test func moduleLinks() { #expect(Bool(true)) }
}
