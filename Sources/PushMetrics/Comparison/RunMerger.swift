import Foundation
import PushVocabulary

/// Merges runs of several agents into one run (`pushbench merge`), exactly: whole-run histograms
/// are added bucket by bucket, per-second histograms are added interval by interval after aligning
/// each run on wall-clock seconds, counts are summed, and throughput is computed over the union of
/// the runs' measured time spans.
public enum RunMerger {
    /// Merges `runs` (each loaded from a run folder) into one record labelled `label`. `segments`: the
    /// runs are agents of one run (``SegmentCheck``), so their rate is the run's, not a sum.
    public static func merge(_ runs: [LoadedRun], label: String = "merged", segments: SegmentCheck? = nil) throws -> RunRecord {
        guard let first = runs.first else { throw ResultsError("merge: no runs given") }
        let starts = runs.map { $0.record.startedAt.timeIntervalSince1970 }
        let t0 = starts.min()!
        var r = RunRecord(label: label, startedAt: Date(timeIntervalSince1970: t0), config: first.record.config,
                          version: first.record.version)

        var intervals: [TimelineInterval] = []
        var spans: [(Double, Double)] = []
        var agents: [JSONValue] = []
        var rates: [Int] = []
        for (run, start) in zip(runs, starts) {
            let rec = run.record
            r.counts.add(rec.counts)
            r.latency.add(rec.latency)
            r.serviceTime.add(rec.serviceTime)
            r.cpuUserSeconds += rec.cpuUserSeconds
            r.cpuSystemSeconds += rec.cpuSystemSeconds
            r.maxRSSBytes = max(r.maxRSSBytes, rec.maxRSSBytes)
            r.interrupted = r.interrupted || rec.interrupted
            // Agents rarely start on the same second: shift each onto the earliest start's seconds.
            let shift = Int((start - t0).rounded())
            for var i in rec.intervals {
                i.second += shift
                intervals.append(i)
            }
            spans.append((start, start + rec.measuredSeconds))
            if let rate = rec.config.rps { rates.append(rate) }
            agents.append(.object([
                ("run_id", .string(run.runID)), ("started_at", .string(ResultsWriter.iso8601(rec.startedAt))),
                ("completed", .int(rec.counts.completed)), ("achieved_rps", .double(ResultsWriter.round3(rec.achievedRPS))),
                ("p99_us", .int(rec.latency.valueAtPercentile(99))), ("max_rss_bytes", .int(rec.maxRSSBytes)),
                // Where this agent's seconds sit in the merged timeline (what the charts draw as measured).
                ("offset_s", .int(Int64(shift))), ("measured_s", .double(ResultsWriter.round3(rec.measuredSeconds))),
            ]))
        }
        r.intervals = TimelineInterval.merged(intervals)
        r.measuredSeconds = unionLength(spans)

        // The merged config describes the fleet: rates, connections and threads add up.
        let configs = runs.map(\.record.config)
        r.config.rps = rates.count == runs.count ? rates.reduce(0, +) : nil
        r.config.connections = configs.map(\.connections).reduce(0, +)
        r.config.threads = configs.map(\.threads).reduce(0, +)
        r.config.durationSeconds = r.measuredSeconds
        if Set(configs.map(\.target)).count > 1 { r.config.target = "mixed" }
        if Set(configs.map(\.encoder)).count > 1 { r.config.encoder = "mixed" }
        if Set(configs.map(\.protocolName)).count > 1 { r.config.protocolName = "mixed" }
        if Set(configs.map(\.streams)).count > 1 { r.config.streams = configs.map(\.streams).max() ?? 0 }
        r.config.extra = [("agents", .int(Int64(runs.count)))]
        r.extra = [("merged_from", .array(agents))]
        if let segments {
            // Every agent was given the whole run's rate (and schedule) and sent its share of it.
            if Set(configs.map(\.rps)).count == 1 { r.config.rps = configs[0].rps }
            for key in ["schedule", "warmup_s", "requests", "tokens", "payload"] {
                if let v = first.record.config.extra.first(where: { $0.0 == key }) { r.config.extra.append(v) }
            }
            r.extra.append(("segments", segments.json))
            if let start = first.summary["start"] { r.extra.append(("start", start)) }
        }
        return r
    }

    /// A stretch of time between runs being merged in which none of them was measuring.
    public struct Gap: Sendable, Equatable, CustomStringConvertible {
        /// The run whose measured time ends where the gap starts.
        var after: String
        /// The run whose measured time starts where the gap ends.
        var before: String
        /// Length of the gap in seconds.
        public var seconds: Double

        /// One line for a warning: the gap and the runs on either side.
        public var description: String {
            String(format: "%.1f", seconds) + " s with no run measuring, between \(after) and \(before)"
        }
    }

    /// The gaps in time between `runs` (none when their measured times overlap or touch, to within
    /// `tolerance` seconds). Runs that do not overlap make an odd merge: the rate is over the time
    /// measured, and the charts draw the gaps as gaps, but a user merging agents of one test
    /// expects them to have run at the same time.
    public static func gaps(_ runs: [LoadedRun], tolerance: Double = 1) -> [Gap] {
        let spans = runs.map { r -> (start: Double, end: Double, id: String) in
            let s = r.record.startedAt.timeIntervalSince1970
            return (s, s + r.record.measuredSeconds, r.runID)
        }.sorted { $0.start < $1.start }
        var out: [Gap] = []
        var reach: (end: Double, id: String)?
        for s in spans {
            if let r = reach, s.start > r.end + tolerance {
                out.append(Gap(after: r.id, before: s.id, seconds: s.start - r.end))
            }
            if reach == nil || s.end > reach!.end { reach = (s.end, s.id) }
        }
        return out
    }

    /// A one-line warning for `gaps`, or nil when there are none.
    public static func gapWarning(_ gaps: [Gap]) -> String? {
        guard let first = gaps.first else { return nil }
        let more = gaps.count > 1 ? " (and \(gaps.count - 1) more gap\(gaps.count > 2 ? "s" : ""))" : ""
        return "the runs do not overlap in time: \(first)\(more); throughput is over the measured time only, and the charts leave the gaps empty"
    }

    /// Length of the union of time spans, in seconds.
    static func unionLength(_ spans: [(Double, Double)]) -> Double {
        var total = 0.0
        var current: (Double, Double)?
        for s in spans.sorted(by: { $0.0 < $1.0 }) {
            if let c = current, s.0 <= c.1 {
                current = (c.0, max(c.1, s.1))
            } else {
                if let c = current { total += c.1 - c.0 }
                current = s
            }
        }
        if let c = current { total += c.1 - c.0 }
        return total
    }

    /// Loads `paths` (run folders), merges them and writes the result into `out` (which must not
    /// exist or be empty). Returns the folder written.
    @discardableResult
    static func mergeFolders(_ paths: [String], out: URL, label: String = "merged") throws -> URL {
        try mergeFoldersReportingGaps(paths, out: out, label: label).folder
    }

    /// ``mergeFolders(_:out:label:)``, also returning the gaps in time between the runs (``gaps(_:tolerance:)``),
    /// so the caller can warn about runs that did not overlap.
    static func mergeFoldersReportingGaps(_ paths: [String], out: URL, label: String = "merged") throws -> (folder: URL, gaps: [Gap]) {
        let m = try mergeAgents(paths, out: out, label: label)
        return (m.folder, m.gaps)
    }

    /// What a merge wrote and what the caller should warn about.
    public struct Outcome {
        /// The merged run folder.
        public var folder: URL
        /// Stretches of time no run measured.
        public var gaps: [Gap]
        /// The agents' segments, when they ran segments of one run (`--segment`).
        public var segments: SegmentCheck?
    }

    /// ``mergeFolders(_:out:label:)`` with the checks of agents that ran segments of one run: unless
    /// `allowPartial`, a missing, repeated or overlapping segment, or agents that differ in rate, schedule,
    /// payload or t0, is an error naming them (nothing is written).
    public static func mergeAgents(_ paths: [String], out: URL, label: String = "merged", allowPartial: Bool = false) throws -> Outcome {
        let fm = FileManager.default
        if fm.fileExists(atPath: out.path), let items = try? fm.contentsOfDirectory(atPath: out.path), !items.isEmpty {
            throw ResultsError("\(out.path): already exists and is not empty (refusing to overwrite a run)")
        }
        var seenPaths: [String: String] = [:]
        for p in paths {
            let key = URL(fileURLWithPath: p).standardizedFileURL.resolvingSymlinksInPath().path
            if let other = seenPaths[key] { throw ResultsError("\(p): same folder as \(other); each run may be merged once") }
            seenPaths[key] = p
        }
        let runs = try paths.map { try LoadedRun.load($0, requireIntervals: true) }
        let segments = try SegmentCheck(runs, names: paths)
        if let segments {
            let problems = segments.problems
            if !problems.isEmpty && !allowPartial {
                throw ResultsError("the agents do not make one run: " + problems.joined(separator: "; ") + " (--allow-partial merges them anyway)")
            }
        } else {
            // Agents of one run share a run id (one t0, one label); plain runs with the same id are one run twice.
            var seen: [String: String] = [:]
            for (p, run) in zip(paths, runs) {
                if let other = seen[run.runID] { throw ResultsError("\(p): same run (\(run.runID)) as \(other); each run may be merged once") }
                seen[run.runID] = p
            }
        }
        var record = try merge(runs, label: label, segments: segments)
        let t0 = runs.map { $0.record.startedAt.timeIntervalSince1970 }.min() ?? 0
        let shifts = runs.map { Int(($0.record.startedAt.timeIntervalSince1970 - t0).rounded()) }
        let pipeline = try PipelineMerge.merge(runs, shifts: shifts, startTime: record.startedAt.timeIntervalSince1970)
        if let pipeline { record.extra.append(("pipeline", pipeline.section)) }
        try ResultsWriter.writeFolder(record, runID: ResultsWriter.runID(startedAt: record.startedAt, label: label), to: out)
        if let pipeline {
            try ResultsWriter.save(pipeline.endToEnd.percentileDistribution(outputValueUnitScalingRatio: 1000),
                                   out.appendingPathComponent(PipelineMerge.File.hgrm))
            try ResultsWriter.save(pipeline.hlog, out.appendingPathComponent(PipelineMerge.File.hlog))
            try ResultsWriter.save(pipeline.csv, out.appendingPathComponent(PipelineMerge.File.csv))
            try ResultsWriter.save(PipelineChart.svg(endToEnd: pipeline.endToEnd, frontDoor: record.latency, title: "pushbench pipeline (merged)",
                                                     subtitle: "\(runs.count) agents"),
                                   out.appendingPathComponent(PipelineMerge.File.chart))
        }
        return Outcome(folder: out, gaps: gaps(runs), segments: segments)
    }
}
