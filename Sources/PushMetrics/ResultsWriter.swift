import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A results file that could not be written or read, naming the file and the reason.
public struct ResultsError: Error, CustomStringConvertible {
    /// The file and what was wrong with it.
    public let description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}

/// Writes a run folder: summary.json, latency.hgrm, latency.hlog, service_time.hlog,
/// timeline.csv, report.svg and report.html; then points `<root>/latest` at it and appends a
/// row to `<root>/history.csv`.
public enum ResultsWriter {
    /// Names of the files in a run folder.
    public enum File {
        /// Config, counts, throughput, percentiles, cpu, memory, whole-run histograms.
        public static let summary = "summary.json"
        /// Percentile distribution of corrected latency (ms).
        public static let hgrm = "latency.hgrm"
        /// Interval log of corrected latency (µs, one histogram per second).
        public static let hlog = "latency.hlog"
        /// Interval log of service time (µs, one histogram per second).
        public static let serviceHlog = "service_time.hlog"
        /// One row per second.
        public static let timeline = "timeline.csv"
        /// The charts.
        public static let svg = "report.svg"
        /// The charts and tables.
        public static let html = "report.html"
    }

    /// Writes `record` into a new folder `<root>/<run id>` and returns its URL. The run id is
    /// `YYYYMMDD-HHMMSS-<label>` (UTC), with `-2`, `-3`… appended if the folder already exists.
    @discardableResult
    public static func write(_ record: RunRecord, root: URL) throws -> URL {
        let fm = FileManager.default
        try createDirectory(root)
        let base = runID(startedAt: record.startedAt, label: record.label)
        var id = base
        var n = 2
        while fm.fileExists(atPath: root.appendingPathComponent(id).path) {
            id = "\(base)-\(n)"
            n += 1
        }
        let folder = root.appendingPathComponent(id)
        try writeFolder(record, runID: id, to: folder)
        do {
            try pointLatest(root: root, at: id)
            try appendHistory(root: root, runID: id, record: record)
        } catch let e as ResultsError {
            // The measurements are safe on disk; say so, so nobody reruns for nothing.
            throw ResultsError("\(e.description) (the run itself was written to \(folder.path))")
        }
        return folder
    }

    /// The run id for a start time and label: `YYYYMMDD-HHMMSS-<label>` in UTC.
    public static func runID(startedAt: Date, label: String) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd-HHmmss"
        let clean = String(label.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "-" })
        return "\(f.string(from: startedAt))-\(clean.isEmpty ? "run" : clean)"
    }

    /// Writes every file of a run folder into `folder` (created if needed), without touching
    /// `latest` or history.csv (merge and report use this).
    public static func writeFolder(_ record: RunRecord, runID: String, to folder: URL) throws {
        try createDirectory(folder)
        let merged = TimelineInterval.merged(record.intervals)
        let summary = summaryJSON(record, runID: runID)
        try save(summary.render(), folder.appendingPathComponent(File.summary))
        try save(record.latency.percentileDistribution(outputValueUnitScalingRatio: 1000), folder.appendingPathComponent(File.hgrm))
        let start = record.startedAt.timeIntervalSince1970
        try save(intervalLog(merged, start: start, measured: record.measuredSeconds, \.latency)
                    .render(comment: "Logged with pushbench \(record.version): corrected latency, microseconds"),
                 folder.appendingPathComponent(File.hlog))
        try save(intervalLog(merged, start: start, measured: record.measuredSeconds, \.serviceTime)
                    .render(comment: "Logged with pushbench \(record.version): service time, microseconds"),
                 folder.appendingPathComponent(File.serviceHlog))
        try save(timelineCSV(merged), folder.appendingPathComponent(File.timeline))
        let title = ReportTitle(runID: runID, record: record)
        try save(ReportChart.runSVG(record: record, intervals: merged, title: title), folder.appendingPathComponent(File.svg))
        try save(ReportChart.runHTML(record: record, intervals: merged, title: title, summary: summary), folder.appendingPathComponent(File.html))
    }

    // MARK: summary.json

    /// The summary.json document of a run.
    public static func summaryJSON(_ r: RunRecord, runID: String) -> JSONValue {
        var m: [(String, JSONValue)] = [
            ("run_id", .string(runID)),
            ("started_at", .string(iso8601(r.startedAt))),
            ("tool", .string("pushbench")),
            ("version", .string(r.version)),
            ("interrupted", .bool(r.interrupted)),
            ("config", r.config.json),
            ("requests", r.counts.json),
            ("throughput", .object([
                ("target_rps", r.targetRPS.map { .double(round3($0)) } ?? r.config.rps.map { .int(Int64($0)) } ?? .null),
                ("achieved_rps", .double(round3(r.achievedRPS))),
                ("measured_s", .double(round3(r.measuredSeconds))),
            ])),
            ("latency_us", latencyJSON(r.latency)),
            ("service_time_us", latencyJSON(r.serviceTime)),
            ("cpu", .object([("user_s", .double(round3(r.cpuUserSeconds))), ("sys_s", .double(round3(r.cpuSystemSeconds)))])),
            ("max_rss_bytes", .int(r.maxRSSBytes)),
        ]
        m += r.details.members
        let reserved = Set(m.map(\.0) + ["histograms"])
        m += r.extra.filter { !reserved.contains($0.0) }
        // The whole-run histograms, exactly, so compare/merge never depend on the rounded .hgrm.
        m.append(("histograms", .object([
            ("latency_us", .string(HistogramCodec.encodeBase64(r.latency))),
            ("service_time_us", .string(HistogramCodec.encodeBase64(r.serviceTime))),
        ])))
        return .object(m)
    }

    /// The percentile block of summary.json for a µs histogram.
    public static func latencyJSON(_ h: HdrHistogram) -> JSONValue {
        .object([
            ("min", .int(h.min)), ("p50", .int(h.valueAtPercentile(50))), ("p90", .int(h.valueAtPercentile(90))),
            ("p99", .int(h.valueAtPercentile(99))), ("p999", .int(h.valueAtPercentile(99.9))),
            ("max", .int(h.max)), ("mean", .double(round3(h.mean))),
            ("p9999", .int(h.valueAtPercentile(99.99))), ("stddev", .double(round3(h.standardDeviation))),
            ("count", .int(h.totalCount)),
        ])
    }

    // MARK: timeline.csv and .hlog

    /// Header of timeline.csv.
    public static let timelineHeader = "second,sent,completed,ok,errors,transport_errors,p50_us,p99_us,max_us,steal_ms,target"

    /// timeline.csv text: one row per second; `errors` = non-2xx responses + transport errors; `steal_ms`
    /// empty where unknown; `target` the requests the schedule intended in that second, empty without one.
    public static func timelineCSV(_ merged: [TimelineInterval]) -> String {
        var out = timelineHeader + "\n"
        for i in merged {
            let h = i.latency.decode()
            out += "\(i.second),\(i.sent),\(i.completed),\(i.succeeded),\(i.failed + i.transportErrors),\(i.transportErrors),"
            out += "\(h.valueAtPercentile(50)),\(h.valueAtPercentile(99)),\(h.max),\(i.stealMs.map(String.init) ?? ""),"
            out += "\(i.target.map(String.init) ?? "")\n"
        }
        return out
    }

    static func intervalLog(_ merged: [TimelineInterval], start: Double, measured: Double,
                            _ key: KeyPath<TimelineInterval, EncodedHistogram>) -> IntervalLog {
        IntervalLog(startTime: start, baseTime: start, intervals: merged.map { i in
            let remaining = measured - Double(i.second)
            let length = measured > 0 && remaining > 0 && remaining < 1 ? remaining : 1
            return IntervalLog.Interval(startOffset: Double(i.second), length: length, histogram: i[keyPath: key])
        })
    }

    // MARK: latest and history.csv

    /// Header of history.csv.
    public static let historyHeader = ReportChart.HistoryRow.csvHeader

    static func appendHistory(root: URL, runID: String, record r: RunRecord) throws {
        try HistoryFile.append(ReportChart.HistoryRow(runID: runID, record: r), to: root.appendingPathComponent("history.csv"))
    }

    static func pointLatest(root: URL, at id: String) throws {
        try pointLink("latest", root: root, at: id)
    }

    /// Points the symlink `root/name` at the folder `id` (relative), replacing what it pointed at.
    static func pointLink(_ name: String, root: URL, at id: String) throws {
        let latest = root.appendingPathComponent(name).path
        let temp = root.appendingPathComponent(".\(name)-\(getpid())").path
        unlink(temp)
        // A relative link keeps working when the results folder is moved or mounted elsewhere;
        // rename(2) replaces an old link atomically.
        guard symlink(id, temp) == 0, rename(temp, latest) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temp)
            throw ResultsError("\(latest): cannot point at \(id): \(reason)")
        }
    }

    // MARK: helpers

    static func createDirectory(_ url: URL) throws {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            throw ResultsError("\(url.path): cannot create directory: \(error.localizedDescription)")
        }
    }

    static func save(_ text: String, _ url: URL) throws {
        do {
            try Data(text.utf8).write(to: url, options: .atomic)
        } catch {
            throw ResultsError("\(url.path): cannot write: \(error.localizedDescription)")
        }
    }

    static func iso8601(_ d: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        f.timeZone = TimeZone(identifier: "UTC")
        return f.string(from: d)
    }

    static func parseISO8601(_ s: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = f.date(from: s) { return d }
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: s)
    }

    static func round3(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }
}
