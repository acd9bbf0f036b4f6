import Foundation

extension HdrHistogram {
    /// The percentile distribution text of Java's `outputPercentileDistribution` (the .hgrm
    /// format the HdrHistogram plotter reads): header, one row per tick, the 3-column 100% row,
    /// and the Mean/Max/Buckets footer. Values are divided by `outputValueUnitScalingRatio`
    /// (1000 turns microseconds into milliseconds).
    public func percentileDistribution(outputValueUnitScalingRatio scale: Double = 1000,
                                       ticksPerHalfDistance: Int = 5) -> String {
        let d = significantDigits
        // Java: "%12s %14s %10s %14s\n\n" (String(format:) cannot take Swift strings for %s).
        func pad(_ s: String, _ w: Int) -> String { String(repeating: " ", count: Swift.max(0, w - s.count)) + s }
        var out = "\(pad("Value", 12)) \(pad("Percentile", 14)) \(pad("TotalCount", 10)) \(pad("1/(1-Percentile)", 14))\n\n"
        let row = "%12.\(d)f %2.12f %10lld %14.2f\n"
        let last = "%12.\(d)f %2.12f %10lld\n"
        for t in percentileTicks(ticksPerHalfDistance: ticksPerHalfDistance) {
            let v = Double(t.value) / scale
            let p = t.percentile / 100
            if t.percentile != 100 {
                out += String(format: row, v, p, t.totalCount, 1 / (1 - p))
            } else {
                out += String(format: last, v, p, t.totalCount)
            }
        }
        out += String(format: "#[Mean    = %12.\(d)f, StdDeviation   = %12.\(d)f]\n", mean / scale, standardDeviation / scale)
        out += String(format: "#[Max     = %12.\(d)f, Total count    = %12lld]\n", Double(max) / scale, totalCount)
        out += String(format: "#[Buckets = %12d, SubBuckets     = %12d]\n", bucketCount, subBucketCount)
        return out
    }
}

/// An HdrHistogram interval log (.hlog), format 1.3, as Java's `HistogramLogWriter` writes it and
/// Java's/Python's `HistogramLogReader` read it.
///
/// Interval start times are stored relative to ``baseTime`` (written as a `#[BaseTime: …]` line),
/// so absolute time = `baseTime + startOffset`.
public struct IntervalLog: Sendable {
    /// One interval line.
    public struct Interval: Sendable, Equatable {
        /// Tag of the line, nil for the untagged (main) series.
        public var tag: String?
        /// Start, in seconds after ``IntervalLog/baseTime``.
        var startOffset: Double
        /// Length in seconds.
        var length: Double
        /// The compressed histogram (V2 encoding, not base64).
        public var histogram: EncodedHistogram

        /// Creates an interval line.
        public init(tag: String? = nil, startOffset: Double, length: Double, histogram: EncodedHistogram) {
            self.tag = tag
            self.startOffset = startOffset
            self.length = length
            self.histogram = histogram
        }

        /// The interval's line of the log, newline included (see ``IntervalLog/render(comment:maxValueUnitRatio:)``).
        func line(maxValueUnitRatio: Double = 1000) -> String {
            var out = tag.map { "Tag=\($0)," } ?? ""
            out += String(format: "%.3f,%.3f,%.3f,", Swift.max(startOffset, 0), Swift.max(length, 0),
                          Double(histogram.max) / maxValueUnitRatio)
            out += histogram.base64
            out += "\n"
            return out
        }
    }

    /// `#[StartTime: …]`, seconds since the epoch.
    var startTime: Double
    /// `#[BaseTime: …]`, seconds since the epoch; interval starts are relative to it.
    var baseTime: Double
    /// The interval lines in file order.
    public var intervals: [Interval]

    /// Creates a log.
    public init(startTime: Double, baseTime: Double? = nil, intervals: [Interval] = []) {
        self.startTime = startTime
        self.baseTime = baseTime ?? startTime
        self.intervals = intervals
    }

    /// The log's text. `maxValueUnitRatio` scales the informational Interval_Max column
    /// (1000: microsecond values print as milliseconds).
    public func render(comment: String = "Logged with pushbench", maxValueUnitRatio: Double = 1000) -> String {
        var out = IntervalLog.header(comment: comment, startTime: startTime, baseTime: baseTime)
        for i in intervals { out += i.line(maxValueUnitRatio: maxValueUnitRatio) }
        return out
    }

    /// The lines before the first interval: comment, format version, StartTime, BaseTime and the legend.
    public static func header(comment: String, startTime: Double, baseTime: Double) -> String {
        var out = "#[\(comment)]\n"
        out += "#[Histogram log format version 1.3]\n"
        out += String(format: "#[StartTime: %.3f (seconds since epoch), ", startTime) + IntervalLog.humanDate(startTime) + "]\n"
        out += String(format: "#[BaseTime: %.3f (seconds since epoch)]\n", baseTime)
        out += "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
        return out
    }

    static func humanDate(_ t: Double) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "EEE MMM dd HH:mm:ss zzz yyyy"
        return f.string(from: Date(timeIntervalSince1970: t))
    }

    /// A malformed .hlog line, with its line number.
    struct ParseError: Error, CustomStringConvertible {
        /// What was wrong, with the line number.
        let description: String
    }

    /// Parses .hlog text with the reader rules of Java/Python `HistogramLogReader` (comments,
    /// StartTime/BaseTime, legend, optional `Tag=`; relative timestamps when no BaseTime and the
    /// first timestamp is more than a year before StartTime).
    public static func parse(_ text: String) throws -> IntervalLog {
        var start: Double?
        var base: Double?
        var raw: [(tag: String?, t: Double, len: Double, blob: EncodedHistogram)] = []
        for (n, sub) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = String(sub)
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                if let v = headerNumber(line, "#[StartTime:") { start = v }
                if let v = headerNumber(line, "#[BaseTime:") { base = v }
                continue
            }
            if line.hasPrefix("\"StartTimestamp\"") { continue }
            var body = Substring(line)
            var tag: String?
            if body.hasPrefix("Tag=") {
                guard let comma = body.firstIndex(of: ",") else { throw ParseError(description: "line \(n + 1): Tag= without a comma") }
                tag = String(body[body.index(body.startIndex, offsetBy: 4)..<comma])
                body = body[body.index(after: comma)...]
            }
            let fields = body.split(separator: ",", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count == 4, let t = Double(fields[0]), let len = Double(fields[1]) else {
                throw ParseError(description: "line \(n + 1): expected start,length,max,histogram")
            }
            do {
                let blob = try EncodedHistogram(base64: String(fields[3]))
                raw.append((tag, t, len, blob))
            } catch {
                throw ParseError(description: "line \(n + 1): histogram: \(error)")
            }
        }
        let startTime = start ?? raw.first?.t ?? 0
        let baseTime: Double
        if let base {
            baseTime = base
        } else if let first = raw.first?.t, first < startTime - 365 * 24 * 3600 {
            baseTime = startTime
        } else {
            baseTime = 0
        }
        return IntervalLog(startTime: startTime, baseTime: baseTime,
                           intervals: raw.map { Interval(tag: $0.tag, startOffset: $0.t, length: $0.len, histogram: $0.blob) })
    }

    static func headerNumber(_ line: String, _ prefix: String) -> Double? {
        guard line.hasPrefix(prefix) else { return nil }
        let rest = line.dropFirst(prefix.count).drop { $0 == " " }
        return Double(rest.prefix { $0.isNumber || $0 == "." })
    }
}

/// A histogram held in its compressed V2 encoding (a few hundred bytes instead of the ~190 KB
/// counts array), with the figures a timeline needs extracted up front.
public struct EncodedHistogram: Sendable, Equatable {
    /// The compressed V2 bytes (no base64).
    public let bytes: [UInt8]
    /// Number of recorded values.
    public let totalCount: Int64
    /// Highest equivalent value of the largest recorded value.
    public let max: Int64

    /// Compresses `histogram` now (the histogram can be reset and reused afterwards).
    public init(_ histogram: HdrHistogram) {
        bytes = HistogramCodec.encodeCompressed(histogram)
        totalCount = histogram.totalCount
        max = histogram.max
    }

    /// Decodes a base64 blob, validating it; the bytes are kept as they are (no re-compression).
    public init(base64 text: String) throws {
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespaces)) else {
            throw HistogramCodecError(description: "not valid base64")
        }
        let raw = [UInt8](data)
        let h = try HistogramCodec.decode(compressed: raw)
        bytes = raw
        totalCount = h.totalCount
        max = h.max
    }

    /// The base64 text (`HISTFAAA…`).
    var base64: String { Data(bytes).base64EncodedString() }

    /// Decodes the histogram. The bytes were produced or validated at init, so this cannot fail.
    public func decode() -> HdrHistogram {
        // swiftlint:disable:next force_try
        try! HistogramCodec.decode(compressed: bytes)
    }
}
