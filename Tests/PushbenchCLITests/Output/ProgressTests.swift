@testable import LoadGenerator
import Testing
@testable import PushbenchCLI

/// The progress line says which of its seconds are warm-up, whose requests stay out of the figures.
@Suite struct ProgressTests {
    @Test func warmUpSecondsAreMarked() {
        var s = LiveSnapshot()
        s.sent = 2000
        #expect(ProgressDisplay.format(s, elapsed: 1, rps: 2000, warmup: true).hasPrefix("1.0s warm-up  sent 2000  2000 rps"))
        #expect(ProgressDisplay.format(s, elapsed: 3, rps: 2000).hasPrefix("3.0s  sent 2000  2000 rps"))
    }

    @Test func aLineIsWarmUpWhenItsSecondBeganInsideTheWarmUp() {
        // --warmup 2s, lines once a second: 1.0 and 2.0 are warm-up, 3.0 is measured.
        #expect(ProgressDisplay.inWarmup(elapsed: 1.0, window: 1.0, warmupSeconds: 2))
        #expect(ProgressDisplay.inWarmup(elapsed: 2.0, window: 1.0, warmupSeconds: 2))
        #expect(!ProgressDisplay.inWarmup(elapsed: 3.0, window: 1.0, warmupSeconds: 2))
        // A late tick still counts by where its second began; no warm-up, no marker.
        #expect(ProgressDisplay.inWarmup(elapsed: 2.02, window: 1.02, warmupSeconds: 2))
        #expect(!ProgressDisplay.inWarmup(elapsed: 1.0, window: 1.0, warmupSeconds: 0))
    }

    /// In an encoder A/B run each variant's first round carries the warm-up: its first second is marked,
    /// the seconds after it and every later round's are not.
    @Test func aVariantsFirstRoundMarksItsWarmUpAndLaterRoundsDoNot() {
        let rounds = ComparisonSchedule.rounds(variants: 2, durationNs: 2_000_000_000, roundNs: 1_000_000_000,
                                               warmupNs: 1_000_000_000)
        #expect(rounds.map(\.pass) == [0, 0, 1, 1])
        var s = LiveSnapshot()
        for round in rounds {
            var display = ProgressDisplay(round: round, quiet: false, json: false, targetRPS: 1000)
            s.sent = 1000
            let first = display.nextLine(s, elapsed: 1.0)
            s.sent = 2000
            let second = display.nextLine(s, elapsed: 2.0)
            #expect(first.hasPrefix(round.pass == 0 ? "1.0s warm-up  sent" : "1.0s  sent"), "round \(round.index): \(first)")
            #expect(second.hasPrefix("2.0s  sent"), "round \(round.index): \(second)")
        }
    }
}
