import Foundation
import LoadGenerator
import PushMetrics
import Testing
@testable import PushbenchCLI

/// The line each capacity step prints.
@Suite struct CapacityStepLineTests {
    func run(_ number: Int, rate: Int, verdict: CapacityVerdict) -> CapacityExecution.StepRun {
        let step = CapacityStep(rate: rate, achievedRPS: Double(rate), p50: 150, p99: 440, p999: 2_470, errorRate: 0)
        return .init(number: number, folder: "f", record: RunRecord(label: "x", startedAt: Date(), config: RunConfig()),
                     step: step, verdict: verdict)
    }

    @Test func theConfirmingRerunSaysSo() {
        let line = CapacityExecution.stepLine(run(11, rate: 56_875, verdict: .held), rerun: true)
        #expect(line == "  step 11  56,875 rps  achieved 56,875  p50 0.15 ms  p99 0.44 ms  p99.9 2.47 ms  errors 0%  held (rerun to confirm)")
    }

    @Test func aFirstRunOfARateIsPlain() {
        let line = CapacityExecution.stepLine(run(3, rate: 40_000, verdict: .objective("p99<1ms did not hold")))
        #expect(line.hasSuffix("errors 0%  objective: p99<1ms did not hold"), "\(line)")
    }
}
