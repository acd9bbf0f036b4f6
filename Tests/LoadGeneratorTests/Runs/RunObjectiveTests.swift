@testable import PushMetrics
import Testing
@testable import LoadGenerator

/// `--slo` objectives: how they read, how each metric is judged over the whole run, how windows catch
/// what the whole run hides, and when `--abort-on-slo` stops a run; driven by made-up figures.
@Suite struct RunObjectiveTests {
    static func parse(_ text: String) throws -> RunObjective { try RunObjective.parse(text) }

    @Test func objectivesRead() throws {
        #expect(try Self.parse("p99<5ms") == RunObjective(metric: .latency(percentile: 99), limit: 5_000, description: "p99<5ms"))
        #expect(try Self.parse("p99.9<10ms").metric == .latency(percentile: 99.9))
        #expect(try Self.parse("p99.99<10ms").metric == .latency(percentile: 99.99))
        #expect(try Self.parse("max<50ms").metric == .latency(percentile: 100))
        #expect(try Self.parse("p90<1ms").metric == .latency(percentile: 90))
        #expect(try Self.parse("service_p99<2ms") == RunObjective(metric: .serviceTime(percentile: 99), limit: 2_000, description: "service_p99<2ms"))
        #expect(try Self.parse("error_rate<0.1%").limit == 0.001)
        #expect(try Self.parse("rate_kept").metric == .rateKept)
        #expect(try Self.parse("lost_rate<=0") == RunObjective(metric: .lostRate, limit: 0, inclusive: true, description: "lost_rate<=0"))
        #expect(try Self.parse("duplicate_rate<1%").metric == .duplicateRate)
        #expect(try Self.parse("e2e_p99<50ms") == RunObjective(metric: .endToEnd(percentile: 99), limit: 50_000, description: "e2e_p99<50ms"))
        let windowed = try Self.parse("p99<1ms per 10s")
        #expect(windowed.windowSeconds == 10 && windowed.limit == 1_000 && windowed.metric == .latency(percentile: 99))
        #expect(try Self.parse("rate_kept per 5s").windowSeconds == 5)
        #expect(try Self.parse("p99.9<10ms").metricName == "p99.9")
        #expect(try Self.parse("max<10ms per 1m").metricName == "max")
        #expect(try Self.parse("max<10ms per 1m").windowSeconds == 60)
    }

    @Test func badObjectivesSayWhatIsWrong() {
        for (text, message) in [
            ("p98<5ms", "'p98' is not a metric (p50, p90, p99"),
            ("latency<5ms", "'latency' is not a metric"),
            ("p99", "'p99' is not METRIC<LIMIT"),
            ("p99>5ms", "'p99>5ms' is not METRIC<LIMIT"),
            ("p99<fast", "p99<fast: 'fast' is not a duration"),
            ("p99<5", "p99<5: '5' has no unit"),
            ("error_rate<2", "error_rate<2: '2' is not a fraction"),
            ("p99<1ms per 1.5s", "the window '1.5s' is not a whole number of seconds"),
            ("p99<1ms per 500ms", "the window '500ms' is not a whole number of seconds"),
            ("lost_rate<1% per 10s", "lost_rate is judged over the whole run only"),
            ("rate_kept<5%", "rate_kept takes no limit"),
        ] {
            #expect(throws: ObjectiveError.self, "\(text)") { try Self.parse(text) }
            do { _ = try Self.parse(text) } catch { #expect("\(error)".contains(message), "\(text): \(error)") }
        }
    }

    /// A histogram of `count` values of `us` each, plus `slow` values of `slowUs`.
    static func histogram(_ us: Int64, count: Int64, slow: Int64 = 0, slowUs: Int64 = 0) -> HdrHistogram {
        let h = HdrHistogram.latencyMicroseconds()
        h.record(us, count: count)
        if slow > 0 { h.record(slowUs, count: slow) }
        return h
    }

    static func figures(latencyUs: Int64 = 2_000, sent: Int64 = 10_000, failed: Int64 = 0, rate: (Bool, Double)? = (true, 1),
                        pipeline: ObjectiveFigures.Pipeline? = nil) -> ObjectiveFigures {
        var counts = RequestCounts()
        counts.sent = sent
        counts.completed = sent
        counts.failed = failed
        counts.succeeded = sent - failed
        return ObjectiveFigures(latency: histogram(latencyUs, count: sent), serviceTime: histogram(latencyUs / 2, count: sent),
                                counts: counts, rate: rate.map { (kept: $0.0, sentShare: $0.1) }, pipeline: pipeline)
    }

    static func judge(_ text: String, _ figures: ObjectiveFigures) throws -> ObjectiveVerdict {
        try #require(ObjectiveTracker(objectives: [try parse(text)]).verdicts(figures).first)
    }

    @Test func eachMetricPassesAndFails() throws {
        let run = Self.figures(latencyUs: 2_000, sent: 10_000, failed: 50)
        for (text, passes) in [
            ("p50<3ms", true), ("p50<1ms", false), ("p90<3ms", true), ("p99<2ms", false), ("p99<=3ms", true),
            ("p99.9<3ms", true), ("p99.99<1ms", false), ("max<3ms", true), ("max<2ms", false),
            ("service_p99<2ms", true), ("service_p99<1ms", false),
            ("error_rate<1%", true), ("error_rate<0.5%", false), ("error_rate<=0.5%", true),
            ("rate_kept", true),
        ] {
            let v = try Self.judge(text, run)
            #expect(v.passed == passes, "\(text): \(v.measuredText)")
            #expect(v.measured != nil)
        }
        #expect(try Self.judge("rate_kept", Self.figures(rate: (false, 0.99))).passed == false)
        #expect(try Self.judge("rate_kept", Self.figures(rate: (false, 0.5))).measured == 0.5)
        #expect(try Self.judge("rate_kept", Self.figures(rate: nil)).passed == false)
        let pipeline = ObjectiveFigures.Pipeline(expected: 1_000, lost: 2, duplicated: 0, endToEnd: Self.histogram(30_000, count: 998))
        let p = Self.figures(pipeline: pipeline)
        for (text, passes) in [
            ("lost_rate<1%", true), ("lost_rate<=0", false), ("lost_rate<0.2%", false), ("duplicate_rate<=0", true),
            ("e2e_p99<50ms", true), ("e2e_p99<20ms", false),
        ] {
            #expect(try Self.judge(text, p).passed == passes, "\(text)")
        }
        // A run measures no pipeline: its pipeline objectives do not hold ("not measured").
        let none = try Self.judge("lost_rate<1%", Self.figures())
        #expect(!none.passed && none.measured == nil && none.measuredText == "not measured")
    }

    /// Second `s` of a run: `count` answers at `us` (and `slow` at `slowUs`), `failed` of them errors.
    static func second(_ s: Int, _ us: Int64 = 1_000, count: Int64 = 1_000, slow: Int64 = 0, slowUs: Int64 = 0, failed: Int64 = 0,
                       target: Int64? = 1_000) -> TimelineInterval {
        TimelineInterval(second: s, sent: count + slow, completed: count + slow, succeeded: count + slow - failed, failed: failed,
                         transportErrors: 0, latency: histogram(us, count: count, slow: slow, slowUs: slowUs),
                         serviceTime: histogram(us, count: count + slow), target: target)
    }

    /// A one-second stall: 200 of 20,200 requests (under 1%) wait 50 ms in second 7. The whole run's p99
    /// stays at 1 ms, so `p99<5ms` holds; every 1-second window's p99 under 5 ms does not.
    @Test func windowsCatchAStallTheWholeRunHides() throws {
        let whole = try Self.parse("p99<5ms"), windowed = try Self.parse("p99<5ms per 1s"), wide = try Self.parse("p99<5ms per 10s")
        let tracker = ObjectiveTracker(objectives: [whole, windowed, wide])
        let total = HdrHistogram.latencyMicroseconds()
        for s in 0..<20 {
            let sec = Self.second(s, slow: s == 7 ? 200 : 0, slowUs: 50_000)
            tracker.observe(sec)
            total.add(sec.latency.decode())
        }
        var counts = RequestCounts()
        counts.sent = total.totalCount
        let verdicts = tracker.verdicts(ObjectiveFigures(latency: total, serviceTime: total, counts: counts, rate: nil))
        #expect(verdicts[0].passed, "whole run: \(verdicts[0].measuredText)")
        #expect(!verdicts[1].passed)
        #expect(verdicts[1].windows == 20 && verdicts[1].windowsFailed == 1 && verdicts[1].worstWindowStart == 7)
        #expect(verdicts[1].measuredText.hasPrefix("worst 50."))
        #expect(verdicts[1].measuredText.hasSuffix("(7-8 s), 1 of 20 windows failed"))
        // Over 10-second windows the 200 slow requests are 2% of their window's: p99 lands on them.
        #expect(!verdicts[2].passed && verdicts[2].windows == 2 && verdicts[2].worstWindowStart == 0, "\(verdicts[2])")
        // Without the stall every window holds.
        let calm = ObjectiveTracker(objectives: [windowed])
        for s in 0..<20 { calm.observe(Self.second(s)) }
        let v = try #require(calm.verdicts(ObjectiveFigures(latency: total, serviceTime: total, counts: counts, rate: nil)).first)
        #expect(v.passed && v.windows == 20 && v.windowsFailed == 0)
    }

    @Test func windowedErrorRateAndRateKept() throws {
        let tracker = ObjectiveTracker(objectives: [try Self.parse("error_rate<1% per 2s"), try Self.parse("rate_kept per 2s")])
        for s in 0..<6 {
            tracker.observe(Self.second(s, count: s == 3 ? 500 : 1_000, failed: s == 4 ? 100 : 0))
        }
        let v = tracker.verdicts(Self.figures())
        #expect(!v[0].passed && v[0].windowsFailed == 1 && v[0].worstWindowStart == 4)
        #expect(!v[1].passed && v[1].windowsFailed == 1 && v[1].worstWindowStart == 2 && v[1].measured == 0.75)
    }

    /// A last window shorter than half its length is not judged: a few stragglers answered after the
    /// end make no window of their own.
    @Test func aShortLastWindowIsNotJudged() throws {
        let tracker = ObjectiveTracker(objectives: [try Self.parse("p99<5ms per 4s")])
        for s in 0..<9 { tracker.observe(Self.second(s, s == 8 ? 50_000 : 1_000, count: s == 8 ? 3 : 1_000)) }
        let v = try #require(tracker.verdicts(Self.figures()).first)
        #expect(v.passed && v.windows == 2)
    }

    @Test func abortWaitsForTheGraceOnAWholeRunObjective() throws {
        let tracker = ObjectiveTracker(objectives: [try Self.parse("p99<5ms")], abortAfterSeconds: 3)
        tracker.observe(Self.second(0))
        tracker.observe(Self.second(1, 20_000))
        #expect(tracker.abortReason == nil)
        tracker.observe(Self.second(2, 20_000))
        #expect(tracker.abortReason == nil)
        tracker.observe(Self.second(3, 20_000))
        let why = try #require(tracker.abortReason)
        #expect(why.hasPrefix("p99<5ms: p99 20.") && why.hasSuffix("over the first 4 s, not met for 3 s"), "\(why)")
        // Without --abort-on-slo, nothing stops the run.
        let plain = ObjectiveTracker(objectives: [try Self.parse("p99<5ms")])
        for s in 0..<10 { plain.observe(Self.second(s, 20_000)) }
        #expect(plain.abortReason == nil)
    }

    @Test func aRecoveryRestartsTheGrace() throws {
        let tracker = ObjectiveTracker(objectives: [try Self.parse("error_rate<1%")], abortAfterSeconds: 2)
        tracker.observe(Self.second(0, failed: 50))       // 5% so far
        tracker.observe(Self.second(1, count: 10_000))    // back under 1% so far
        tracker.observe(Self.second(2, failed: 1_000))
        #expect(tracker.abortReason == nil)
        tracker.observe(Self.second(3, failed: 1_000))
        #expect(tracker.abortReason?.hasSuffix("not met for 2 s") == true)
    }

    @Test func abortIsImmediateOnceAnObjectiveCannotBeMet() throws {
        let max = ObjectiveTracker(objectives: [try Self.parse("max<10ms")], abortAfterSeconds: 30)
        max.observe(Self.second(0))
        #expect(max.abortReason == nil)
        max.observe(Self.second(1, slow: 1, slowUs: 11_000))
        #expect(max.abortReason?.hasPrefix("max<10ms: max 11.") == true)
        let window = ObjectiveTracker(objectives: [try Self.parse("p99<5ms per 2s")], abortAfterSeconds: 30)
        window.observe(Self.second(0, 20_000))
        window.observe(Self.second(1, 20_000))
        #expect(window.abortReason == nil)   // the window is judged once it closes
        window.observe(Self.second(2))
        #expect(window.abortReason?.hasSuffix("in 0-2 s") == true)
    }
}
