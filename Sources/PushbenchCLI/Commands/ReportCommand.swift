import Foundation
import PushMetrics
import PushVocabulary

/// `pushbench report`'s options.
struct ReportOptions: Equatable, Sendable {
    /// `--history`.
    var history = false
    /// `--out`: the results root for `--history`.
    var root = "results"
    /// `--slowest N`: print the N slowest requests of the run's `--log` file.
    var slowest: Int?
}

/// `pushbench report`: redraw the charts of a run (or --history).
struct ReportCommand: PushbenchCommand {
    static let name = "report"
    static let abstract = "redraw the charts of a run (or --history)"
    static let usage = """
    USAGE: pushbench report RUN
           pushbench report RUN --slowest N
           pushbench report --history [--out DIR]

    RUN is a run folder: report.svg and report.html are redrawn from its summary.json, latency.hlog,
    service_time.hlog and timeline.csv. With --history, DIR/history.csv (DIR defaults to ./results)
    is drawn as DIR/history.svg: achieved rps and p50/p99/p99.9 per run, one series per comparable
    configuration (encoder, rate, protocol, target), runs labelled by label and date, latency on a
    log axis. With --slowest N, the N slowest requests of the run's --log file (the path is in its
    summary.json) are printed instead: corrected latency, how late each went out, service time, the
    thread, connection and stream, the status and reason.
    """

    static var options: OptionTable<ReportOptions> {
        OptionTable([
            .flag("--history", \.history, help: "draw the trend of history.csv instead of one run"),
            .value("--out", "DIR", \.root, default: "results", help: "results root for --history") { text, _ in text },
            .value("--slowest", "N", \.slowest, help: "print the N slowest requests of the run's --log file (with their connection, stream and lateness)") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 1...1_000_000)
            },
        ])
    }

    let runFolder: String?
    let root: String
    let slowest: Int?

    init(arguments a: ParsedArguments) throws(UsageError) {
        var o = ReportOptions()
        try Self.options.apply(a, to: &o)
        if o.history {
            try a.expectPositionals(0...0, "nothing")
            runFolder = nil
        } else {
            try a.expectPositionals(1...1, "RUN (a run folder) or --history")
            if a.contains("--out") { throw UsageError("--out: only with --history") }
            runFolder = a.positionals[0]
        }
        if o.history && o.slowest != nil { throw UsageError("--slowest: reads one run's --log, not --history") }
        root = o.root
        slowest = o.slowest
    }

    func run() -> Int32 {
        do {
            if let runFolder, let n = slowest {
                for line in try SlowestRequests.report(runFolder: runFolder, count: n) { printOut(line) }
            } else if let runFolder {
                for url in try RunReport.redraw(runFolder) { printOut(url.path) }
            } else {
                printOut(try RunReport.drawHistory(root: URL(fileURLWithPath: root)).path)
            }
            return 0
        } catch {
            printError("pushbench report: \(error)")
            return 2
        }
    }
}

/// `pushbench report RUN --slowest N`: the slowest requests of a run's `--log` file.
enum SlowestRequests {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// One request of the log.
    struct Row: Equatable {
        var sequence: Int64
        var latencyUs: Int64, lateUs: Int64, serviceUs: Int64, sentUs: Int64
        var thread: String, connection: String, stream: String, status: String, reason: String, pushID: String
    }

    /// The `n` rows of `csv` (a `--log` file) with the highest corrected latency, slowest first.
    static func slowest(_ csv: Substring, count n: Int) throws(Failure) -> [Row] {
        var lines = csv.split(separator: "\n", omittingEmptySubsequences: true)[...]
        guard let header = lines.popFirst() else { throw Failure(description: "the log is empty") }
        let names = header.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        func column(_ name: String) throws(Failure) -> Int {
            guard let i = names.firstIndex(of: name) else { throw Failure(description: "the log has no '\(name)' column (is it a pushbench --log file?)") }
            return i
        }
        let seq = try column("seq"), latency = try column("latency_us"), late = try column("late_us"), service = try column("service_us")
        let sent = try column("sent_us"), thread = try column("thread"), connection = try column("connection")
        let stream = try column("stream"), status = try column("status"), reason = try column("reason")
        // The push id column is named `push_id`, or `apns_id` in logs of APNs runs only; either reads.
        let pushID = try names.contains("apns_id") ? column("apns_id") : column("push_id")
        // A pipeline run's log has its pushes too (kind "arrival"); only requests are ranked.
        let kind = names.firstIndex(of: "kind")
        var top: [Row] = []   // slowest first, at most n
        for (k, line) in lines.enumerated() {
            let f = line.split(separator: ",", omittingEmptySubsequences: false)
            guard f.count == names.count else {
                throw Failure(description: "line \(k + 2): not \(names.count) comma-separated fields")
            }
            // A push that names no request of the run has no latency: push lines are skipped before it is read.
            if let kind, f[kind] != "request" { continue }
            guard let l = Int64(f[latency]) else {
                throw Failure(description: "line \(k + 2): latency_us '\(f[latency])' is not a whole number")
            }
            if top.count == n, let last = top.last, l <= last.latencyUs { continue }
            let row = Row(sequence: Int64(f[seq]) ?? -1, latencyUs: l, lateUs: Int64(f[late]) ?? 0, serviceUs: Int64(f[service]) ?? 0,
                          sentUs: Int64(f[sent]) ?? 0, thread: String(f[thread]), connection: String(f[connection]),
                          stream: String(f[stream]), status: String(f[status]), reason: String(f[reason]), pushID: String(f[pushID]))
            let at = top.firstIndex { $0.latencyUs < l } ?? top.count
            top.insert(row, at: at)
            if top.count > n { top.removeLast() }
        }
        return top
    }

    /// The table for the run in `runFolder`.
    static func report(runFolder: String, count n: Int) throws -> [String] {
        let summaryURL = URL(fileURLWithPath: runFolder).appendingPathComponent("summary.json")
        guard let data = FileManager.default.contents(atPath: summaryURL.path) else {
            throw Failure(description: "\(summaryURL.path): cannot read the file")
        }
        let summary = try JSONValue.parse(Array(data))
        guard let path = summary["request_log"]?["path"]?.string else {
            throw Failure(description: "\(runFolder): the run kept no request log (run it with --log FILE)")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw Failure(description: "\(path): cannot read the run's request log")
        }
        let rows = try slowest(Substring(text), count: n)
        let ms = { (us: Int64) in String(format: "%.3f", Double(us) / 1000) }
        var cells = [["seq", "latency ms", "late ms", "service ms", "sent at s", "thread", "conn", "stream", "status", "reason", "push id"]]
        for r in rows {
            cells.append([String(r.sequence), ms(r.latencyUs), ms(r.lateUs), ms(r.serviceUs), String(format: "%.3f", Double(r.sentUs) / 1e6),
                          r.thread, r.connection, r.stream, r.status, r.reason.isEmpty ? "-" : r.reason, r.pushID.isEmpty ? "-" : r.pushID])
        }
        let widths = (0..<cells[0].count).map { i in cells.map { $0[i].count }.max() ?? 0 }
        var out = ["the \(rows.count) slowest of the requests in \(path) (times from the run's start, t0)"]
        for c in cells {
            out.append(c.enumerated().map { i, s in
                let pad = String(repeating: " ", count: widths[i] - s.count)
                return i >= 9 ? s + pad : pad + s
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
        return out
    }
}
