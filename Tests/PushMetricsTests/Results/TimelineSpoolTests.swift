import Foundation
import Testing
@testable import PushMetrics

/// The per-second results streamed to the run folder as each second closes (TimelineMerger, TimelineSpool):
/// the final files are byte for byte those of the in-memory writer, and a run of any length holds only a
/// few seconds in memory.
@Suite struct TimelineSpoolTests {
    /// Streams `record`'s per-thread intervals (thread order within each second, as driver threads hand
    /// them over) through a merger into a spool in a reserved folder under `root`; returns the spool and the
    /// most seconds merger and spool held at once.
    static func stream(_ record: RunRecord, threads: Int, root: URL) throws -> (TimelineSpool, Int) {
        let folder = try ResultsWriter.reserveFolder(root: root, startedAt: record.startedAt, label: record.label)
        let spool = try TimelineSpool(folder: folder, startedAt: record.startedAt, version: record.version)
        var merger = TimelineMerger(sources: threads)
        let perThread = record.intervals.count / threads
        var most = 0
        for s in 0..<perThread {
            for t in 0..<threads {
                merger.add(record.intervals[t * perThread + s], from: t)
                for i in merger.takeReady() { spool.append(i) }
                most = max(most, merger.retained + spool.retainedIntervals)
            }
        }
        for t in 0..<threads { merger.end(source: t) }
        for i in merger.takeReady() { spool.append(i) }
        #expect(merger.retained == 0)
        return (spool, most)
    }

    @Test func streamedRunFolderMatchesTheGoldenFiles() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        var record = Fixtures.sampleRecord()
        let (spool, _) = try Self.stream(record, threads: 2, root: root)
        #expect(spool.secondsOnDisk == 10)
        // While the run lasts the folder holds the partial files, valid as they are.
        let partial = spool.folder.appendingPathComponent("timeline.csv.partial")
        #expect(try TimelineRow.read(partial).count == 10)
        #expect(try IntervalLog.parse(Fixtures.text(spool.folder.appendingPathComponent("latency.hlog.partial"))).intervals.count == 10)
        record.intervals = []   // the spool's seconds are the ones written
        let folder = try ResultsWriter.write(record, root: root, spool: spool)
        #expect(folder.path == spool.folder.path)
        #expect(folder.lastPathComponent == "20261129-120000-fixture")
        for f in ResultsWriterTests.files {
            try Golden.check(try Fixtures.text(folder.appendingPathComponent(f)), "golden-run/\(f)")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(left.sorted() == ResultsWriterTests.files.sorted(), "no partial or temporary file is left")
    }

    /// A run that ends part-way through a second (its .hlog length) with a drain second after it, steal
    /// on some seconds and a schedule's target: every file as the in-memory writer makes it.
    @Test func aPartialSecondAndADrainComeOutAsTheInMemoryWriterWritesThem() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        var record = Fixtures.record(label: "partial", threads: [0, 1, 2], seconds: 7, rate: 200)
        record.measuredSeconds = 5.437
        for k in record.intervals.indices {
            record.intervals[k].target = 200
            if record.intervals[k].second == 6 { record.intervals[k].stealMs = nil }
        }
        let memory = root.appendingPathComponent("memory")
        try ResultsWriter.writeFolder(record, runID: "r", to: memory)
        let (spool, most) = try Self.stream(record, threads: 3, root: root)
        #expect(most <= 3)
        let streamed = root.appendingPathComponent("streamed")
        record.intervals = []
        try ResultsWriter.writeFolder(record, runID: "r", to: streamed, spool: spool)
        for f in ResultsWriterTests.files {
            let a = try Fixtures.text(memory.appendingPathComponent(f)), b = try Fixtures.text(streamed.appendingPathComponent(f))
            #expect(a == b, "\(f) differs")
        }
        #expect(try Fixtures.text(streamed.appendingPathComponent("latency.hlog")).contains(",0.437,"))
        // Written elsewhere (the fallback), the run folder it streamed to is left empty, and removed.
        spool.discard()
        #expect(!FileManager.default.fileExists(atPath: spool.folder.path))
    }

    /// 30,000 seconds (more than eight hours) through the merger and the spool: at no point do they hold
    /// more than a few seconds, the files hold every second, and the rows read back for the charts match.
    @Test func thirtyThousandSecondsHoldOnlyAFewInMemory() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        let seconds = 30_000, threads = 2
        // Small histograms (up to 10 ms, 2 digits): decoding them for each row costs little in a debug build.
        let h = try HdrHistogram(lowestDiscernibleValue: 1, highestTrackableValue: 10_000, significantDigits: 2)
        for v in 0..<50 { h.record(Int64(400 + v * 3)) }
        let encoded = EncodedHistogram(h)
        let start = Date(timeIntervalSince1970: 1_795_953_600)
        let folder = try ResultsWriter.reserveFolder(root: root, startedAt: start, label: "soak")
        let spool = try TimelineSpool(folder: folder, startedAt: start, version: "0.1.0")
        var merger = TimelineMerger(sources: threads)
        var most = 0
        // The threads take turns closing a second (so the test spends no time merging histograms); a second
        // waits for the thread behind it.
        for s in 0..<seconds {
            merger.add(TimelineInterval(second: s, sent: 100, completed: 50, succeeded: 50, failed: 0, transportErrors: 0,
                                        latency: encoded, serviceTime: encoded, stealMs: Int64(s % 3)), from: s % threads)
            for i in merger.takeReady() { spool.append(i) }
            most = max(most, merger.retained + spool.retainedIntervals)
        }
        for t in 0..<threads { merger.end(source: t) }
        for i in merger.takeReady() { spool.append(i) }
        #expect(most <= threads, "held \(most) seconds at most")
        #expect(spool.secondsOnDisk == seconds)
        #expect(spool.retainedIntervals == 0 && merger.retained == 0)
        let out = root.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try spool.finish(into: out, measuredSeconds: Double(seconds) - 0.5, version: "0.1.0")
        let rows = try TimelineRow.read(out.appendingPathComponent("timeline.csv"))
        #expect(rows.count == seconds)
        #expect(rows.map(\.second) == Array(0..<seconds))
        #expect(rows.allSatisfy { $0.sent == 100 && $0.completed == 50 && $0.latency?.p50 == h.valueAtPercentile(50) })
        let log = try IntervalLog.parse(Fixtures.text(out.appendingPathComponent("service_time.hlog")))
        #expect(log.intervals.count == seconds)
        #expect(log.intervals.last?.length == 0.5)
        #expect(log.intervals.dropLast().allSatisfy { $0.length == 1 })
    }

    /// The merger lets a second go only when every thread still running has passed it.
    @Test func aSecondWaitsForTheSlowestThread() {
        let h = EncodedHistogram(HdrHistogram.latencyMicroseconds())
        func second(_ s: Int, sent: Int64) -> TimelineInterval {
            TimelineInterval(second: s, sent: sent, completed: 0, succeeded: 0, failed: 0, transportErrors: 0, latency: h, serviceTime: h)
        }
        var m = TimelineMerger(sources: 3)
        m.add(second(0, sent: 1), from: 0)
        m.add(second(1, sent: 1), from: 0)
        m.add(second(0, sent: 2), from: 1)
        #expect(m.takeReady().isEmpty, "thread 2 has closed nothing yet")
        m.add(second(0, sent: 4), from: 2)
        #expect(m.takeReady().map(\.sent) == [7])
        m.end(source: 2)
        #expect(m.takeReady().isEmpty, "thread 1 may still add to second 1")
        m.add(second(1, sent: 2), from: 1)
        #expect(m.takeReady().map(\.sent) == [3])
        m.add(second(2, sent: 2), from: 1)
        #expect(m.takeReady(all: true).map(\.second) == [2])
        #expect(m.retained == 0)
    }

    /// A write that fails (here: the partial files taken away under the spool) keeps every later second
    /// in memory, and the final files still hold them all.
    @Test func secondsAfterAFailedWriteAreHeldAndWritten() throws {
        let root = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: root) }
        var record = Fixtures.record(label: "full", threads: [0], seconds: 6, rate: 100)
        let folder = try ResultsWriter.reserveFolder(root: root, startedAt: record.startedAt, label: record.label)
        let spool = try TimelineSpool(folder: folder, startedAt: record.startedAt, version: record.version)
        for i in record.intervals.prefix(2) { spool.append(i) }
        try spool.failNextWrites()
        for i in record.intervals.dropFirst(2) { spool.append(i) }
        #expect(spool.secondsOnDisk == 2)
        #expect(spool.held.count == 4)
        #expect(spool.failure?.contains("no space left on device") == true, "\(spool.failure ?? "")")
        // The files on disk were taken back to the last whole second.
        #expect(try TimelineRow.read(folder.appendingPathComponent("timeline.csv.partial")).count == 2)
        #expect(try IntervalLog.parse(Fixtures.text(folder.appendingPathComponent("latency.hlog.partial"))).intervals.count == 2)
        let memory = root.appendingPathComponent("memory")
        try ResultsWriter.writeFolder(record, runID: "r", to: memory)
        let streamed = root.appendingPathComponent("streamed")
        record.intervals = []
        try ResultsWriter.writeFolder(record, runID: "r", to: streamed, spool: spool)
        for f in ResultsWriterTests.files {
            #expect(try Fixtures.text(memory.appendingPathComponent(f)) == Fixtures.text(streamed.appendingPathComponent(f)), "\(f) differs")
        }
    }
}
