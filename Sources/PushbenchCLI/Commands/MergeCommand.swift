import Foundation
import PushMetrics

/// `pushbench merge`'s options.
struct MergeOptions: Equatable, Sendable {
    /// `--out`: the merged run folder (required).
    var out: String?
    /// `--label`.
    var label = "merged"
    /// `--allow-partial`: merge agents whose segments do not make one whole run.
    var allowPartial = false
}

/// `pushbench merge`: merge runs of several agents into one run folder.
struct MergeCommand: PushbenchCommand {
    static let name = "merge"
    static let abstract = "merge runs of several agents into one run folder"
    static let usage = """
    USAGE: pushbench merge RUN... --out DIR [--label NAME]

    Merges run folders of several agents into the run folder DIR, exactly: histograms are added
    interval by interval (from latency.hlog and service_time.hlog), counts are summed, and
    throughput is computed over the union of the runs' measured time. Runs that did not overlap in
    time are merged all the same, with a warning on stderr naming the gap; the charts leave it empty.
    Agents that ran segments of one run (--segment I/N) must cover every segment once, with the same
    rate, schedule, payload and t0; anything else is refused naming the agents, unless --allow-partial.
    """

    static var options: OptionTable<MergeOptions> {
        OptionTable([
            .value("--out", "DIR", \.out, help: "the merged run folder to create (must not exist or be empty)") { text, _ in text },
            .value("--label", "NAME", \.label, default: "merged", help: "label of the merged run id") { text, name throws(UsageError) in
                guard !text.isEmpty else { throw UsageError("\(name): must not be empty") }
                return text
            },
            .flag("--allow-partial", \.allowPartial,
                  help: "merge agents' segments even when some are missing, repeated, overlapping or of different runs (summary.json segments says what is wrong)"),
        ])
    }

    let runs: [String]
    let out: String
    let label: String
    let allowPartial: Bool

    init(arguments a: ParsedArguments) throws(UsageError) {
        guard !a.positionals.isEmpty else { throw UsageError("missing RUN (one or more run folders)") }
        var o = MergeOptions()
        try Self.options.apply(a, to: &o)
        guard let out = o.out else { throw UsageError("--out: required (the merged run folder)") }
        runs = a.positionals
        self.out = out
        label = o.label
        allowPartial = o.allowPartial
    }

    func run() -> Int32 {
        do {
            let m = try RunMerger.mergeAgents(runs, out: URL(fileURLWithPath: out), label: label, allowPartial: allowPartial)
            if let problems = m.segments?.problems, !problems.isEmpty {
                printError("pushbench merge: warning: merged anyway (--allow-partial): " + problems.joined(separator: "; "))
            }
            if let warning = RunMerger.gapWarning(m.gaps) { printError("pushbench merge: warning: \(warning)") }
            printOut(m.folder.path)
            return 0
        } catch {
            printError("pushbench merge: \(error)")
            return 2
        }
    }
}
