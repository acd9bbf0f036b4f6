import Foundation
import PushVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// A run read back from disk: its summary.json and, when the folder has them, the interval
/// histograms and timeline, reassembled into a ``RunRecord``.
public struct LoadedRun {
    /// The run folder (nil when only a summary.json file was given).
    public var folder: URL?
    /// The summary.json file read.
    var summaryURL: URL
    /// summary.json as parsed.
    public var summary: JSONValue
    /// The run id from summary.json.
    public var runID: String
    /// The run reassembled (histograms from summary.json "histograms", intervals from the .hlog files).
    public var record: RunRecord

    /// Loads a run folder or a summary.json file. Errors name the file and the reason.
    public static func load(_ path: String, requireIntervals: Bool = false) throws -> LoadedRun {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else {
            throw ResultsError("\(path): no such file or directory")
        }
        let url = URL(fileURLWithPath: path)
        let folder: URL? = isDir.boolValue ? url : nil
        let summaryURL = isDir.boolValue ? url.appendingPathComponent(ResultsWriter.File.summary) : url
        if let folder, !FileManager.default.fileExists(atPath: summaryURL.path) { throw notARunFolder(folder) }
        let text = try readText(summaryURL)
        let summary: JSONValue
        do {
            summary = try JSONValue.parse(text)
        } catch {
            throw ResultsError("\(summaryURL.path): not valid JSON: \(error)")
        }
        guard case .object = summary else { throw ResultsError("\(summaryURL.path): not a JSON object") }
        for key in ["run_id", "config", "requests", "throughput", "latency_us"] where summary[key] == nil {
            throw ResultsError("\(summaryURL.path): missing key \"\(key)\" (is this a pushbench summary.json?)")
        }
        let runID = summary["run_id"]?.string ?? ""
        let startedAt = summary["started_at"]?.string.flatMap(ResultsWriter.parseISO8601) ?? Date(timeIntervalSince1970: 0)
        var r = RunRecord(label: label(fromRunID: runID), startedAt: startedAt,
                          config: RunConfig(json: summary["config"]!),
                          version: summary["version"]?.string ?? PushbenchVersion.current)
        r.counts = RequestCounts(json: summary["requests"]!)
        r.measuredSeconds = summary.value(atPath: "throughput.measured_s")?.number
            ?? summary.value(atPath: "config.duration_s")?.number ?? 0
        r.cpuUserSeconds = summary.value(atPath: "cpu.user_s")?.number ?? 0
        r.cpuSystemSeconds = summary.value(atPath: "cpu.sys_s")?.number ?? 0
        r.maxRSSBytes = summary["max_rss_bytes"]?.integer ?? 0
        r.interrupted = summary["interrupted"].map { $0 == .bool(true) } ?? false
        let known: Set<String> = ["run_id", "started_at", "tool", "version", "interrupted", "config", "requests",
                                  "throughput", "latency_us", "service_time_us", "cpu", "max_rss_bytes", "histograms"]
        r.extra = summary.members.filter { !known.contains($0.0) }

        var haveHistograms = false
        if let blob = summary.value(atPath: "histograms.latency_us")?.string {
            do { r.latency = try HistogramCodec.decode(base64: blob); haveHistograms = true } catch {
                throw ResultsError("\(summaryURL.path): histograms.latency_us: \(error)")
            }
        }
        if let blob = summary.value(atPath: "histograms.service_time_us")?.string {
            do { r.serviceTime = try HistogramCodec.decode(base64: blob) } catch {
                throw ResultsError("\(summaryURL.path): histograms.service_time_us: \(error)")
            }
        }
        if let folder {
            let hlog = folder.appendingPathComponent(ResultsWriter.File.hlog)
            if requireIntervals && !FileManager.default.fileExists(atPath: hlog.path) {
                throw ResultsError("\(hlog.path): missing (the per-second histograms are needed here)")
            }
            r.intervals = try loadIntervals(folder, startedAt: startedAt)
            if !haveHistograms {
                for i in r.intervals {
                    r.latency.add(i.latency.decode())
                    r.serviceTime.add(i.serviceTime.decode())
                }
            }
        } else if requireIntervals {
            throw ResultsError("\(path): a run folder is needed here (with latency.hlog and timeline.csv), not a summary.json file")
        }
        return LoadedRun(folder: folder, summaryURL: summaryURL, summary: summary, runID: runID, record: r)
    }

    static func label(fromRunID id: String) -> String {
        // YYYYMMDD-HHMMSS-<label>
        let parts = id.split(separator: "-", maxSplits: 2)
        return parts.count == 3 ? String(parts[2]) : id
    }

    /// The error for a folder with no summary.json: an A/B comparison folder names its run folders.
    static func notARunFolder(_ folder: URL) -> ResultsError {
        let comparison = folder.appendingPathComponent("comparison.json")
        if let text = try? readText(comparison), let json = try? JSONValue.parse(text) {
            var ids: [String] = []
            if case .array(let variants)? = json["variants"] { ids = variants.compactMap { $0["run_id"]?.string } }
            let parent = folder.deletingLastPathComponent().path
            let example = ids.isEmpty ? "" : ": use its variants' run folders, " + ids.map { "\(parent)/\($0)" }.joined(separator: ", ")
            return ResultsError("\(folder.path): an encoder comparison folder, not a run folder\(example)")
        }
        return ResultsError("\(folder.path): no summary.json (not a pushbench run folder)")
    }

    static func readText(_ url: URL) throws -> String {
        // open(2) first, for the reason in words when it fails (Foundation's is "could not be completed").
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ResultsError("\(url.path): cannot read: \(ResultsWriter.reason(errno))") }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var info = stat()
        if fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
            throw ResultsError("\(url.path): is a folder, not a file")
        }
        guard let s = String(data: handle.readDataToEndOfFile(), encoding: .utf8) else {
            throw ResultsError("\(url.path): not UTF-8 text")
        }
        return s
    }

    /// Reads timeline.csv and the two .hlog files of a folder into per-second intervals.
    static func loadIntervals(_ folder: URL, startedAt: Date) throws -> [TimelineInterval] {
        let fm = FileManager.default
        let hlogURL = folder.appendingPathComponent(ResultsWriter.File.hlog)
        let serviceURL = folder.appendingPathComponent(ResultsWriter.File.serviceHlog)
        let csvURL = folder.appendingPathComponent(ResultsWriter.File.timeline)
        func seconds(_ url: URL) throws -> [Int: EncodedHistogram] {
            guard fm.fileExists(atPath: url.path) else { return [:] }
            let log: IntervalLog
            do { log = try IntervalLog.parse(try readText(url)) } catch let e as IntervalLog.ParseError {
                throw ResultsError("\(url.path): \(e.description)")
            }
            var out: [Int: EncodedHistogram] = [:]
            for i in log.intervals where i.tag == nil {
                // Whole seconds since this run's start, whatever base the log used.
                let absolute = log.baseTime + i.startOffset
                out[Int((absolute - startedAt.timeIntervalSince1970).rounded())] = i.histogram
            }
            return out
        }
        let latency = try seconds(hlogURL)
        let service = try seconds(serviceURL)
        var rows: [Int: [String: Int64]] = [:]
        if fm.fileExists(atPath: csvURL.path) {
            let lines = try readText(csvURL).split(whereSeparator: \.isNewline).map(String.init)
            guard let header = lines.first?.split(separator: ",").map(String.init) else {
                throw ResultsError("\(csvURL.path): empty file")
            }
            for (n, line) in lines.dropFirst().enumerated() where !line.isEmpty {
                let f = line.split(separator: ",", omittingEmptySubsequences: false)
                guard f.count == header.count else {
                    throw ResultsError("\(csvURL.path): line \(n + 2) has \(f.count) fields, header has \(header.count)")
                }
                var row: [String: Int64] = [:]
                // steal_ms and target are empty where not known (and absent in folders from before they existed).
                for (k, v) in zip(header, f) where !((k == "steal_ms" || k == "target") && v.isEmpty) {
                    guard let x = Int64(v) else { throw ResultsError("\(csvURL.path): line \(n + 2): \(k) is not an integer: \"\(v)\"") }
                    row[k] = x
                }
                guard let s = row["second"] else { throw ResultsError("\(csvURL.path): no \"second\" column") }
                rows[Int(s)] = row
            }
        }
        let empty = EncodedHistogram(HdrHistogram.latencyMicroseconds())
        let allSeconds = Set(latency.keys).union(service.keys).union(rows.keys).sorted()
        return allSeconds.map { s in
            let row = rows[s] ?? [:]
            let te = row["transport_errors"] ?? 0
            let ok = row["ok"] ?? 0
            return TimelineInterval(second: s, sent: row["sent"] ?? 0, completed: row["completed"] ?? 0,
                                    succeeded: ok, failed: Swift.max(0, (row["errors"] ?? 0) - te), transportErrors: te,
                                    latency: latency[s] ?? empty, serviceTime: service[s] ?? empty, stealMs: row["steal_ms"],
                                    target: row["target"])
        }
    }
}
