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
