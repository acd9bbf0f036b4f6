import Foundation
@testable import LoadGenerator
@testable import PushMetrics
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

    /// A step whose record says the rate was not kept fails as the target's (streams busy, answers too
    /// slow) or as the sender's, never as held.
    @Test func aRateShortfallDecidesTheStep() {
        func step(_ shortfall: RateOutcome.Shortfall) -> CapacityStep {
            var config = RunConfig()
            config.rps = 40_000
            var r = RunRecord(label: "step", startedAt: Date(), config: config)
            r.rate = RateOutcome(sentRPS: 38_000, shortfall: shortfall)
            return CapacityExecution.step(r, senderLimit: nil, objectives: [CapacityObjective.defaultErrorRate])
        }
        let streams = step(.streams), target = step(.target), sender = step(.sender)
        #expect(streams.rateNotKept?.contains("every stream was busy") == true && !streams.rateNotKeptBySender)
        #expect(target.rateNotKept?.hasPrefix("the target answered") == true && !target.rateNotKeptBySender)
        #expect(sender.rateNotKept == "it sent 38,000 rps with streams free" && sender.rateNotKeptBySender)
        let search = CapacitySearch(min: 40_000, max: 40_000, objectives: [])
        #expect(search.verdict(streams).name == "rate" && search.verdict(sender).name == "sender")
    }
}
