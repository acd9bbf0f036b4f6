import Foundation
import PushVocabulary

/// Merges the pipeline part of agents' run folders (`pushbench pipeline --segment I/N`, then
/// `pushbench merge`): summary.json's `pipeline` counts are summed, the end-to-end histograms are
/// added exactly from each agent's e2e_latency.hlog (every delivered push of a measured request is in
/// one of its seconds), and the per-second files are added second by second after the same alignment
/// on wall-clock seconds the run's timeline gets.
public enum PipelineMerge {
    /// The files a pipeline run adds to its folder.
    public enum File {
        /// Percentile distribution of end-to-end latency.
        public static let hgrm = "e2e_latency.hgrm"
        /// End-to-end latency, one histogram per measured second.
        public static let hlog = "e2e_latency.hlog"
        /// One row per second: front-door answers, pushes by route, backlog, end-to-end p50 and p99.
        public static let csv = "pipeline.csv"
        /// End-to-end and front-door latency by percentile.
        public static let chart = "e2e_report.svg"
        /// pipeline.csv's header line.
        public static let csvHeader = "second,front_door,egress_apns,egress_fcm,backlog,e2e_p50_us,e2e_p99_us"
    }

    /// What merging the pipeline parts gave.
    struct Merged {
        /// The merged `pipeline` section.
        var section: JSONValue
        /// Whole-run end-to-end latency (µs).
        var endToEnd: HdrHistogram
        /// e2e_latency.hlog's text.
        var hlog: String
        /// pipeline.csv's text.
        var csv: String
    }

    /// The merged pipeline part of `runs`, each shifted by `shifts[i]` seconds; nil when no run is a
    /// pipeline run. A run folder without its pipeline files is an error naming it.
    static func merge(_ runs: [LoadedRun], shifts: [Int], startTime: Double) throws -> Merged? {
        let sections = runs.map { $0.summary["pipeline"] }
        guard sections.contains(where: { $0 != nil }) else { return nil }
        guard sections.allSatisfy({ $0 != nil }) else {
            let missing = zip(runs, sections).filter { $0.1 == nil }.map(\.0.runID)
            throw ResultsError("merge: \(missing.joined(separator: ", ")) is not a pipeline run, the others are; merge pipeline runs with pipeline runs")
        }
        let endToEnd = HdrHistogram.latencyMicroseconds()
        var bySecond: [Int: HdrHistogram] = [:]
        var rows: [Int: [Int64]] = [:]
        for (run, shift) in zip(runs, shifts) {
            guard let folder = run.folder else { throw ResultsError("\(run.summaryURL.path): a pipeline run merges from its folder, not its summary.json alone") }
            let logURL = folder.appendingPathComponent(File.hlog)
            guard let text = try? String(contentsOf: logURL, encoding: .utf8) else { throw ResultsError("\(logURL.path): cannot read it") }
            let log: IntervalLog
            do { log = try IntervalLog.parse(text) } catch { throw ResultsError("\(logURL.path): \(error)") }
            for interval in log.intervals {
                let h = interval.histogram.decode()
                endToEnd.add(h)
                let second = Int(interval.startOffset.rounded()) + shift
                if let existing = bySecond[second] { existing.add(h) } else { bySecond[second] = h }
            }
            let csvURL = folder.appendingPathComponent(File.csv)
            guard let csv = try? String(contentsOf: csvURL, encoding: .utf8) else { throw ResultsError("\(csvURL.path): cannot read it") }
            for line in csv.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: ",").map { Int64($0) ?? 0 }
                guard fields.count >= 5 else { continue }
                let second = Int(fields[0]) + shift
                var row = rows[second] ?? [0, 0, 0, 0]
                for k in 0..<4 { row[k] += fields[k + 1] }
                rows[second] = row
            }
        }
        var csv = File.csvHeader + "\n"
        for second in rows.keys.sorted() {
            let r = rows[second]!
            let h = bySecond[second]
            let p50 = h.map { $0.totalCount > 0 ? $0.valueAtPercentile(50) : 0 } ?? 0
            let p99 = h.map { $0.totalCount > 0 ? $0.valueAtPercentile(99) : 0 } ?? 0
            csv += "\(second),\(r[0]),\(r[1]),\(r[2]),\(r[3]),\(p50),\(p99)\n"
        }
        var log = IntervalLog(startTime: startTime)
        for second in bySecond.keys.sorted() {
            log.intervals.append(IntervalLog.Interval(startOffset: Double(second), length: 1, histogram: EncodedHistogram(bySecond[second]!)))
        }
        var section = sum(sections.compactMap { $0 })
        section = replacing(section, key: "end_to_end_latency_us", with: ResultsWriter.latencyJSON(endToEnd))
        return Merged(section: section, endToEnd: endToEnd,
                      hlog: log.render(comment: "pushbench merge: end-to-end latency, request intended time to push arrival"), csv: csv)
    }

    /// Counts added, texts kept when every agent agrees (else `mixed`), objects member by member.
    static func sum(_ values: [JSONValue]) -> JSONValue {
        guard let first = values.first else { return .null }
        switch first {
        case .int:
            return .int(values.reduce(0) { $0 + ($1.integer ?? 0) })
        case .object(let members):
            return .object(members.map { key, _ in (key, sum(values.compactMap { $0[key] })) })
        case .string(let s):
            return values.allSatisfy({ $0.string == s }) ? first : .string("mixed")
        default:
            return values.allSatisfy({ $0 == first }) ? first : .string("mixed")
        }
    }

    static func replacing(_ object: JSONValue, key: String, with value: JSONValue) -> JSONValue {
        .object(object.members.map { $0.0 == key ? (key, value) : $0 })
    }
}
