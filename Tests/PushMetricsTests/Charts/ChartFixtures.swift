import Foundation
@testable import PushMetrics

/// Runs shaped to show each chart defect a reader could be misled by, and every chart the module draws.
enum ChartFixtures {
    /// A run at `rate` per second for `seconds` whole seconds, then `partial` of a second measured and,
    /// after the measured time, `drain` responses. Each second has `errors` non-2xx responses and
    /// `transport` transport errors; the k-th response of the run takes `latencyUs(k)` µs.
    static func steady(_ label: String, rate: Int, seconds: Int, partial: Double = 0, drain: Int = 0, errors: Int = 0,
                       transport: Int = 0, closedLoop: Bool = false, latencyUs: (Int) -> Int64 = { 700 + Int64($0 % 13) * 50 }) -> RunRecord {
        var r = RunRecord(label: label, startedAt: Fixtures.start,
                          config: RunConfig(rps: closedLoop ? nil : rate, durationSeconds: Double(seconds) + partial, encoder: "zerocopy"))
        r.version = "0.1.0"
        var k = 0
        func second(_ s: Int, sent: Int, completed: Int, failed: Int, transport te: Int) -> TimelineInterval {
            let lat = HdrHistogram.latencyMicroseconds(), svc = HdrHistogram.latencyMicroseconds()
            for _ in 0..<completed {
                lat.record(latencyUs(k))
                svc.record(Swift.max(1, latencyUs(k) / 2))
                k += 1
            }
            return TimelineInterval(second: s, sent: Int64(sent), completed: Int64(completed), succeeded: Int64(completed - failed),
                                    failed: Int64(failed), transportErrors: Int64(te), latency: lat, serviceTime: svc)
        }
        for s in 0..<seconds {
            r.intervals.append(second(s, sent: rate, completed: rate - transport, failed: errors, transport: transport))
        }
        if partial > 0 {
            let n = Int(Double(rate) * partial)
            r.intervals.append(second(seconds, sent: n, completed: n, failed: 0, transport: 0))
        }
        if drain > 0 {
            r.intervals.append(second(seconds + (partial > 0 ? 1 : 0), sent: 0, completed: drain, failed: 0, transport: 0))
        }
        Fixtures.addUp(&r)
        r.counts.byStatus = ["200": r.counts.succeeded]
        if r.counts.failed > 0 { r.counts.byStatus["400"] = r.counts.failed }
        r.measuredSeconds = Double(seconds) + partial
        return r
    }

    /// A run that measured `seconds` seconds and sent nothing.
    static func empty(seconds: Double = 0) -> RunRecord {
        var r = RunRecord(label: "empty", startedAt: Fixtures.start, config: RunConfig(rps: 200, durationSeconds: seconds))
        r.version = "0.1.0"
        r.measuredSeconds = seconds
        return r
    }

    /// Two agents' runs of 10 s each, the second starting `offset` seconds after the first, merged.
    static func merged(offset: Double) throws -> (record: RunRecord, runs: [LoadedRun], root: URL) {
        let a = Fixtures.record(label: "agentA", threads: [0], seconds: 10)
        var b = Fixtures.record(label: "agentB", threads: [1], seconds: 10)
        b.startedAt = a.startedAt.addingTimeInterval(offset)
        let root = try Fixtures.tempDir("merge-gap")
        let runs = try [a, b].map { try LoadedRun.load(ResultsWriter.write($0, root: root).path, requireIntervals: true) }
        return (try RunMerger.merge(runs), runs, root)
    }

    /// Three variants of an A/B run with `rounds` rounds each, their rounds ±8% apart; `slowCopy`
    /// makes every copy round slower; `noisy` spreads the reference's rounds ±60%.
    static func comparison(rounds: Int, slowCopy: Double = 1, noisy: Bool = false) -> VariantComparison {
        let names = ["zerocopy", "copy", "foundation"]
        var entries: [VariantComparison.Entry] = []
        for (v, name) in names.enumerated() {
            let factor = name == "copy" ? slowCopy : 1
            let r = steady("ab-\(name)", rate: 300, seconds: rounds) { k in Int64((Double(600 + (k * 7919) % 900) * factor).rounded()) }
            let points = (0..<rounds).map { i -> VariantComparison.RoundPoint in
                let wobble = 1 + (noisy && v == 0 ? 0.3 : 0.04) * Double((i * 3 + v) % 5 - 2)
                return VariantComparison.RoundPoint(index: i * names.count + v, achievedRPS: 300,
                                                    p50: Int64(1000 * factor * wobble), p99: Int64(1500 * factor * wobble),
                                                    p999: Int64(1500 * factor * wobble), cpuSecondsPerMillion: 4 * factor * wobble)
            }
            entries.append(.init(name: name, runID: "20261129-120000-ab-\(name)", record: r,
                                 cpuSecondsPerMillion: 4 * factor, rounds: rounds, perRound: points))
        }
        return VariantComparison(label: "ab", entries: entries, roundOrder: (0..<rounds).flatMap { _ in names })
    }

    /// Every chart this module draws, by name, for the shapes of run above.
    static func catalogue() throws -> [(name: String, svg: String)] {
        func run(_ name: String, _ r: RunRecord) -> (String, String) {
            (name, ReportChart.runSVG(record: r, intervals: TimelineInterval.merged(r.intervals), title: ReportTitle(runID: name, record: r)))
        }
        let tail = Fixtures.record(label: "tail", seconds: 4)
        for v in [Int64](repeating: 2_000_000, count: 5) { tail.latency.record(v) }
        var deadTarget = steady("dead", rate: 200, seconds: 3)
        for k in deadTarget.intervals.indices where k > 0 {
            deadTarget.intervals[k].completed = 0
            deadTarget.intervals[k].succeeded = 0
            deadTarget.intervals[k].latency = EncodedHistogram(HdrHistogram.latencyMicroseconds())
        }
        let big = steady("many-samples", rate: 20_000, seconds: 2)
        big.latency.record(900, count: 2_000_000)
        let merged = try merged(offset: 22)
        defer { try? FileManager.default.removeItem(at: merged.root) }
        var charts = [
            run("fixture", Fixtures.record()),
            run("empty", empty()),
            run("empty-measured", empty(seconds: 3)),
            run("target-died", deadTarget),
            run("long-tail", tail),
            run("closed-loop", steady("closed", rate: 2_000, seconds: 3, closedLoop: true) { Int64(($0 * 7919) % 15_000) }),
            run("errors-and-drain", steady("errors", rate: 5_000, seconds: 10, drain: 120, errors: 44, transport: 3)),
            run("partial-second", steady("partial", rate: 1_000, seconds: 10, partial: 0.42)),
            run("tiny", steady("tiny", rate: 5, seconds: 1)),
            run("many-samples", big),
            run("merged-gap", merged.record),
            run("one-second", steady("one", rate: 300, seconds: 1)),
            run("long-run", steady("long", rate: 20, seconds: 600)),
        ]
        let folder = try Fixtures.tempDir("handmade")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.copyItem(at: Fixtures.fixtureURL("handmade-run"), to: folder.appendingPathComponent("run"))
        let handmade = try LoadedRun.load(folder.appendingPathComponent("run").path, requireIntervals: true)
        charts.append(run("handmade", handmade.record))
        let html = ReportChart.runHTML(record: handmade.record, intervals: handmade.record.intervals,
                                       title: ReportTitle(runID: "handmade", record: handmade.record), summary: handmade.summary)
        if let embedded = ChartCheck.embeddedSVG(html) { charts.append(("handmade-html", embedded)) }
        let nightly = try ReportChart.parseHistory(Fixtures.text(Fixtures.fixtureURL("history-nightly.csv")))
        let old = try ReportChart.parseHistory(Fixtures.text(Fixtures.fixtureURL("history.csv")))
        charts += [("history-nightly", ReportChart.historySVG(nightly)), ("history-one-series", ReportChart.historySVG(old)),
                   ("history-one-run", ReportChart.historySVG(Array(old.prefix(1)))), ("history-empty", ReportChart.historySVG([]))]
        charts += [("comparison", comparison(rounds: 5, slowCopy: 1.3).svg(comparisonID: "ab")),
                   ("comparison-one-round", comparison(rounds: 1).svg(comparisonID: "ab1"))]
        return charts
    }
}
