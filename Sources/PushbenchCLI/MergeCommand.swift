import Foundation
import PushMetrics

/// `pushbench merge`: merge runs of several agents into one run folder.
public struct MergeCommand: PushbenchCommand {
    public static let name = "merge"
    public static let abstract = "merge runs of several agents into one run folder"
    public static let options: [OptionSpec] = [.value("--out"), .value("--label")]
    public static let help = """
    USAGE: pushbench merge RUN... --out DIR [--label NAME]

    Merges run folders of several agents into the run folder DIR, exactly: histograms are added
    interval by interval (from latency.hlog and service_time.hlog), counts are summed, and
    throughput is computed over the union of the runs' measured time.

    OPTIONS:
      --out DIR               the merged run folder to create (must not exist or be empty)
      --label NAME            label of the merged run id (default merged)
      -h, --help              show this help
    """

    let runs: [String]
    let out: String
    let label: String

    public init(arguments a: ParsedArguments) throws(UsageError) {
        guard !a.positionals.isEmpty else { throw UsageError("missing RUN (one or more run folders)") }
        guard let out = a.value("--out") else { throw UsageError("--out: required (the merged run folder)") }
        runs = a.positionals
        self.out = out
        label = a.value("--label") ?? "merged"
        guard !label.isEmpty else { throw UsageError("--label: must not be empty") }
    }

    public func run() -> Int32 {
        do {
            let folder = try RunMerger.mergeFolders(runs, out: URL(fileURLWithPath: out), label: label)
            printOut(folder.path)
            return 0
        } catch {
            printError("pushbench merge: \(error)")
            return 2
        }
    }
}
