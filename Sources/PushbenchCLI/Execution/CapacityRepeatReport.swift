import Foundation
import LoadGenerator
import PushMetrics
import PushVocabulary

/// capacity.json, capacity.md and capacity.svg of a search run several times (`--repeat N`): each search
/// keeps its own report in `search-K/`, and this one, beside them, gives each search's answer, the median
/// and the spread. The median answer is the answer: JSON's `answer`, the chart's line and the verdict
/// (--junit) are the median search's.
struct CapacityRepeatReport {
    let command: CapacityCommand
    /// The searches in the order run; only the last can be interrupted (a Ctrl-C ends the repetition).
    let searches: [CapacityReport]
    let startedAt: Date
    /// The whole repetition's wall time.
    let seconds: Double

    /// The folder of search `k` (from 1) inside the repetition's folder.
    static func folderName(_ k: Int) -> String { "search-\(k)" }

    /// The searches that ran to their end: the statistics are theirs.
    var completed: [(number: Int, report: CapacityReport)] {
        zip(1..., searches).filter { !$0.1.interrupted }.map { (number: $0.0, report: $0.1) }
    }

    var interrupted: Bool { searches.contains { $0.interrupted } }

    /// The answers of the searches that ran to their end, or nil when none did.
    var stability: CapacityStability? {
        let done = completed
        return done.isEmpty ? nil : CapacityStability(answers: done.map { $0.report.answer?.rate })
    }

    /// The search whose answer is the median (its number from 1 and its report), or nil when none ended.
    var median: (number: Int, report: CapacityReport)? {
        stability.map { completed[$0.medianIndex] }
    }

    /// The last line printed: the stability, or why there is none.
    var line: String {
        guard let stability else {
            return "capacity: interrupted in search \(searches.count) of \(command.options.repeats); no search ended, no answer"
        }
        let cut = interrupted ? " (interrupted in search \(searches.count) of \(command.options.repeats))" : ""
        return stability.line + cut
    }

    var json: JSONValue {
        let first = searches[0]
        // The search's settings as each search's capacity.json gives them, then the repetition's figures.
        let own: Set<String> = ["started_at", "interrupted", "answer", "knee_rps", "search_s", "steps"]
        var members: [(String, JSONValue)] = []
        if case .object(let m) = first.json {
            for (key, value) in m where !own.contains(key) {
                members.append((key, value))
                if key == "version" {
                    members.append(("started_at", .string(ISO8601DateFormatter().string(from: startedAt))))
                    members.append(("interrupted", .bool(interrupted)))
                }
            }
        }
        members.append(("repeat", .int(Int64(command.options.repeats))))
        var answer: JSONValue = .null
        if let m = median, case .object(var a) = m.report.json["answer"] ?? .null {
            a.append(("search", .int(Int64(m.number))))
            a.append(("folder", .string(Self.folderName(m.number))))
            answer = .object(a)
        }
        members.append(("answer", answer))
        members.append(("stability", stability.map(Self.json) ?? .null))
        members.append(("searches", .array(zip(1..., searches).map { k, r in
            .object([
                ("search", .int(Int64(k))), ("folder", .string(Self.folderName(k))),
                ("interrupted", .bool(r.interrupted)),
                ("answer", r.json["answer"] ?? .null),
                ("steps", .int(Int64(r.runs.count))),
                ("search_s", .double((r.seconds * 10).rounded() / 10)),
            ])
        })))
        members.append(("search_s", .double((seconds * 10).rounded() / 10)))
        return .object(members)
    }

    static func json(_ s: CapacityStability) -> JSONValue {
        func rate(_ v: Int?) -> JSONValue { v.map { .int(Int64($0)) } ?? .null }
        return .object([
            ("answers_rps", .array(s.answers.map(rate))),
            ("median_rps", rate(s.median)),
            ("lowest_rps", rate(s.lowest)), ("highest_rps", rate(s.highest)),
            ("spread_rps", rate(s.spread)),
            ("spread_pct", s.spreadFraction.map { .double(($0 * 10_000).rounded() / 100) } ?? .null),
        ])
    }

    var markdown: String {
        let o = command.options
        var out = "# Capacity search, \(o.repeats) times\n\n**\(line)**\n\n"
        if let m = median {
            out += "The answer is the median: search \(m.number)'s, **\(m.report.sentence)** "
            out += "(the lower of the two middle answers when the count is even; --junit judges the objectives there).\n\n"
        }
        out += "Objectives: \(searches[0].objectives.map { "`\($0.description)`" }.joined(separator: ", ")). "
        out += "Each search as in its own capacity.md; \(searches.count) searches in \(Int(seconds.rounded())) s"
        out += interrupted ? " (interrupted).\n\n" : ".\n\n"
        out += "| search | answer | stopped by | steps | time | folder |\n|---|---|---|---|---|---|\n"
        for (k, r) in zip(1..., searches) {
            let answer = r.interrupted ? "interrupted" : r.answer?.rate.map { "\(CapacitySearch.grouped($0)) rps" } ?? "none"
            let stop = r.answer.map { $0.limit == .held ? "--max held" : "\($0.limit.name): \($0.limit.why)" } ?? ""
            out += "| \(k) | \(answer) | \(stop) | \(r.runs.count) | \(Int(r.seconds.rounded())) s | \(Self.folderName(k))/ |\n"
        }
        return out
    }

    func write(to folder: URL) throws {
        try Data((json.render() + "\n").utf8).write(to: folder.appendingPathComponent("capacity.json"))
        try Data(markdown.utf8).write(to: folder.appendingPathComponent("capacity.md"))
        // Every search's steps on one chart: where the answers sit against the curve they were found on.
        let shape = searches[0]
        let points = completed.flatMap { $0.report.chartPoints }
        let answer = stability?.median
        let subtitle = "\(shape.objectives.map(\.description).joined(separator: ", ")) · target \(command.stepOptions.target ?? "embedded") · "
            + "the steps of \(completed.count) searches of \(CapacityExecution.seconds(command.options.stepSeconds)) steps"
        let title = "pushbench capacity: " + (answer.map { "median \(CapacitySearch.grouped($0)) rps" } ?? "not found")
            + " of \(completed.count) searches"
        let svg = CapacityChart.svg(title: title, subtitle: subtitle, points: points, latencyName: shape.plottedName,
                                    objective: shape.plotted.objective.map { ($0.limit, $0.description) },
                                    answer: answer.map(Double.init), knee: CapacityChart.knee(points))
        try Data(svg.utf8).write(to: folder.appendingPathComponent("capacity.svg"))
    }

    /// JUnit XML judged at the median search's answer, the stability in each case's output.
    func junit(suite: String) -> JUnitReport {
        var report = (median?.report ?? searches[searches.count - 1]).junit(suite: suite)
        report.seconds = seconds
        for i in report.cases.indices {
            report.cases[i].output += "; \(line)"
        }
        return report
    }
}
