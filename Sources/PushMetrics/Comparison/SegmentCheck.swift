import PushVocabulary

/// What `pushbench merge` checks of runs made by agents that each sent one segment of a run (`--segment
/// I/N`): together they must cover every segment once, of one split, with the same schedule, payload and
/// t0, or the merge would not be the run a single big enough agent would have made.
public struct SegmentCheck: Sendable {
    /// One agent's run as the check sees it.
    struct Agent: Sendable, Equatable {
        /// How the user named it (the folder as given).
        var name: String
        /// I of I/N.
        var index: Int
        /// N.
        var count: Int
        /// What every agent of one run must agree on, by name (rate, schedule, payload, t0 …), as text.
        var plan: [(String, String)]

        static func == (a: Agent, b: Agent) -> Bool {
            a.name == b.name && a.index == b.index && a.count == b.count && a.plan.elementsEqual(b.plan, by: { $0 == $1 })
        }
    }

    /// The agents, in the order given.
    let agents: [Agent]

    /// The check of `runs` (named `names`); nil when none of them ran a segment (a plain merge of runs).
    /// A mix of segment runs and plain ones is refused.
    public init?(_ runs: [LoadedRun], names: [String]) throws {
        let withSegment = zip(runs, names).filter { $0.0.summary["segment"] != nil }
        if withSegment.isEmpty { return nil }
        if let plain = zip(runs, names).first(where: { $0.0.summary["segment"] == nil }) {
            throw ResultsError("\(plain.1) ran no segment (no --segment) but \(withSegment[0].1) did: merge the agents of one run only")
        }
        agents = zip(runs, names).map { run, name in
            let s = run.summary
            func text(_ path: String) -> String {
                guard let v = s.value(atPath: path) else { return "-" }
                if let i = v.integer { return String(i) }
                if let n = v.number { return n == n.rounded() && abs(n) < 1e15 ? String(Int64(n)) : String(n) }
                return v.string ?? v.render()
            }
            return Agent(name: name, index: Int(s.value(atPath: "segment.index")?.integer ?? -1),
                         count: Int(s.value(atPath: "segment.count")?.integer ?? -1),
                         plan: [("rate", text("config.rps")), ("schedule", text("config.schedule.digest")),
                                ("duration", text("config.duration_s")), ("requests", text("config.requests")),
                                ("warm-up", text("config.warmup_s")), ("protocol", text("config.protocol")),
                                ("payload", text("segment.payload_digest")), ("tokens", text("config.tokens")),
                                ("seed", text("segment.seed")), ("t0", text("start.t0_unix_ns"))])
        }
    }

    /// N, when every agent agrees on it.
    public var count: Int? { Set(agents.map(\.count)).count == 1 ? agents[0].count : nil }

    /// The segments present, ascending, each once.
    var covered: [Int] { Array(Set(agents.map(\.index))).sorted() }

    /// The segments of 0..<N nobody ran (empty when N is not agreed on).
    var missing: [Int] {
        guard let n = count else { return [] }
        let have = Set(agents.map(\.index))
        return (0..<n).filter { !have.contains($0) }
    }

    /// Everything that keeps these agents from making one run, one sentence each, naming the agents.
    public var problems: [String] {
        var out: [String] = []
        let splits = Dictionary(grouping: agents, by: \.count)
        if splits.count > 1 {
            let parts = splits.keys.sorted().map { n in "\(splits[n]!.map { "\($0.name) (\($0.index)/\(n))" }.joined(separator: ", "))" }
            out.append("the agents split the run differently, so their segments overlap: " + parts.joined(separator: " against "))
        }
        for (index, group) in Dictionary(grouping: agents, by: \.index).sorted(by: { $0.key < $1.key }) where group.count > 1 {
            out.append("segment \(index)/\(group[0].count) is given \(group.count) times: \(group.map(\.name).joined(separator: ", "))")
        }
        if let n = count {
            let gone = missing
            if !gone.isEmpty {
                let list = gone.map { "\($0)/\(n)" }.joined(separator: ", ")
                out.append("segment\(gone.count == 1 ? "" : "s") \(list) \(gone.count == 1 ? "is" : "are") missing (\(agents.count) of \(n) agents given)")
            }
        }
        for (k, (field, _)) in agents[0].plan.enumerated() {
            let values = Dictionary(grouping: agents, by: { $0.plan[k].1 })
            guard values.count > 1 else { continue }
            let parts = values.sorted { $0.value.count > $1.value.count }.map { value, group in
                "\(value) (\(group.map(\.name).joined(separator: ", ")))"
            }
            out.append("the agents differ in \(field): " + parts.joined(separator: " against "))
        }
        return out
    }

    /// summary.json `segments` of the merged run.
    public var json: JSONValue {
        let p = problems
        return .object([
            ("count", count.map { .int(Int64($0)) } ?? .null),
            ("agents", .int(Int64(agents.count))),
            ("covered", .array(covered.map { .int(Int64($0)) })),
            ("missing", .array(missing.map { .int(Int64($0)) })),
            ("complete", .bool(p.isEmpty)),
            ("problems", .array(p.map { .string($0) })),
        ])
    }
}
