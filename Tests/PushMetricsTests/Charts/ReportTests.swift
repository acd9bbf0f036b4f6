import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
@testable import PushMetrics

@Suite struct ReportTests {
    /// Fixtures/handmade-run: summary.json and timeline.csv written by hand, latency.hlog written by
    /// the Python hdrhistogram package with absolute timestamps and no BaseTime, no service_time.hlog.
    func handmadeCopy() throws -> URL {
        let dir = try Fixtures.tempDir("report")
        let dest = dir.appendingPathComponent("handmade-run")
        try FileManager.default.copyItem(at: Fixtures.fixtureURL("handmade-run"), to: dest)
        return dest
    }

    @Test func handMadeRunFolderLoads() throws {
        let folder = try handmadeCopy()
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        let run = try LoadedRun.load(folder.path, requireIntervals: true)
        let r = run.record
        #expect(run.runID == "20261129-120000-handmade")
        #expect(r.config.protocolName == "fcm" && r.config.rps == 200 && r.config.encoder == "copy")
        #expect(r.counts.isConsistent)
        #expect(r.counts.byReason == ["UNREGISTERED": 10])
        // No "histograms" key: the whole-run histogram is the sum of the Python-written intervals.
        #expect(r.latency.totalCount == 600)
        #expect(r.latency.valueAtPercentile(50) == 902)
        #expect(r.latency.valueAtPercentile(99) == 2391)
        #expect(r.latency.max == 3277)
        #expect(r.intervals.map(\.second) == [0, 1, 2])
        #expect(r.intervals.map(\.latency.totalCount) == [200, 180, 220])
        #expect(r.intervals.map(\.transportErrors) == [1, 0, 0])
        #expect(r.intervals.map(\.failed) == [3, 4, 3])
        #expect(r.serviceTime.totalCount == 0)
    }

    @Test func handMadeRunFolderRendersReportSVG() throws {
        let folder = try handmadeCopy()
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        let written = try RunReport.redraw(folder.path)
        #expect(written.map(\.lastPathComponent) == ["report.svg", "report.html"])
        let svg = try Fixtures.text(folder.appendingPathComponent("report.svg"))
        try Golden.check(svg, "handmade-report.svg")
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        #expect(svg.hasSuffix("</svg>\n"))
        for text in ["pushbench 20261129-120000-handmade", "fcm · http://127.0.0.1:8443 · target 200 rps", "Latency by percentile",
                     "percentile (log scale of 1/(1−p))", "latency (ms)", "requests / s", "corrected latency (from intended send)",
                     "service time (from actual send) (no data)", "p99", "time since start of measurement (s)", "99%",
                     "Per second: errors", "up to 1 − 1/n for n = 600 samples"] {
            #expect(svg.contains(text), "report.svg lacks \(text)")
        }
        #expect(svg.components(separatedBy: "<polyline").count - 1 >= 5)
        let html = try Fixtures.text(folder.appendingPathComponent("report.html"))
        #expect(html.contains("<svg") && html.contains("UNREGISTERED") && html.contains("<td>status 404</td><td>10</td>"))
        // The SVG is well-formed XML.
        let parser = XMLParser(data: Data(svg.utf8))
        #expect(parser.parse(), "report.svg is not well-formed: \(String(describing: parser.parserError))")
    }

    @Test func aLongTailGetsALogLatencyAxis() throws {
        let r = Fixtures.record(label: "tail", seconds: 4)
        for v in [Int64](repeating: 2_000_000, count: 5) { r.latency.record(v) }
        let svg = ReportChart.runSVG(record: r, intervals: TimelineInterval.merged(r.intervals), title: ReportTitle(runID: "tail", record: r))
        try Golden.check(svg, "long-tail-report.svg")
        #expect(svg.contains("latency (ms, log scale)"))
        let plain = ReportChart.runSVG(record: Fixtures.record(), intervals: [], title: ReportTitle(runID: "x", record: Fixtures.record()))
        #expect(!plain.contains("log scale)"))
    }

    @Test func secondsWithHostStealAreShadedAndOthersAreNot() {
        let r = Fixtures.record(label: "steal", seconds: 4)
        var intervals = TimelineInterval.merged(r.intervals)
        func shades(_ svg: String) -> Int { svg.components(separatedBy: "fill=\"#f0a030\"").count - 1 }
        for k in intervals.indices { intervals[k].stealMs = k == 2 ? 80 : 0 }
        let one = ReportChart.runSVG(record: r, intervals: intervals, title: ReportTitle(runID: "steal", record: r))
        #expect(shades(one) == 2, "the one second, and the legend's swatch")
        #expect(one.contains("host steal in that second"))
        for k in intervals.indices { intervals[k].stealMs = nil }
        let unknown = ReportChart.runSVG(record: r, intervals: intervals, title: ReportTitle(runID: "steal", record: r))
        #expect(shades(unknown) == 0)
        #expect(!unknown.contains("host steal"))
    }

    @Test func historyChartDrawsEveryRun() throws {
        let root = try Fixtures.tempDir("history")
        defer { try? FileManager.default.removeItem(at: root) }
        for label in ["one", "two", "three"] { try ResultsWriter.write(Fixtures.record(label: label), root: root) }
        let url = try RunReport.drawHistory(root: root)
        let svg = try Fixtures.text(url)
        #expect(svg.contains("3 runs in 1 configuration, 2026-11-29 12:00 to 2026-11-29 12:00 UTC"))
        #expect(svg.contains("zerocopy · 1,000 rps · apns · embedded (3 runs)"))
        // A dot per run for throughput and for p99.
        #expect(svg.components(separatedBy: "<circle").count - 1 == 3 * 2)
        #expect(XMLParser(data: Data(svg.utf8)).parse())
        try Golden.check(ReportChart.historySVG(try ReportChart.parseHistory(Fixtures.text(Fixtures.fixtureURL("history-nightly.csv")))), "history.svg")
    }

    @Test func badHistoryLinesAreNamed() {
        #expect(throws: ResultsError.self) { try ReportChart.parseHistory("nonsense\n") }
        do {
            _ = try ReportChart.parseHistory(ResultsWriter.historyHeader + "\nrun,l,e,1,x,1,2,3,0,1\n", file: "h.csv")
            Issue.record("accepted a bad row")
        } catch {
            #expect("\(error)".hasPrefix("h.csv: line 2:"))
        }
    }
}
