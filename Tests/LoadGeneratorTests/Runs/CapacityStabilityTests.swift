import Testing
@testable import LoadGenerator

/// The statistics of repeated capacity searches: which answer is the median, the spread, and the line.
@Suite struct CapacityStabilityTests {
    @Test func anOddCountTakesTheMiddleAnswerWhereverItRan() {
        let s = CapacityStability(answers: [140_000, 150_000, 142_000])
        #expect(s.medianIndex == 2)
        #expect(s.median == 142_000)
        #expect(s.lowest == 140_000 && s.highest == 150_000)
        #expect(s.spread == 10_000)
        #expect(s.spreadFraction == 10_000.0 / 142_000)
        #expect(s.line == "capacity over 3 searches: median 142,000 rps (search 3); answers 140,000, 150,000, 142,000 rps; "
            + "spread 140,000-150,000 rps, 7.04% of the median")
    }

    @Test func anEvenCountTakesTheLowerMiddleAnswerNotAnAverageNoSearchGave() {
        let s = CapacityStability(answers: [200_000, 100_000, 180_000, 120_000])
        #expect(s.median == 120_000)
        #expect(s.medianIndex == 3)
        #expect(s.spread == 100_000)
        #expect(s.spreadFraction == 100_000.0 / 120_000)
        #expect(CapacityStability(answers: [5_000, 4_000]).median == 4_000)
    }

    @Test func equalAnswersTakeTheFirstSearchThatGaveIt() {
        let s = CapacityStability(answers: [8_000, 8_000, 8_000])
        #expect(s.medianIndex == 1)
        #expect(s.spread == 0)
        #expect(s.spreadFraction == 0)
        #expect(CapacityStability(answers: [8_000, 9_000, 8_000]).medianIndex == 2)
    }

    @Test func oneSearchIsItsOwnMedianWithNoSpread() {
        let s = CapacityStability(answers: [37_500])
        #expect(s.median == 37_500 && s.medianIndex == 0)
        #expect(s.spread == 0)
        #expect(s.line == "capacity over 1 search: median 37,500 rps (search 1); answers 37,500 rps; spread 37,500-37,500 rps, 0% of the median")
    }

    @Test func aSearchWithoutAnAnswerRanksLowestAndLeavesTheSpreadUnknown() {
        let s = CapacityStability(answers: [10_000, nil, 12_000])
        #expect(s.median == 10_000)
        #expect(s.medianIndex == 0)
        #expect(s.lowest == nil)
        #expect(s.highest == 12_000)
        #expect(s.spread == nil && s.spreadFraction == nil)
        #expect(s.line == "capacity over 3 searches: median 10,000 rps (search 1); answers 10,000, none, 12,000 rps; "
            + "spread unknown: 1 of 3 found no rate")
        let most = CapacityStability(answers: [nil, 9_000, nil])
        #expect(most.median == nil)
        #expect(most.medianIndex == 2)
        #expect(most.line.hasPrefix("capacity over 3 searches: median: no rate held (search 3); answers none, 9,000, none rps;"))
    }

    @Test func aMedianOfZeroHasNoFraction() {
        let s = CapacityStability(answers: [0, 0, 10])
        #expect(s.median == 0)
        #expect(s.spread == 10)
        #expect(s.spreadFraction == nil)
    }
}
