import Testing
@testable import PushMetrics

/// A rate schedule's target per second beside what was achieved: in timeline.csv and in report.svg,
/// where the target line parts from the completed line at the second the rate stopped being met.
extension RunChartTests {
    /// A ramp whose target rises 1,000 a second to 6,000 while the target server completes at most 4,000.
    static func rampBeyondItsKnee() -> RunRecord {
        var r = ChartFixtures.steady("ramp", rate: 4_000, seconds: 6)
        for s in 0..<6 {
            let target = Int64(1_000 * (s + 1))
            let done = min(target, 4_000)
            let old = r.intervals[s]
            let lat = HdrHistogram.latencyMicroseconds()
            for _ in 0..<done { lat.record(800) }
            r.intervals[s] = TimelineInterval(second: s, sent: target, completed: done, succeeded: done, failed: 0, transportErrors: 0,
                                              latency: EncodedHistogram(lat), serviceTime: old.serviceTime, target: target)
        }
        return r
    }

    @Test func theTargetPerSecondIsBesideWhatWasAchieved() throws {
        let r = Self.rampBeyondItsKnee()
        let csv = ResultsWriter.timelineCSV(TimelineInterval.merged(r.intervals)).split(separator: "\n")
        #expect(csv.first?.hasSuffix(",target") == true)
        let rows = csv.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        #expect(rows.map { $0.last.map(String.init) } == ["1000", "2000", "3000", "4000", "5000", "6000"])
        #expect(rows.map { $0[2] } == ["1000", "2000", "3000", "4000", "4000", "4000"], "completed beside it")

        let s = svg(r)
        #expect(s.contains("Per second: target, sent and completed") && s.contains("target / s (the schedule)"))
        let lines = polylines(s)
        let target = try #require(lines.first { $0.stroke == ReportChart.colors.target })
        let completed = try #require(lines.first { $0.stroke == ReportChart.colors.latency && $0.width == "3.5" })
        #expect(target.points.count == 6 && completed.points.count == 6)
        // Same seconds (x); while the rate is met the lines coincide, after the knee the target is above
        // (smaller y) and the gap grows.
        for (t, c) in zip(target.points, completed.points) { #expect(abs(t.0 - c.0) < 0.01) }
        for k in 0..<4 { #expect(abs(target.points[k].1 - completed.points[k].1) < 0.01, "second \(k)") }
        let gaps = (4..<6).map { completed.points[$0].1 - target.points[$0].1 }
        #expect(gaps[0] > 5 && gaps[1] > gaps[0], "\(gaps)")
    }

    @Test func aConstantRunWithoutAScheduleDrawsNoTargetLine() {
        var r = ChartFixtures.steady("closed", rate: 3_000, seconds: 3)
        for k in r.intervals.indices { r.intervals[k].target = nil }
        let s = svg(r)
        #expect(!s.contains("target / s (the schedule)"))
        #expect(!polylines(s).contains { $0.stroke == ReportChart.colors.target })
        #expect(ResultsWriter.timelineCSV(TimelineInterval.merged(r.intervals)).split(separator: "\n").dropFirst().allSatisfy { $0.hasSuffix(",") })
    }
}
