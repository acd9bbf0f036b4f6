import Foundation
import PushMetrics

/// `pushbench report`: redraw the charts of a run (or --history).
public struct ReportCommand: PushbenchCommand {
    public static let name = "report"
    public static let abstract = "redraw the charts of a run (or --history)"
    public static let options: [OptionSpec] = [.flag("--history"), .value("--out")]
    public static let help = """
    USAGE: pushbench report RUN
           pushbench report --history [--out DIR]

    RUN is a run folder: report.svg and report.html are redrawn from its summary.json, latency.hlog,
    service_time.hlog and timeline.csv. With --history, DIR/history.csv (DIR defaults to ./results)
    is drawn as DIR/history.svg: achieved rps and p50/p99/p99.9 per run.

    OPTIONS:
      --history               draw the trend of history.csv instead of one run
      --out DIR               results root for --history (default ./results)
      -h, --help              show this help
    """

    let runFolder: String?
    let root: String

    public init(arguments a: ParsedArguments) throws(UsageError) {
        if a.flag("--history") {
            try a.expectPositionals(0...0, "nothing")
            runFolder = nil
        } else {
            try a.expectPositionals(1...1, "RUN (a run folder) or --history")
            if a.value("--out") != nil { throw UsageError("--out: only with --history") }
            runFolder = a.positionals[0]
        }
        root = a.value("--out") ?? "results"
    }

    public func run() -> Int32 {
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
