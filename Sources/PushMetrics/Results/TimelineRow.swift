import Foundation

/// One second of a run as the report's per-second charts draw it: the counts and percentiles of a
/// timeline.csv row, without the histograms. A run's charts are drawn from these, read back from its
/// timeline.csv, so drawing a long run needs no per-second histogram in memory.
struct TimelineRow: Sendable, Equatable {
    /// Seconds since the start of the measured phase.
    public var second: Int
    /// Requests sent in this second.
    public var sent: Int64
    /// Responses received in this second.
    public var completed: Int64
    /// Non-2xx responses received in this second.
    public var failed: Int64
    /// Transport errors in this second.
    public var transportErrors: Int64
    /// Corrected latency p50 and p99 of the second, µs; nil when no response was timed in it.
    public var latency: (p50: Int64, p99: Int64)?
    /// CPU time stolen by the hypervisor in this second, ms; nil when unknown.
    public var stealMs: Int64?
    /// Requests the schedule intended in this second; nil without a schedule.
    public var target: Int64?

    /// A row from its figures.
    init(second: Int, sent: Int64, completed: Int64, failed: Int64, transportErrors: Int64,
                latency: (p50: Int64, p99: Int64)?, stealMs: Int64? = nil, target: Int64? = nil) {
        self.second = second
        self.sent = sent
        self.completed = completed
        self.failed = failed
        self.transportErrors = transportErrors
        self.latency = latency
        self.stealMs = stealMs
        self.target = target
    }

    /// The row of a (merged) interval.
    init(_ i: TimelineInterval) {
        let h = i.latency.decode()
        self.init(second: i.second, sent: i.sent, completed: i.completed, failed: i.failed, transportErrors: i.transportErrors,
                  latency: h.totalCount > 0 ? (h.valueAtPercentile(50), h.valueAtPercentile(99)) : nil,
                  stealMs: i.stealMs, target: i.target)
    }

    /// Equal when every figure is.
    public static func == (a: TimelineRow, b: TimelineRow) -> Bool {
        a.second == b.second && a.sent == b.sent && a.completed == b.completed && a.failed == b.failed
            && a.transportErrors == b.transportErrors && a.latency?.p50 == b.latency?.p50 && a.latency?.p99 == b.latency?.p99
            && (a.latency == nil) == (b.latency == nil) && a.stealMs == b.stealMs && a.target == b.target
    }

    /// Reads the rows of a timeline.csv as ``ResultsWriter`` writes it, line by line. A second's
    /// latency counts as timed when it completed a response (every measured response is timed).
    static func read(_ url: URL) throws -> [TimelineRow] {
        var rows: [TimelineRow] = []
        var header: [Substring]?
        var column: [String: Int] = [:]
        var number = 0
        try LineReader.forEachLine(url) { line in
            number += 1
            guard !line.isEmpty else { return }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard let names = header else {
                header = fields
                for (k, name) in fields.enumerated() { column[String(name)] = k }
                for name in ["second", "sent", "completed", "errors", "transport_errors", "p50_us", "p99_us"] where column[name] == nil {
                    throw ResultsError("\(url.path): no \"\(name)\" column")
                }
                return
            }
            guard fields.count == names.count else {
                throw ResultsError("\(url.path): line \(number) has \(fields.count) fields, header has \(names.count)")
            }
            func value(_ name: String) throws -> Int64? {
                guard let k = column[name] else { return nil }
                let text = fields[k]
                if text.isEmpty && (name == "steal_ms" || name == "target") { return nil }
                guard let v = Int64(text) else { throw ResultsError("\(url.path): line \(number): \(name) is not an integer: \"\(text)\"") }
                return v
            }
            let completed = try value("completed")!, transport = try value("transport_errors")!
            rows.append(TimelineRow(second: Int(try value("second")!), sent: try value("sent")!, completed: completed,
                                    failed: Swift.max(0, try value("errors")! - transport), transportErrors: transport,
                                    latency: completed > 0 ? (try value("p50_us")!, try value("p99_us")!) : nil,
                                    stealMs: try value("steal_ms"), target: try value("target")))
        }
        return rows
    }
}

/// Reads a text file a line at a time through a fixed buffer, so a long file is never held whole.
enum LineReader {
    /// Calls `body` with each line of the file at `url` (without its newline), in order.
    static func forEachLine(_ url: URL, _ body: (Substring) throws -> Void) throws {
        try forEachLine(url, from: 0, to: nil) { line, _ in
            var end = line.endIndex
            while end > line.startIndex && (line[end - 1] == UInt8(ascii: "\n") || line[end - 1] == UInt8(ascii: "\r")) { end -= 1 }
            try body(Substring(decoding: line[..<end], as: UTF8.self))
        }
    }

    /// Calls `body` with the bytes of each line between byte offsets `from` and `to` (the end of the file
    /// when nil), newline included, with the offset the line starts at.
    static func forEachLine(_ url: URL, from: Int64, to: Int64?, _ body: (ArraySlice<UInt8>, Int64) throws -> Void) throws {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ResultsError("\(url.path): cannot read: \(ResultsWriter.reason(errno))") }
        defer { close(fd) }
        var offset = from
        var pending: [UInt8] = []
        var pendingStart = from
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while to.map({ offset < $0 }) ?? true {
            let want = to.map { Int(Swift.min(Int64(chunk.count), $0 - offset)) } ?? chunk.count
            let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, want, off_t(offset)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ResultsError("\(url.path): cannot read: \(ResultsWriter.reason(errno))")
            }
            if n == 0 { break }
            var lineStart = 0
            for k in 0..<n where chunk[k] == UInt8(ascii: "\n") {
                if pending.isEmpty {
                    try body(chunk[lineStart...k], offset + Int64(lineStart))
                } else {
                    pending += chunk[lineStart...k]
                    try body(pending[...], pendingStart)
                    pending.removeAll(keepingCapacity: true)
                }
                lineStart = k + 1
            }
            if lineStart < n {
                if pending.isEmpty { pendingStart = offset + Int64(lineStart) }
                pending += chunk[lineStart..<n]
            }
            offset += Int64(n)
        }
        if !pending.isEmpty { try body(pending[...], pendingStart) }
    }
}
