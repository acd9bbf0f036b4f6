import Foundation
import PushMetrics

/// `pushbench report`'s options.
struct ReportOptions: Equatable, Sendable {
    /// `--history`.
    var history = false
    /// `--out`: the results root for `--history`.
    var root = "results"
}

/// `pushbench report`: redraw the charts of a run (or --history).
struct ReportCommand: PushbenchCommand {
    static let name = "report"
    static let abstract = "redraw the charts of a run (or --history)"
    static let usage = """
    USAGE: pushbench report RUN
           pushbench report --history [--out DIR]

    RUN is a run folder: report.svg and report.html are redrawn from its summary.json, latency.hlog,
    service_time.hlog and timeline.csv. With --history, DIR/history.csv (DIR defaults to ./results)
    is drawn as DIR/history.svg: achieved rps and p50/p99/p99.9 per run, one series per comparable
    configuration (encoder, rate, protocol, target), runs labelled by label and date, latency on a
    log axis.
    """

    static var options: OptionTable<ReportOptions> {
        OptionTable([
            .flag("--history", \.history, help: "draw the trend of history.csv instead of one run"),
            .value("--out", "DIR", \.root, default: "results", help: "results root for --history") { text, _ in text },
        ])
    }

    let runFolder: String?
    let root: String

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
        root = o.root
    }

    func run() -> Int32 {
        do {
            if let runFolder {
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
