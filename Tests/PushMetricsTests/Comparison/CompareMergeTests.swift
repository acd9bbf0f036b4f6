import Foundation
import PushVocabulary
import Testing
@testable import PushMetrics

@Suite struct RunComparisonTests {
    static func summary(_ r: RunRecord) -> JSONValue { ResultsWriter.summaryJSON(r, runID: "run") }

    /// A copy of `s` with the numbers at `changes` (dotted paths) replaced.
    static func tweak(_ s: JSONValue, _ changes: [String: JSONValue]) -> JSONValue {
        var out = s
        for (path, v) in changes {
            let parts = path.split(separator: ".").map(String.init)
            var block = out[parts[0]]!
            block.set(parts[1], v)
            out.set(parts[0], block)
        }
        return out
    }

    @Test func identicalRunsPass() {
        let s = Self.summary(Fixtures.sampleRecord())
        let c = RunComparison(base: s, new: s)
        #expect(!c.regressed)
        #expect(c.rows.allSatisfy { $0.verdict == .same })
    }

    @Test func betterRunsPass() {
        let s = Self.summary(Fixtures.sampleRecord())
        let better = Self.tweak(s, ["throughput.achieved_rps": .double(1100), "latency_us.p99": .int(900),
                                    "latency_us.p999": .int(1000), "latency_us.p50": .int(500)])
        let c = RunComparison(base: s, new: better)
        #expect(!c.regressed)
        #expect(c.rows.first { $0.metric.name == "p99" }?.verdict == .better)
        #expect(c.rows.first { $0.metric.name == "achieved_rps" }?.verdict == .better)
    }

    @Test func worseRunsFailOnlyPastTheirThresholds() {
        let s = Self.summary(Fixtures.sampleRecord())
        let p99 = s.value(atPath: "latency_us.p99")!.number!
        // +5% p99 is within the default 10%.
        let slightly = Self.tweak(s, ["latency_us.p99": .int(Int64(p99 * 1.05))])
        #expect(!RunComparison(base: s, new: slightly).regressed)
        #expect(RunComparison(base: s, new: slightly).rows.first { $0.metric.name == "p99" }?.verdict == .worse)
        // ... but not within an explicit 3%.
        #expect(RunComparison(base: s, new: slightly, thresholds: ["p99": 3]).regressed)
        // -3% throughput is past the default 2%.
        let slower = Self.tweak(s, ["throughput.achieved_rps": .double(970)])
        #expect(RunComparison(base: s, new: slower).regressed)
        // Any rise in transport errors fails, from zero too.
        let errs = s.value(atPath: "requests.transport_errors")!.integer!
        #expect(RunComparison(base: s, new: Self.tweak(s, ["requests.transport_errors": .int(errs + 1)])).regressed)
        let zero = Self.tweak(s, ["requests.transport_errors": .int(0)])
        #expect(RunComparison(base: zero, new: Self.tweak(s, ["requests.transport_errors": .int(1)])).regressed)
        // Ungated metrics never fail the comparison.
        #expect(!RunComparison(base: s, new: Self.tweak(s, ["latency_us.max": .int(99_999_999)])).regressed)
    }

    @Test func renderingNamesTheRegression() {
        let s = Self.summary(Fixtures.sampleRecord())
        let worse = Self.tweak(s, ["latency_us.p99": .int(5_000)])
        let c = RunComparison(base: s, new: worse, baseName: "base", newName: "new")
        let text = c.render(markdown: false)
        #expect(text.hasPrefix("compare: 1 regression: p99\nBASE: base\nNEW:  new\n"))
        #expect(text.contains("REGRESSION"))
        let md = c.render(markdown: true)
        #expect(md.hasPrefix("### pushbench compare: ❌ 1 regression: p99"))
        #expect(md.contains("| latency p99 (µs) | 1,220 | 5,000 | +309.84% | +10% | **REGRESSION** |"))
    }

    @Test func configDifferencesAreNoted() {
        let a = Fixtures.sampleRecord()
        var b = Fixtures.sampleRecord()
        b.config.encoder = "copy"
        let c = RunComparison(base: Self.summary(a), new: Self.summary(b))
        #expect(c.notes == ["config encoder differs: zerocopy vs copy"])
    }

    @Test func thresholdSpecsAreValidated() throws {
        #expect(try RunComparison.parseThreshold("p99=5") == ("p99", 5))
        #expect(try RunComparison.parseThreshold("p99.9=20%") == ("p999", 20))
        #expect(try RunComparison.parseThreshold("achieved_rps=1.5") == ("achieved_rps", 1.5))
        for bad in ["p99", "p98=5", "p99=x", "p99=-1", "=5"] {
            #expect(throws: RunComparison.ThresholdError.self) { try RunComparison.parseThreshold(bad) }
        }
    }
}

@Suite struct CompareToolTests {
    @Test func exitCodesForIdenticalBetterWorseAndBadInput() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let base = try ResultsWriter.write(Fixtures.record(label: "base"), root: root)
        let same = try ResultsWriter.write(Fixtures.record(label: "same"), root: root)
        let better = try ResultsWriter.write(Fixtures.record(label: "better", rate: 550), root: root)
        let worse = try ResultsWriter.write(Fixtures.record(label: "worse", slowSecond: 4), root: root)
        #expect(CompareTool.run(base: base.path, new: same.path).status == 0)
        #expect(CompareTool.run(base: base.path, new: better.path).status == 0)
        let w = CompareTool.run(base: base.path, new: worse.appendingPathComponent("summary.json").path, markdown: true)
        #expect(w.status == 1)
        #expect(w.output.contains("**REGRESSION**"))
        #expect(CompareTool.run(base: base.path, new: worse.path, thresholdSpecs: ["p99=100000", "p999=100000"]).status == 0)

        let missing = CompareTool.run(base: base.path, new: root.appendingPathComponent("nope").path)
        #expect(missing.status == 2)
        #expect(missing.error?.contains("nope: no such file or directory") == true)
        let junk = root.appendingPathComponent("junk.json")
        try Data("{\"run_id\": 1,".utf8).write(to: junk)
        let bad = CompareTool.run(base: junk.path, new: base.path)
        #expect(bad.status == 2)
        #expect(bad.error?.contains("junk.json: not valid JSON") == true)
        let other = root.appendingPathComponent("other.json")
        try Data("{\"hello\": 1}".utf8).write(to: other)
        #expect(CompareTool.run(base: base.path, new: other.path).error?.contains("other.json: missing key \"run_id\"") == true)
        let t = CompareTool.run(base: base.path, new: same.path, thresholdSpecs: ["p99=lots"])
        #expect(t.status == 2)
        #expect(t.error?.hasPrefix("--threshold: 'p99=lots'") == true)
    }
}

@Suite struct RunMergerTests {
    @Test func mergingTwoHalvesOfARunEqualsTheWhole() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let whole = Fixtures.record(label: "whole", threads: [0, 1])
        let a = try ResultsWriter.write(Fixtures.record(label: "agentA", threads: [0]), root: root)
        let b = try ResultsWriter.write(Fixtures.record(label: "agentB", threads: [1]), root: root)
        let out = root.appendingPathComponent("merged")
        try RunMerger.mergeFolders([a.path, b.path], out: out)
        let merged = try LoadedRun.load(out.path).record
        #expect(merged.counts == whole.counts)
        #expect(merged.latency.hasSameCounts(as: whole.latency))
        #expect(merged.serviceTime.hasSameCounts(as: whole.serviceTime))
        #expect(merged.intervals == TimelineInterval.merged(whole.intervals))
        #expect(merged.measuredSeconds == whole.measuredSeconds)
        #expect(merged.achievedRPS == whole.achievedRPS)
        #expect(merged.config.rps == whole.config.rps)
        // The per-second files are the whole run's files.
        let wholeDir = try ResultsWriter.write(whole, root: root)
        for f in ["timeline.csv", "latency.hgrm"] {
            #expect(try Fixtures.text(out.appendingPathComponent(f)) == Fixtures.text(wholeDir.appendingPathComponent(f)), "\(f)")
        }
        let ws = try JSONValue.parse(Fixtures.text(wholeDir.appendingPathComponent("summary.json")))
        let ms = try JSONValue.parse(Fixtures.text(out.appendingPathComponent("summary.json")))
        for k in ["requests", "latency_us", "service_time_us", "histograms"] { #expect(ws[k] == ms[k], "\(k)") }
        #expect(ms.value(atPath: "throughput.achieved_rps") == ws.value(atPath: "throughput.achieved_rps"))
    }

    @Test func throughputIsOverTheUnionOfTime() throws {
        let a = Fixtures.record(label: "a", threads: [0], seconds: 10)
        var b = Fixtures.record(label: "b", threads: [1], seconds: 10)
        b.startedAt = a.startedAt.addingTimeInterval(5)
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let runs = try [a, b].map { try LoadedRun.load(ResultsWriter.write($0, root: root).path, requireIntervals: true) }
        let m = try RunMerger.merge(runs)
        #expect(m.measuredSeconds == 15)
        #expect(m.achievedRPS == Double(a.counts.completed + b.counts.completed) / 15)
        #expect(m.intervals.map(\.second) == Array(0..<15))
        #expect(m.intervals[5].completed == a.intervals[5].completed + b.intervals[0].completed)
        #expect(m.intervals[0].completed == a.intervals[0].completed)
        #expect(RunMerger.unionLength([(0, 10), (20, 25), (5, 12)]) == 17)
    }

    @Test func badInputIsRefusedWithTheFileNamed() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let a = try ResultsWriter.write(Fixtures.record(label: "a", threads: [0]), root: root)
        let out = root.appendingPathComponent("m")
        func message(_ body: () throws -> Void) -> String {
            do { try body(); return "" } catch { return "\(error)" }
        }
        #expect(message { try RunMerger.mergeFolders([a.path, a.path], out: out) }.contains("each run may be merged once"))
        #expect(message { try RunMerger.mergeFolders([a.path, root.appendingPathComponent("nope").path], out: out) }.contains("nope: no such file"))
        #expect(message { try RunMerger.mergeFolders([a.appendingPathComponent("summary.json").path], out: out) }.contains("a run folder is needed"))
        #expect(message { try RunMerger.mergeFolders([a.path], out: a) }.contains("not empty"))
    }
}

/// timeline.csv's `steal_ms`: written per second, read back, optional, and merged as a maximum.
@Suite struct TimelineStealTests {
    @Test func stealRoundTripsThroughTimelineCSV() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let record = Fixtures.record(label: "steal")
        let folder = try ResultsWriter.write(record, root: root)
        let loaded = try LoadedRun.load(folder.path, requireIntervals: true)
        let written = TimelineInterval.merged(record.intervals).map(\.stealMs)
        #expect(written.allSatisfy { $0 != nil })
        #expect(loaded.record.intervals.map(\.stealMs) == written)
    }

    @Test func anEmptyOrMissingStealColumnReadsAsUnknown() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = try ResultsWriter.write(Fixtures.record(label: "partly-known"), root: root)
        let csv = folder.appendingPathComponent("timeline.csv")
        var lines = try String(contentsOf: csv, encoding: .utf8).split(separator: "\n").map(String.init)
        // Second 2 lost its value: its steal_ms field is empty.
        let column = try #require(lines[0].split(separator: ",").firstIndex(of: "steal_ms"))
        var fields = lines[3].split(separator: ",", omittingEmptySubsequences: false)
        fields[column] = ""
        lines[3] = fields.joined(separator: ",")
        try (lines.joined(separator: "\n") + "\n").write(to: csv, atomically: false, encoding: .utf8)
        let steal = try LoadedRun.load(folder.path, requireIntervals: true).record.intervals.map(\.stealMs)
        #expect(steal[2] == nil)
        #expect(steal[1] != nil && steal[3] != nil)
        // A folder from before the column existed.
        let old = try LoadedRun.load(Fixtures.fixtureURL("handmade-run").path, requireIntervals: true)
        #expect(!old.record.intervals.isEmpty)
        #expect(old.record.intervals.allSatisfy { $0.stealMs == nil })
    }

    @Test func mergingKeepsTheMostAnyMachineLost() {
        let h = HdrHistogram.latencyMicroseconds()
        func interval(_ steal: Int64?) -> TimelineInterval {
            TimelineInterval(second: 0, sent: 1, completed: 1, succeeded: 1, failed: 0, transportErrors: 0,
                             latency: h, serviceTime: h, stealMs: steal)
        }
        #expect(TimelineInterval.merged([interval(3), interval(10)]).first?.stealMs == 10)
        #expect(TimelineInterval.merged([interval(nil), interval(5)]).first?.stealMs == 5)
        #expect(TimelineInterval.merged([interval(nil), interval(nil)]).first?.stealMs == nil)
    }
}

/// compare notes when one run lost much more CPU time to the host than the other.
@Suite struct CompareStealNoteTests {
    private func summary(steal: Double?) throws -> JSONValue {
        let machine = steal.map { #", "machine": {"steal_ms": \#($0)}"# } ?? ""
        return try JSONValue.parse(#"{"latency_us": {"p99": 900}\#(machine)}"#)
    }

    @Test func aNoisierRunIsNamedInANote() throws {
        let c = RunComparison(base: try summary(steal: 10), new: try summary(steal: 310), baseName: "a", newName: "b")
        let note = try #require(c.notes.first { $0.contains("stole") })
        #expect(note.contains("10 ms") && note.contains("310 ms") && note.contains("b's machine"), "\(note)")
        let reverse = RunComparison(base: try summary(steal: 400), new: try summary(steal: 0), baseName: "a", newName: "b")
        #expect(reverse.notes.contains { $0.contains("a's machine") })
    }

    @Test func similarOrUnknownStealSaysNothing() throws {
        // 10 vs 40 ms: less than 50 ms apart. 100 vs 180: not twice. Unknown on one side: nothing to say.
        for (b, n) in [(10.0, 40.0), (100.0, 180.0)] {
            #expect(!RunComparison(base: try summary(steal: b), new: try summary(steal: n)).notes.contains { $0.contains("stole") })
        }
        #expect(RunComparison(base: try summary(steal: nil), new: try summary(steal: 500)).notes.isEmpty)
    }
}
