import Foundation
import Testing
@testable import PushMetrics

@Suite struct HistoryChartTests {
    func nightly() throws -> [ReportChart.HistoryRow] {
        try ReportChart.parseHistory(Fixtures.text(Fixtures.fixtureURL("history-nightly.csv")))
    }

    @Test func theNightlysSixCellsAreSixSeriesNotOneSawtooth() throws {
        let rows = try nightly()
        let svg = ReportChart.historySVG(rows)
        for encoder in ["zerocopy", "copy", "foundation"] {
            #expect(svg.contains("\(encoder) · 50,000 rps · apns · embedded (12 runs)"))
            #expect(svg.contains("\(encoder) · closed loop · apns · embedded (12 runs)"))
        }
        // One throughput line and one p99 line per configuration, each through its 12 nights, left to right.
        let polylines = svg.components(separatedBy: "<polyline").dropFirst().map { $0.prefix { $0 != "/" } }
        let solid = polylines.filter { !$0.contains("stroke-dasharray") }
        #expect(solid.count == 12)
        for line in solid {
            let xs = line.components(separatedBy: "points=\"")[1].prefix { $0 != "\"" }.split(separator: " ").compactMap { Double($0.split(separator: ",")[0]) }
            #expect(xs.count == 12)
            #expect(zip(xs, xs.dropFirst()).allSatisfy { $0 < $1 }, "a series runs left to right")
        }
        let chart = try #require(ChartCheck.read(svg))
        #expect(chart.axes.map(\.scale) == ["linear", "log"], "latency on a log axis")
        // The nights are labelled by date and label, and the test-only slowed run is not a measurement.
        #expect(svg.contains(">2026-11-01 02:00<") && svg.contains(">nightly<"))
        #expect(svg.contains("72 runs in 6 configurations") && svg.contains("1 test-slowed run not drawn"))
        #expect(ChartCheck.allProblems(svg).isEmpty, "\(ChartCheck.allProblems(svg))")
    }

    @Test func aDifferentTargetOrProtocolIsAnotherSeries() {
        func row(_ id: String, _ target: String?, _ proto: String?) -> ReportChart.HistoryRow {
            .init(runID: id, label: "x", encoder: "zerocopy", targetRPS: "1000", achievedRPS: 1000, p50: 900, p99: 1500,
                  p999: 2000, errors: 0, cpuSeconds: 1, protocolName: proto, target: target)
        }
        let rows = [row("20261101-010000-x", "embedded", "apns"), row("20261101-020000-x", "http://a:1", "apns"),
                    row("20261101-030000-x", "embedded", "fcm"), row("20261101-040000-x", nil, nil), row("20261101-050000-x", "embedded", "apns")]
        #expect(Set(rows.map(\.series)).count == 4)
        #expect(rows[3].series == "zerocopy · 1,000 rps · protocol and target not recorded")
        let svg = ReportChart.historySVG(rows)
        #expect(svg.contains("zerocopy · 1,000 rps · apns · embedded (2 runs)"))
    }

    @Test func runsStartedTogetherShareAPlaceAndAStem() {
        #expect(ReportChart.sessionLabel(["nightly-50k-zerocopy", "nightly-50k-copy", "nightly-max-foundation"]) == "nightly")
        #expect(ReportChart.sessionLabel(["ab-zerocopy", "ab-copy"]) == "ab")
        #expect(ReportChart.sessionLabel(["solo"]) == "solo")
        #expect(ReportChart.sessionLabel(["alpha", "beta"]) == "alpha …")
        let rows = try? nightly()
        let sessions = ReportChart.sessions(rows?.filter { !$0.isTestSlowed } ?? [])
        #expect(sessions.count == 12 && sessions.allSatisfy { $0.count == 6 })
    }

    @Test func historyCSVRecordsProtocolAndTargetAndOlderFilesStillRead() throws {
        let root = try Fixtures.tempDir("history-upgrade")
        defer { try? FileManager.default.removeItem(at: root) }
        let old = "run_id,label,encoder,target_rps,achieved_rps,p50_us,p99_us,p999_us,errors,cpu_s\n"
            + "20261101-020000-old,old,zerocopy,50000,49356.9,969,2466,5578,3,12.626\n"
        try Data(old.utf8).write(to: root.appendingPathComponent("history.csv"))
        try ResultsWriter.write(Fixtures.record(label: "new"), root: root)
        let text = try Fixtures.text(root.appendingPathComponent("history.csv"))
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0] == ReportChart.HistoryRow.csvHeader && lines[0].hasSuffix(",protocol,target"))
        #expect(lines[1] == "20261101-020000-old,old,zerocopy,50000,49356.9,969,2466,5578,3,12.626", "old rows are kept as they were")
        #expect(lines[2].hasPrefix("20261129-120000-new,new,zerocopy,1000,") && lines[2].hasSuffix(",apns,embedded"))
        let rows = try ReportChart.parseHistory(text)
        #expect(rows.map(\.protocolName) == [nil, "apns"] && rows.map(\.target) == [nil, "embedded"])
        // A third run appends without touching the header again.
        try ResultsWriter.write(Fixtures.record(label: "third"), root: root)
        #expect(try Fixtures.text(root.appendingPathComponent("history.csv")).hasPrefix(text))
    }
}

@Suite struct VariantVerdictTests {
    func verdicts(_ c: VariantComparison, _ variant: Int) -> [String: VariantComparison.DifferenceVerdict] {
        Dictionary(uniqueKeysWithValues: c.differences[variant].map { ($0.metric, $0.verdict) })
    }

    @Test func oneRoundEachIsTooFewToCallARegression() {
        // Three 1 s rounds (one per variant) with copy 19% slower: what was printed as REGRESSION.
        let c = ChartFixtures.comparison(rounds: 1, slowCopy: 1.19)
        #expect(c.regressions == [[], [], []])
        #expect(verdicts(c, 1)["p999"] == .tooFewRounds && verdicts(c, 1)["p50"] == .tooFewRounds)
        let table = c.table(markdown: false)
        #expect(table.contains("too few rounds to judge (1 of 3)"))
        #expect(!table.contains("REGRESSION"))
    }

    @Test func aDifferenceWithinTheRoundToRoundSpreadIsNoise() throws {
        // The reference's rounds are ±60% apart: copy's 19% is inside that spread.
        let c = ChartFixtures.comparison(rounds: 5, slowCopy: 1.19, noisy: true)
        #expect(c.regressions[1].isEmpty)
        let p50 = try #require(c.differences[1].first { $0.metric == "p50" })
        #expect(p50.verdict == .noise)
        #expect((p50.spreadPercent ?? 0) > (p50.roundChangePercent ?? .infinity))
        #expect(c.table(markdown: false).contains("within noise: p50 +"))
        let json = c.json(comparisonID: "x").render()
        #expect(json.contains("\"differences_vs_reference\"") && json.contains("\"within noise\"") && json.contains("\"spread_pct\""))
    }

    @Test func aDifferenceBeyondTheSpreadWithEnoughRoundsIsARegression() throws {
        let c = ChartFixtures.comparison(rounds: 5, slowCopy: 1.3)
        #expect(c.regressions[1].contains("p50") && c.regressions[1].contains("p99") && c.regressions[1].contains("p999"))
        #expect(c.regressions[2].isEmpty, "foundation is the reference's twin")
        let p50 = try #require(c.differences[1].first { $0.metric == "p50" })
        #expect(p50.verdict == .regression && p50.rounds == 5)
        #expect(p50.text.contains("(rounds +30.0%, spread "))
        let md = c.markdown(comparisonID: "x")
        #expect(md.contains("| encoder | metric | reference | value | change | median round change | round spread | rounds | threshold | verdict |"))
        #expect(md.contains("| copy | p50 |") && md.contains("**REGRESSION**"))
        #expect(c.table(markdown: false).contains("REGRESSION: p50 +"))
    }

    @Test func oneStalledRoundDoesNotHideARegressionNorMakeOne() throws {
        // A stalled round of the reference neither vetoes copy's 30% nor, in copy, makes one.
        var c = ChartFixtures.comparison(rounds: 5, slowCopy: 1.3)
        c.entries[0].perRound[2].p50 *= 8
        #expect(c.regressions[1].contains("p50"))
        var quiet = ChartFixtures.comparison(rounds: 5)
        quiet.entries[1].perRound[2].p99 *= 8
        quiet.entries[1].record.latency.record(50_000, count: 1_000)  // the stall in copy's whole-run p99
        let p99 = try #require(quiet.differences[1].first { $0.metric == "p99" })
        #expect((p99.changePercent ?? 0) > 10, "the whole run's p99 moved")
        #expect(p99.verdict == .noise && quiet.regressions[1].isEmpty)
    }

    @Test func aFarSlowerVariantWhoseRoundsScatterWidelyIsStillARegression() throws {
        // A slowed variant's rounds scatter by milliseconds on a loaded machine: in percent of the
        // reference's small median that scatter is huge, yet its best rounds never come near the
        // reference's worst. Judged in percent of the reference, this read "within noise".
        var c = ChartFixtures.comparison(rounds: 5)
        let base = c.entries[0].perRound.map(\.p50)
        for (i, scale) in [18.0, 20.0, 70.0, 19.0, 65.0].enumerated() {
            c.entries[1].perRound[i].p50 = Int64(Double(base[i]) * scale)
        }
        c.entries[1].record.latency.record(base[0] * 30, count: 100_000)
        let p50 = try #require(c.differences[1].first { $0.metric == "p50" })
        #expect((p50.spreadPercent ?? 0) > (p50.roundChangePercent ?? .infinity), "the spread in % of the reference is wider than the change")
        #expect(p50.verdict == .regression)
    }

    @Test func transportErrorsNeedNoSpread() {
        var c = ChartFixtures.comparison(rounds: 5)
        c.entries[1].record.counts.transportErrors = 4
        #expect(c.regressions[1] == ["transport_errors"])
    }

    @Test func theComparisonDrawsLatencyOnALogAxisAndEachRoundsP99() throws {
        let svg = ChartFixtures.comparison(rounds: 5, slowCopy: 1.3).svg(comparisonID: "x")
        let chart = try #require(ChartCheck.read(svg))
        let ys = chart.axes.filter { $0.orient == "y" }
        #expect(ys.map(\.scale) == ["log", "log"], "latency by percentile and p99 per round, both log")
        #expect(svg.contains("latency (ms, log scale)") && svg.contains("Corrected latency p99 of each round"))
        #expect(ChartCheck.allProblems(svg).isEmpty, "\(ChartCheck.allProblems(svg))")
    }
}
