import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Takes a run's merged seconds, in order of `second`, as they close.
public protocol TimelineSink: AnyObject {
    /// Takes the next merged second.
    func append(_ second: TimelineInterval)
    /// Takes the next merged second with its error answers by reason (nil when unknown); a sink that has
    /// no use for the reasons takes the second alone.
    func append(_ second: TimelineInterval, errors: [String: Int64]?)
    /// Whether the sink uses the error answers by reason: when not, nobody gathers them.
    var wantsErrors: Bool { get }
}

extension TimelineSink {
    /// The second alone.
    public func append(_ second: TimelineInterval, errors: [String: Int64]?) { append(second) }
    /// No use for the reasons.
    public var wantsErrors: Bool { false }
}

/// Merges the seconds several sources (driver threads) close into one interval per second, and lets
/// a second go only once no source can add to it: each source closes its seconds in order, so a
/// second is final when every source still running has closed a later one, or has ended.
///
/// It holds only the seconds some source has not reached yet: a few, however long the run.
public struct TimelineMerger {
    private var waiting: [(source: Int, interval: TimelineInterval)] = []
    // Per source: the next second it can still close (one past the last it closed), or nil once it ended.
    private var next: [Int?]

    /// A merger for `sources` sources, none of which has closed a second yet.
    public init(sources: Int) {
        next = Array(repeating: 0, count: sources)
    }

    /// Seconds held, waiting for a source.
    public var retained: Int { waiting.count }

    /// Takes second `interval.second` of `source`; a source's seconds come in increasing order.
    public mutating func add(_ interval: TimelineInterval, from source: Int) {
        waiting.append((source, interval))
        if let n = next[source] { next[source] = Swift.max(n, interval.second + 1) }
    }

    /// `source` will close no more seconds.
    public mutating func end(source: Int) {
        next[source] = nil
    }

    /// The seconds no source can add to any more, merged and in order; with `all`, every second held
    /// (the run is over).
    public mutating func takeReady(all: Bool = false) -> [TimelineInterval] {
        let limit = all ? Int.max : next.compactMap { $0 }.min() ?? Int.max
        guard waiting.contains(where: { $0.interval.second < limit }) else { return [] }
        var ready: [(source: Int, interval: TimelineInterval)] = []
        var kept: [(source: Int, interval: TimelineInterval)] = []
        for w in waiting {
            if w.interval.second < limit { ready.append(w) } else { kept.append(w) }
        }
        waiting = kept
        // Sources in order within a second, as the whole-run merge of the threads' intervals adds them.
        ready.sort { ($0.interval.second, $0.source) < ($1.interval.second, $1.source) }
        return TimelineInterval.merged(ready.map(\.interval))
    }
}

/// Streams a run's per-second results into its run folder as each second closes, so a run holds no
/// per-second history in memory however long it lasts: each merged second becomes a row of
/// `timeline.csv.partial` and a line of `latency.hlog.partial` and `service_time.hlog.partial`
/// (each a valid file of its kind at every moment: headers first, whole lines only).
///
/// At the end ``finish(into:measuredSeconds:version:)`` writes timeline.csv, latency.hlog and
/// service_time.hlog from them, each under a temporary name renamed into place, byte for byte what
/// ``ResultsWriter`` writes from the same seconds held in memory (only then is the length of the last,
/// partial second known); ``discard()`` removes the partial files once the run folder is complete.
///
/// A write that fails (a full disk) is taken back to the last whole second, and the seconds from then
/// on are held in memory (``held``), so nothing measured is lost and the files can still be written
/// whole elsewhere.
public final class TimelineSpool: TimelineSink {
    /// Appended to a file's name while it grows.
    static let partialSuffix = ".partial"

    /// The run folder the partial files are in.
    public let folder: URL
    /// Start of the measured phase: the .hlog StartTime, and second 0 of the timestamps.
    public let startedAt: Date
    /// Seconds written to the partial files.
    public private(set) var secondsOnDisk = 0
    /// Seconds that arrived after a write failed, kept for the final files.
    public private(set) var held: [TimelineInterval] = []
    /// Why writing the partial files stopped (nil while it works).
    public private(set) var failure: String?

    private struct Part {
        var url: URL
        var fd: Int32
        /// Bytes of the header (skipped when the final file is written with its own).
        var headerBytes: Int64
        /// Bytes of whole seconds written.
        var size: Int64
    }
    // timeline.csv, latency.hlog, service_time.hlog
    private var parts: [Part] = []
    private let start: Double

    /// Seconds held in memory (0 unless writing failed).
    var retainedIntervals: Int { held.count }

    /// Creates the partial files in `folder` (which must exist) for a run whose measured phase started at
    /// `startedAt`, written by pushbench `version`.
    public init(folder: URL, startedAt: Date, version: String) throws {
        self.folder = folder
        self.startedAt = startedAt
        start = startedAt.timeIntervalSince1970
        let headers = [
            (ResultsWriter.File.timeline, ResultsWriter.timelineHeader + "\n"),
            (ResultsWriter.File.hlog, IntervalLog.header(comment: ResultsWriter.hlogComment(version: version, \.latency), startTime: start, baseTime: 0)),
            (ResultsWriter.File.serviceHlog, IntervalLog.header(comment: ResultsWriter.hlogComment(version: version, \.serviceTime),
                                                                startTime: start, baseTime: 0)),
        ]
        for (name, header) in headers {
            let url = folder.appendingPathComponent(name + Self.partialSuffix)
            let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                let why = ResultsWriter.reason(errno)
                close()
                throw ResultsError("\(url.path): cannot write: \(why)")
            }
            parts.append(Part(url: url, fd: fd, headerBytes: 0, size: 0))
            var text = header
            if let e = text.withUTF8({ ResultsWriter.writeAll(fd, $0) }) {
                close()
                throw ResultsError("\(url.path): cannot write: \(ResultsWriter.reason(e))")
            }
            parts[parts.count - 1].headerBytes = Int64(header.utf8.count)
            parts[parts.count - 1].size = Int64(header.utf8.count)
        }
    }

    deinit { close() }

    /// Writes one merged second (they come in order); once a write has failed, holds it instead.
    public func append(_ second: TimelineInterval) {
        guard failure == nil else {
            held.append(second)
            return
        }
        let lines = [ResultsWriter.timelineRow(second),
                     IntervalLog.Interval(startOffset: start + Double(second.second), length: 1, histogram: second.latency).line(),
                     IntervalLog.Interval(startOffset: start + Double(second.second), length: 1, histogram: second.serviceTime).line()]
        for (k, line) in lines.enumerated() {
            var text = line
            if let e = text.withUTF8({ ResultsWriter.writeAll(parts[k].fd, $0) }) {
                // Every file back to the last whole second, so they agree on the seconds they hold.
                for p in parts { _ = ftruncate(p.fd, off_t(p.size)) }
                failure = "\(parts[k].url.path): \(ResultsWriter.reason(e))"
                held.append(second)
                return
            }
        }
        for k in parts.indices { parts[k].size += Int64(lines[k].utf8.count) }
        secondsOnDisk += 1
    }

    /// Writes timeline.csv, latency.hlog and service_time.hlog into `destination` (this run folder, or
    /// another one when this one's disk is full): the seconds on disk, then those held. The partial files
    /// stay until ``discard()``, so a failed attempt can be repeated elsewhere.
    public func finish(into destination: URL, measuredSeconds: Double, version: String) throws {
        let keys: [KeyPath<TimelineInterval, EncodedHistogram>] = [\.latency, \.serviceTime]
        for (k, key) in keys.enumerated() {
            let part = parts[k + 1]
            let file = try ResultsWriter.NewFile(destination.appendingPathComponent(k == 0 ? ResultsWriter.File.hlog : ResultsWriter.File.serviceHlog))
            try file.write(IntervalLog.header(comment: ResultsWriter.hlogComment(version: version, key), startTime: start, baseTime: 0))
            // Only the second in which the measured time ends part-way has a length other than 1.
            let last = Int(measuredSeconds.rounded(.down))
            let patch = ResultsWriter.intervalLength(second: last, measured: measuredSeconds) != 1 ? last : nil
            let prefix = patch.map { Array(String(format: "%.3f,", Swift.max(start + Double($0), 0)).utf8) }
            try LineReader.forEachLine(part.url, from: part.headerBytes, to: part.size) { line, _ in
                if let prefix, let patch, line.starts(with: prefix),
                   let end = line.dropFirst(prefix.count).firstIndex(of: UInt8(ascii: ",")) {
                    var text = prefix + Array(String(format: "%.3f", ResultsWriter.intervalLength(second: patch, measured: measuredSeconds)).utf8)
                    text += line[end...]
                    try text.withUnsafeBufferPointer { try file.write($0) }
                } else {
                    try line.withUnsafeBufferPointer { try file.write($0) }
                }
            }
            for i in held {
                try file.write(IntervalLog.Interval(startOffset: start + Double(i.second),
                                                    length: ResultsWriter.intervalLength(second: i.second, measured: measuredSeconds),
                                                    histogram: i[keyPath: key]).line())
            }
            try file.commit()
        }
        let timeline = parts[0]
        let file = try ResultsWriter.NewFile(destination.appendingPathComponent(ResultsWriter.File.timeline))
        try file.write(ResultsWriter.timelineHeader + "\n")
        try LineReader.forEachLine(timeline.url, from: timeline.headerBytes, to: timeline.size) { line, _ in
            try line.withUnsafeBufferPointer { try file.write($0) }
        }
        for i in held { try file.write(ResultsWriter.timelineRow(i)) }
        try file.commit()
    }

    /// Removes the partial files, and the folder too when nothing else is in it (the run was written
    /// elsewhere).
    func discard() {
        close()
        for p in parts { unlink(p.url.path) }
        rmdir(folder.path)
    }

    /// For tests: every later write of service_time.hlog.partial fails as on a full disk (ENOSPC), after
    /// the other two files of the same second were written.
    func failNextWrites() throws {
        let full = open("/dev/full", O_WRONLY | O_CLOEXEC)
        guard full >= 0 else { throw ResultsError("/dev/full: cannot open: \(ResultsWriter.reason(errno))") }
        dup2(full, parts[2].fd)
        Glibc.close(full)
    }

    private func close() {
        for k in parts.indices where parts[k].fd >= 0 {
            Glibc.close(parts[k].fd)
            parts[k].fd = -1
        }
    }
}
