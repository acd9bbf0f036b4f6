import Testing
@testable import PushMetrics

@Suite struct PushMetricsSmokeTests {
    @Test func moduleLinks() { #expect(Bool(true)) }
}
