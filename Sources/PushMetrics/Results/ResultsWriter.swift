import Foundation
import PushVocabulary

#if canImport(Glibc)
import Glibc
#endif

/// A results file that could not be written or read, naming the file and the reason.
public struct ResultsError: Error, CustomStringConvertible {
    /// The file and what was wrong with it.
    public let description: String
    /// The run folder, when it was written whole and only the bookkeeping beside it (`latest`,
    /// history.csv) failed.
    public var folderWritten: URL?
    /// Creates an error.
    public init(_ description: String, folderWritten: URL? = nil) {
        self.description = description
        self.folderWritten = folderWritten
    }
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
        static let serviceHlog = "service_time.hlog"
        /// One row per second.
        static let timeline = "timeline.csv"
        /// The charts.
        public static let svg = "report.svg"
        /// The charts and tables.
        public static let html = "report.html"
    }

    /// Writes `record` into a new folder `<root>/<run id>` and returns its URL. The run id is
    /// `YYYYMMDD-HHMMSS-<label>` (UTC), with `-2`, `-3`… appended if the folder already exists.
    /// With `spool`, the per-second files come from what it streamed during the run (its folder, when it
    /// is under `root`, becomes the run folder); `record.intervals` is then not read.
    @discardableResult
    public static func write(_ record: RunRecord, root: URL, spool: TimelineSpool? = nil) throws -> URL {
        try createDirectory(root)
        let folder: URL
        if let spool, spool.folder.deletingLastPathComponent().standardizedFileURL.path == root.standardizedFileURL.path {
            folder = spool.folder
        } else {
            folder = try reserveFolder(root: root, startedAt: record.startedAt, label: record.label)
        }
        let id = folder.lastPathComponent
        try writeFolder(record, runID: id, to: folder, spool: spool)
        spool?.discard()
        do {
            try pointLatest(root: root, at: id)
            try appendHistory(root: root, runID: id, record: record)
        } catch let e as ResultsError {
            // The measurements are safe on disk; say so, so nobody reruns for nothing.
            throw ResultsError("\(e.description) (the run itself was written to \(folder.path))", folderWritten: folder)
        }
        return folder
    }

    /// Creates the folder a run about to start will be written to, `<root>/<run id>` (with `-2`, `-3`…
    /// when it exists), so its per-second files can be streamed there while it runs (``TimelineSpool``).
    public static func reserveFolder(root: URL, startedAt: Date, label: String) throws -> URL {
        try createDirectory(root)
        let base = runID(startedAt: startedAt, label: label)
        var id = base
        var n = 2
        while true {
            let folder = root.appendingPathComponent(id)
            if mkdir(folder.path, 0o755) == 0 { return folder }
            guard errno == EEXIST else { throw ResultsError("\(folder.path): cannot create the folder: \(reason(errno))") }
            id = "\(base)-\(n)"
            n += 1
        }
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
    /// `latest` or history.csv (merge and report use this). With `spool`, the per-second files and the
    /// charts come from what it streamed (see ``write(_:root:spool:)``).
    public static func writeFolder(_ record: RunRecord, runID: String, to folder: URL, spool: TimelineSpool? = nil) throws {
        try createDirectory(folder)
        let summary = summaryJSON(record, runID: runID)
        try save(summary.render(), folder.appendingPathComponent(File.summary))
        try save(record.latency.percentileDistribution(outputValueUnitScalingRatio: 1000), folder.appendingPathComponent(File.hgrm))
        let rows: [TimelineRow]
        if let spool {
            try spool.finish(into: folder, measuredSeconds: record.measuredSeconds, version: record.version)
            rows = try TimelineRow.read(folder.appendingPathComponent(File.timeline))
        } else {
            let merged = TimelineInterval.merged(record.intervals)
            let start = record.startedAt.timeIntervalSince1970
            try save(intervalLog(merged, start: start, measured: record.measuredSeconds, \.latency)
                        .render(comment: hlogComment(version: record.version, \.latency)),
                     folder.appendingPathComponent(File.hlog))
            try save(intervalLog(merged, start: start, measured: record.measuredSeconds, \.serviceTime)
                        .render(comment: hlogComment(version: record.version, \.serviceTime)),
                     folder.appendingPathComponent(File.serviceHlog))
            try save(timelineCSV(merged), folder.appendingPathComponent(File.timeline))
            rows = merged.map(TimelineRow.init)
        }
        let title = ReportTitle(runID: runID, record: record)
        try save(ReportChart.runSVG(record: record, rows: rows, title: title), folder.appendingPathComponent(File.svg))
        try save(ReportChart.runHTML(record: record, rows: rows, title: title, summary: summary), folder.appendingPathComponent(File.html))
    }

    /// The first line of a run's .hlog for the histogram at `key`.
    static func hlogComment(version: String, _ key: KeyPath<TimelineInterval, EncodedHistogram>) -> String {
        "Logged with pushbench \(version): " + (key == \TimelineInterval.latency ? "corrected latency" : "service time") + ", microseconds"
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
            ] + rateMembers(r.rate))),
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

    /// `throughput`'s verdict on the rate: `sent_rps`, `rate_kept` and, when it was not kept,
    /// `rate_shortfall` (sender, streams or target).
    static func rateMembers(_ rate: RateOutcome?) -> [(String, JSONValue)] {
        guard let rate else { return [] }
        return [("sent_rps", .double(round3(rate.sentRPS))), ("rate_kept", .bool(rate.kept))]
            + (rate.shortfall.map { [("rate_shortfall", JSONValue.string($0.rawValue))] } ?? [])
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
    static let timelineHeader = "second,sent,completed,ok,errors,transport_errors,p50_us,p99_us,max_us,steal_ms,target"

    /// timeline.csv text: one row per second; `errors` = non-2xx responses + transport errors; `steal_ms`
    /// empty where unknown; `target` the requests the schedule intended in that second, empty without one.
    static func timelineCSV(_ merged: [TimelineInterval]) -> String {
        var out = timelineHeader + "\n"
        for i in merged { out += timelineRow(i) }
        return out
    }

    /// One row of timeline.csv, newline included.
    static func timelineRow(_ i: TimelineInterval) -> String {
        let h = i.latency.decode()
        var out = "\(i.second),\(i.sent),\(i.completed),\(i.succeeded),\(i.failed + i.transportErrors),\(i.transportErrors),"
        out += "\(h.valueAtPercentile(50)),\(h.valueAtPercentile(99)),\(h.max),\(i.stealMs.map(String.init) ?? ""),"
        out += "\(i.target.map(String.init) ?? "")\n"
        return out
    }

    static func intervalLog(_ merged: [TimelineInterval], start: Double, measured: Double,
                            _ key: KeyPath<TimelineInterval, EncodedHistogram>) -> IntervalLog {
        // Absolute timestamps (BaseTime 0): the logs of agents that shared one t0 line up as they are.
        IntervalLog(startTime: start, baseTime: 0, intervals: merged.map { i in
            IntervalLog.Interval(startOffset: start + Double(i.second), length: intervalLength(second: i.second, measured: measured),
                                 histogram: i[keyPath: key])
        })
    }

    /// The .hlog length of second `second` of a run measured for `measured` seconds: 1, except the
    /// second in which the measured time ends part-way, whose length is that part.
    static func intervalLength(second: Int, measured: Double) -> Double {
        let remaining = measured - Double(second)
        return measured > 0 && remaining > 0 && remaining < 1 ? remaining : 1
    }

    // MARK: latest and history.csv

    /// Header of history.csv.
    static let historyHeader = ReportChart.HistoryRow.csvHeader

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
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw ResultsError("\(url.path): is a file, not a folder") }
            return
        }
        let parent = url.deletingLastPathComponent()
        if parent.path != url.path && parent.path != "/" { try createDirectory(parent) }
        guard mkdir(url.path, 0o755) == 0 || errno == EEXIST else {
            throw ResultsError("\(url.path): cannot create the folder: \(reason(errno))")
        }
    }

    /// Writes `text` to `url` through a temporary name in the same folder and a rename, so a file is
    /// either whole or absent: a full disk or a crash never leaves half a file under the real name.
    public static func save(_ text: String, _ url: URL) throws {
        let file = try NewFile(url)
        do { try file.write(text) } catch {
            file.abandon()
            throw error
        }
        try file.commit()
    }

    /// A file written in pieces under a temporary name in its folder, then renamed into place by
    /// ``commit()``: readers see it whole or not at all.
    final class NewFile {
        let url: URL
        private let temp: String
        private var fd: Int32

        /// Opens the temporary file beside `url`.
        init(_ url: URL) throws {
            self.url = url
            temp = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp").path
            fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw ResultsError("\(url.path): cannot write: \(reason(errno))") }
        }

        deinit { abandon() }

        /// Appends `text`.
        func write(_ text: String) throws {
            var bytes = text
            try bytes.withUTF8 { try write($0) }
        }

        /// Appends `bytes`.
        func write(_ bytes: UnsafeBufferPointer<UInt8>) throws {
            if let failure = ResultsWriter.writeAll(fd, bytes) {
                throw ResultsError("\(url.path): cannot write: \(reason(failure))")
            }
        }

        /// Closes the file and renames it into place.
        func commit() throws {
            var failure: Int32 = 0
            if close(fd) != 0 { failure = errno }
            fd = -1
            if failure == 0 && rename(temp, url.path) != 0 { failure = errno }
            guard failure == 0 else {
                unlink(temp)
                throw ResultsError("\(url.path): cannot write: \(reason(failure))")
            }
        }

        /// Closes and removes the temporary file (nothing happens after ``commit()``).
        func abandon() {
            guard fd >= 0 else { return }
            close(fd)
            fd = -1
            unlink(temp)
        }
    }

    /// Writes all of `bytes` to `fd` (retrying short writes and EINTR); the errno of a failure, or nil.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            if n == 0 { return ENOSPC }
            offset += n
        }
        return nil
    }

    /// Appends one line in one write (O_APPEND, so runs finishing together do not interleave); a write
    /// cut short (a full disk) is taken back, so the file never ends in half a row.
    static func appendLine(_ line: String, to url: URL) throws {
        let fd = open(url.path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else { throw ResultsError("\(url.path): cannot open for appending: \(reason(errno))") }
        defer { close(fd) }
        var info = stat()
        let before = fstat(fd, &info) == 0 ? info.st_size : -1
        var text = line
        let failure: Int32 = text.withUTF8 { b in
            let n = Glibc.write(fd, b.baseAddress!, b.count)
            return n == b.count ? 0 : (n < 0 ? errno : ENOSPC)
        }
        if failure != 0 {
            if before >= 0 { _ = ftruncate(fd, before) }
            throw ResultsError("\(url.path): cannot append: \(reason(failure))")
        }
    }

    /// An errno value in words, as the user reads it (`no space left on device`).
    static func reason(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }

    /// Bytes a results root needs free before a run starts: a run folder of a long run with its
    /// per-second logs and charts, with room to spare.
    static let minimumFreeBytes: Int64 = 16 << 20

    /// Checks, before any traffic, that `root` can take a run folder: it is (or can be made) a folder,
    /// a file can be created in it, and it has ``minimumFreeBytes`` free. The error names the folder
    /// and the reason.
    public static func checkRoot(_ root: URL) throws {
        try createDirectory(root)
        let probe = root.appendingPathComponent(".pushbench-write-check-\(getpid())").path
        let fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ResultsError("\(root.path): cannot write in it: \(reason(errno))") }
        close(fd)
        unlink(probe)
        var fs = statvfs()
        if statvfs(root.path, &fs) == 0 {
            let free = Int64(fs.f_bavail) * Int64(fs.f_frsize)
            if free < minimumFreeBytes {
                throw ResultsError("\(root.path): only \(free / 1024) KiB free, less than the \(minimumFreeBytes >> 20) MiB a run folder may need")
            }
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
