import Foundation
import PushVocabulary
import Testing
@testable import PushMetrics

/// Runs python3 with the `hdrhistogram` package (module `hdrh`), the reference this module must agree with.
enum PythonHdrh {
    /// Every python3 on PATH (pyenv shims included), then the system ones.
    static let candidates: [String] = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let dirs = path.split(separator: ":").map(String.init) + ["/usr/local/bin", "/usr/bin"]
        var seen = Set<String>()
        return dirs.map { $0 + "/python3" }.filter { FileManager.default.isExecutableFile(atPath: $0) && seen.insert($0).inserted }
    }()

    /// The first python3 that can import hdrh.
    static let python: String? = candidates.first { (try? run("import hdrh.histogram, hdrh.log", with: $0))?.status == 0 }

    /// Why the interop tests cannot run, or nil when they can. A missing peer fails them (scripts/setup
    /// installs it), never skips them.
    static let unavailableReason: String? = {
        if candidates.isEmpty { return "no python3 on PATH (scripts/setup installs it)" }
        if python == nil {
            return "none of \(candidates.joined(separator: ", ")) can import the hdrhistogram package (scripts/setup, or pip install hdrhistogram)"
        }
        return nil
    }()

    /// Records the missing peer as a failure and stops the test.
    static func require() throws {
        if let reason = unavailableReason {
            Issue.record(Comment(rawValue: reason))
            throw MissingPeer(reason: reason)
        }
    }

    struct MissingPeer: Error { var reason: String }

    static func run(_ script: String, arguments: [String] = [], with interpreter: String? = nil) throws -> (status: Int32, out: String, err: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: interpreter ?? python ?? "/usr/bin/python3")
        p.arguments = ["-c", script] + arguments
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }
}

@Suite struct PythonInteropTests {
    static let percentiles: [Double] = [0, 1, 10, 50, 90, 99, 99.9, 99.99, 100]

    func tempDir() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("pushmetrics-py-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    @Test func pythonDecodesOurIntervalLogAndAgrees() throws {
        try PythonHdrh.require()
        var log = IntervalLog(startTime: 1_764_441_319.474)
        var expected: [HdrHistogram] = []
        for (k, (_, values)) in Distributions.all().enumerated() {
            let h = HdrHistogram.latencyMicroseconds()
            for v in values { h.record(v) }
            log.intervals.append(.init(startOffset: Double(k), length: 1, histogram: EncodedHistogram(h)))
            expected.append(h)
        }
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("run.hlog")
        try Data(log.render().utf8).write(to: file)

        let script = """
        import sys, json
        from hdrh.histogram import HdrHistogram
        from hdrh.log import HistogramLogReader
        ps = json.loads(sys.argv[2])
        r = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3600000000, 3))
        out = []
        while True:
            h = r.get_next_interval_histogram()
            if h is None: break
            out.append({"count": h.get_total_count(), "min": h.get_min_value(), "max": h.get_max_value(),
                        "mean": h.get_mean_value(), "stddev": h.get_stddev(),
                        "start": h.get_start_time_stamp(),
                        "p": [h.get_value_at_percentile(p) for p in ps]})
        print(json.dumps(out))
        """
        let ps = "[" + Self.percentiles.map { "\($0)" }.joined(separator: ",") + "]"
        let r = try PythonHdrh.run(script, arguments: [file.path, ps])
        #expect(r.status == 0, "python failed: \(r.err)")
        let decoded = try JSONValue.parse(r.out)
        guard case .array(let items) = decoded else { Issue.record("python printed \(r.out)"); return }
        #expect(items.count == expected.count)
        for (i, (item, h)) in zip(items, expected).enumerated() {
            #expect(item["count"]?.integer == h.totalCount, "interval \(i) count")
            #expect(item["min"]?.integer == h.min, "interval \(i) min")
            #expect(item["max"]?.integer == h.max, "interval \(i) max")
            #expect(abs((item["mean"]?.number ?? -1) - h.mean) <= 1e-6 * max(1, h.mean), "interval \(i) mean")
            #expect(abs((item["stddev"]?.number ?? -1) - h.standardDeviation) <= 1e-6 * max(1, h.standardDeviation), "interval \(i) stddev")
            // Python stamps absolute milliseconds: StartTime/BaseTime + offset.
            #expect(abs((item["start"]?.number ?? 0) - (1_764_441_319.474 + Double(i)) * 1000) < 1, "interval \(i) start")
            guard case .array(let pv)? = item["p"] else { Issue.record("no percentiles"); continue }
            for (p, v) in zip(Self.percentiles, pv) {
                #expect(v.integer == h.valueAtPercentile(p), "interval \(i) p\(p): python \(v), ours \(h.valueAtPercentile(p))")
            }
        }
    }

    @Test func weDecodePythonsEncodingAndAgree() throws {
        try PythonHdrh.require()
        let script = """
        import sys, json, random
        from hdrh.histogram import HdrHistogram
        random.seed(5)
        ps = json.loads(sys.argv[1])
        cases = [[random.randint(1, 100000) for _ in range(5000)],
                 [int(random.lognormvariate(7, 2)) for _ in range(5000)],
                 [777] * 100 + [3600000000] * 3,
                 []]
        out = []
        for values in cases:
            h = HdrHistogram(1, 3600000000, 3)
            for v in values: h.record_value(v)
            out.append({"blob": h.encode().decode(), "count": h.get_total_count(), "min": h.get_min_value(),
                        "max": h.get_max_value(), "p": [h.get_value_at_percentile(p) for p in ps]})
        print(json.dumps(out))
        """
        let ps = "[" + Self.percentiles.map { "\($0)" }.joined(separator: ",") + "]"
        let r = try PythonHdrh.run(script, arguments: [ps])
        #expect(r.status == 0, "python failed: \(r.err)")
        guard case .array(let items) = try JSONValue.parse(r.out) else { Issue.record("python printed \(r.out)"); return }
        #expect(items.count == 4)
        for (i, item) in items.enumerated() {
            let h = try HistogramCodec.decode(base64: item["blob"]?.string ?? "")
            #expect(h.totalCount == item["count"]?.integer, "case \(i) count")
            #expect(h.min == item["min"]?.integer, "case \(i) min")
            #expect(h.max == item["max"]?.integer, "case \(i) max")
            guard case .array(let pv)? = item["p"] else { continue }
            for (p, v) in zip(Self.percentiles, pv) {
                #expect(h.valueAtPercentile(p) == v.integer, "case \(i) p\(p)")
            }
            // Our re-encoding decodes to the same counts.
            #expect(try HistogramCodec.decode(base64: HistogramCodec.encodeBase64(h)).hasSameCounts(as: h))
        }
    }

    @Test func pythonReadsARunFoldersLogsWithTheSameTotals() throws {
        try PythonHdrh.require()
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let record = Fixtures.sampleRecord()
        let folder = try ResultsWriter.write(record, root: dir)
        let script = """
        import sys, json
        from hdrh.histogram import HdrHistogram
        from hdrh.log import HistogramLogReader
        total = HdrHistogram(1, 3600000000, 3)
        r = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3600000000, 3))
        n = 0
        while True:
            h = r.get_next_interval_histogram()
            if h is None: break
            total.add(h)
            n += 1
        print(json.dumps({"intervals": n, "count": total.get_total_count(), "p99": total.get_value_at_percentile(99),
                          "p50": total.get_value_at_percentile(50), "max": total.get_max_value()}))
        """
        let res = try PythonHdrh.run(script, arguments: [folder.appendingPathComponent("latency.hlog").path])
        #expect(res.status == 0, "python failed: \(res.err)")
        let v = try JSONValue.parse(res.out)
        let whole = record.latency
        #expect(v["intervals"]?.integer == Int64(Set(record.intervals.map(\.second)).count))
        #expect(v["count"]?.integer == whole.totalCount)
        #expect(v["p50"]?.integer == whole.valueAtPercentile(50))
        #expect(v["p99"]?.integer == whole.valueAtPercentile(99))
        #expect(v["max"]?.integer == whole.max)
    }

    /// The .hgrm body and footer, recomputed in Python over the Python package's own histogram with
    /// a transcription of Java's `PercentileIterator` and `outputPercentileDistribution` formats.
    @Test func hgrmMatchesJavasAlgorithmOverPythonsHistogram() throws {
        try PythonHdrh.require()
        let script = """
        import sys, math, io
        from hdrh.histogram import HdrHistogram
        h = HdrHistogram.decode(sys.argv[1])
        scale, ticks, d = 1000.0, 5, 3
        out = io.StringIO()
        out.write("%12s %14s %10s %14s\\n\\n" % ("Value", "Percentile", "TotalCount", "1/(1-Percentile)"))
        total = h.get_total_count()
        idx, running, fresh, level, last = 0, 0, True, 0.0, False
        while True:
            if running >= total:
                if last: break
                level, last = 100.0, True
            emitted = False
            while idx < h.counts_len:
                c = h.get_count_at_index(idx)
                if fresh:
                    running += c; fresh = False
                if c != 0 and 100.0 * running / total >= level:
                    v = h.get_highest_equivalent_value(h.get_value_from_index(idx)) / scale
                    if level != 100.0:
                        out.write(("%12." + str(d) + "f %2.12f %10d %14.2f\\n") % (v, level / 100, running, 1 / (1 - level / 100)))
                        level += 100.0 / (ticks * int(math.pow(2, int(math.log(100.0 / (100.0 - level)) / math.log(2)) + 1)))
                    else:
                        out.write(("%12." + str(d) + "f %2.12f %10d\\n") % (v, level / 100, running))
                    emitted = True
                    break
                idx += 1; fresh = True
            if not emitted: break
        out.write(("#[Mean    = %12.{0}f, StdDeviation   = %12.{0}f]\\n".format(d)) % (h.get_mean_value() / scale, h.get_stddev() / scale))
        out.write(("#[Max     = %12.{0}f, Total count    = %12d]\\n".format(d)) % (h.get_max_value() / scale, total))
        out.write("#[Buckets = %12d, SubBuckets     = %12d]\\n" % (h.bucket_count, h.sub_bucket_count))
        sys.stdout.write(out.getvalue())
        """
        for (name, values) in Distributions.all() {
            let h = HdrHistogram.latencyMicroseconds()
            for v in values { h.record(v) }
            let r = try PythonHdrh.run(script, arguments: [HistogramCodec.encodeBase64(h)])
            #expect(r.status == 0, "python failed: \(r.err)")
            #expect(r.out == h.percentileDistribution(outputValueUnitScalingRatio: 1000), "\(name): .hgrm differs from Java's algorithm over Python's histogram")
        }
    }
}
