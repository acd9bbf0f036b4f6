import Foundation
import PushVocabulary
import Testing
@testable import PushMetrics

/// Golden files live in Fixtures/golden-run/. Regenerate after an intended format change with
/// `PUSHMETRICS_UPDATE_GOLDEN=1 swift test --skip-build --filter PushMetricsTests` and review the diff.
enum Golden {
    static let update = ProcessInfo.processInfo.environment["PUSHMETRICS_UPDATE_GOLDEN"] == "1"
    static let sourceFixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    static func check(_ produced: String, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        if update {
            let url = sourceFixtures.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(produced.utf8).write(to: url)
            return
        }
        let expected = try Fixtures.text(Fixtures.fixtureURL(name))
        #expect(produced == expected, "\(name) differs from its golden file", sourceLocation: sourceLocation)
    }
}

@Suite struct ResultsWriterTests {
    static let files = ["summary.json", "latency.hgrm", "latency.hlog", "service_time.hlog", "timeline.csv", "report.svg", "report.html"]

    @Test func runFolderMatchesGoldenFiles() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = try ResultsWriter.write(Fixtures.sampleRecord(), root: root)
        #expect(folder.lastPathComponent == "20261129-120000-fixture")
        for f in Self.files {
            try Golden.check(try Fixtures.text(folder.appendingPathComponent(f)), "golden-run/\(f)")
        }
    }

    @Test func summaryHasTheContractKeysAndConsistentCounts() throws {
        let record = Fixtures.sampleRecord()
        let s = ResultsWriter.summaryJSON(record, runID: "x")
        let top = s.members.map(\.0)
        for k in ["run_id", "started_at", "tool", "version", "config", "requests", "throughput", "latency_us",
                  "service_time_us", "cpu", "max_rss_bytes", "interrupted", "warmup", "backlog_max"] {
            #expect(top.contains(k), "summary.json lacks \(k)")
        }
        #expect(s["config"]?.members.map(\.0).prefix(8) == ["target", "protocol", "rps", "duration_s", "connections", "streams", "threads", "encoder"])
        #expect(s["requests"]?.members.map(\.0) == ["sent", "completed", "succeeded", "failed", "transport_errors", "unfinished", "by_status", "by_reason"])
        #expect(s["throughput"]?.members.map(\.0).prefix(2) == ["target_rps", "achieved_rps"])
        for block in ["latency_us", "service_time_us"] {
            #expect(s[block]?.members.map(\.0).prefix(7) == ["min", "p50", "p90", "p99", "p999", "max", "mean"])
        }
        #expect(s["cpu"]?.members.map(\.0) == ["user_s", "sys_s"])
        #expect(record.counts.isConsistent)
        #expect(s.value(atPath: "latency_us.p99")?.integer == record.latency.valueAtPercentile(99))
        #expect(s.value(atPath: "throughput.achieved_rps")?.number == 1000)
        // It parses back to the same document.
        #expect(try JSONValue.parse(s.render()) == s)
    }

    @Test func readerReassemblesTheRecordExactly() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let record = Fixtures.sampleRecord()
        let folder = try ResultsWriter.write(record, root: root)
        let loaded = try LoadedRun.load(folder.path)
        let r = loaded.record
        #expect(loaded.runID == "20261129-120000-fixture")
        #expect(r.label == "fixture")
        #expect(r.startedAt == record.startedAt)
        #expect(r.config == record.config)
        #expect(r.counts == record.counts)
        #expect(r.measuredSeconds == record.measuredSeconds)
        #expect(r.latency.hasSameCounts(as: record.latency))
        #expect(r.serviceTime.hasSameCounts(as: record.serviceTime))
        #expect(r.intervals == TimelineInterval.merged(record.intervals))
        #expect(r.extra.map(\.0) == ["warmup", "backlog_max"])
        // A summary.json file alone is enough for compare.
        let fromFile = try LoadedRun.load(folder.appendingPathComponent("summary.json").path)
        #expect(fromFile.record.latency.hasSameCounts(as: record.latency))
        #expect(fromFile.record.intervals.isEmpty)
    }

    @Test func latestPointsAtTheNewestRunAndHistoryGetsOneRowPerRun() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let a = try ResultsWriter.write(Fixtures.record(label: "a b/c"), root: root)
        let b = try ResultsWriter.write(Fixtures.record(label: "a b/c"), root: root)
        #expect(a.lastPathComponent == "20261129-120000-a-b-c")
        #expect(b.lastPathComponent == "20261129-120000-a-b-c-2")
        let target = try FileManager.default.destinationOfSymbolicLink(atPath: root.appendingPathComponent("latest").path)
        #expect(target == "20261129-120000-a-b-c-2")
        let history = try Fixtures.text(root.appendingPathComponent("history.csv")).split(separator: "\n")
        #expect(history.count == 3)
        #expect(history[0] == Substring(ResultsWriter.historyHeader))
        let rows = try ReportChart.parseHistory(history.joined(separator: "\n"))
        #expect(rows.map(\.runID) == ["20261129-120000-a-b-c", "20261129-120000-a-b-c-2"])
        #expect(rows[0].achievedRPS == 1000)
        #expect(rows[0].p99 == Double(Fixtures.record().latency.valueAtPercentile(99)))
    }

    @Test func hgrmIsTheJavaLayoutInMilliseconds() throws {
        let h = HdrHistogram.latencyMicroseconds()
        for v in 1...10_000 { h.record(Int64(v)) }
        let text = h.percentileDistribution(outputValueUnitScalingRatio: 1000)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines[0] == "       Value     Percentile TotalCount 1/(1-Percentile)")
        #expect(lines[1] == "")
        #expect(lines[2] == "       0.001 0.000000000000          1           1.00")
        #expect(lines[3] == "       1.000 0.100000000000       1000           1.11")
        // The plotter keeps rows with exactly 4 space-separated fields and no tabs.
        #expect(!text.contains("\t"))
        let body = lines.filter { !$0.hasPrefix("#") && $0.split(separator: " ").count == 4 }
        #expect(body.count > 20)
        let last = lines.last { $0.split(separator: " ").count == 3 && !$0.hasPrefix("#") }
        #expect(last == "      10.007 1.000000000000      10000")
        #expect(text.contains("#[Mean    =        5.001, StdDeviation   =        2.887]"))
        #expect(text.contains("#[Max     =       10.007, Total count    =        10000]"))
        #expect(text.contains("#[Buckets =           22, SubBuckets     =         2048]"))
    }

    @Test func aBrokenLatestSaysTheRunWasStillWritten() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root.appendingPathComponent("latest/occupied"), withIntermediateDirectories: true)
        do {
            try ResultsWriter.write(Fixtures.sampleRecord(), root: root)
            Issue.record("a directory named latest was replaced")
        } catch let e as ResultsError {
            #expect(e.description.contains("latest: cannot point at 20261129-120000-fixture"))
            #expect(e.description.hasSuffix("(the run itself was written to \(root.appendingPathComponent("20261129-120000-fixture").path))"))
        }
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("20261129-120000-fixture/summary.json").path))
    }

    @Test func writeErrorsNameTheFile() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let blocker = root.appendingPathComponent("file")
        try Data("x".utf8).write(to: blocker)
        #expect(throws: ResultsError.self) { try ResultsWriter.write(Fixtures.sampleRecord(), root: blocker) }
        do {
            try ResultsWriter.write(Fixtures.sampleRecord(), root: blocker)
        } catch let e as ResultsError {
            #expect(e.description.contains(blocker.path))
        }
    }
}

@Suite struct EdgeCaseTests {
    @Test func anEmptyInterruptedClosedLoopRunIsStillWrittenAndReadable() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        var r = RunRecord(label: "empty", startedAt: Fixtures.start, config: RunConfig(rps: nil))
        r.interrupted = true
        let folder = try ResultsWriter.write(r, root: root)
        let s = try JSONValue.parse(Fixtures.text(folder.appendingPathComponent("summary.json")))
        #expect(s.value(atPath: "config.rps") == .string("max"))
        #expect(s.value(atPath: "throughput.target_rps") == .null)
        #expect(s.value(atPath: "throughput.achieved_rps")?.number == 0)
        #expect(s["interrupted"] == .bool(true))
        #expect(s.value(atPath: "latency_us.p99")?.integer == 0)
        let svg = try Fixtures.text(folder.appendingPathComponent("report.svg"))
        #expect(svg.contains("no per-second data") && svg.contains("(interrupted)") && !svg.contains("nan"))
        #expect(try Fixtures.text(root.appendingPathComponent("history.csv")).contains(",empty,zerocopy,max,0.0,0,0,0,0,0.000,apns,embedded\n"))
        let back = try LoadedRun.load(folder.path, requireIntervals: true)
        #expect(back.record.latency.totalCount == 0 && back.record.config.rps == nil)
        #expect(CompareTool.run(base: folder.path, new: folder.path).status == 0)
        _ = try RunReport.redraw(folder.path)
        let merged = root.appendingPathComponent("m")
        try RunMerger.mergeFolders([folder.path], out: merged)
        #expect(try LoadedRun.load(merged.path).record.interrupted)
    }
}
