import PushMetrics
import PushVocabulary

/// What `pushbench dashboard` has merged so far: the whole run's counts and corrected-latency histogram
/// (every merged second added), and how many seconds each agent was missing from. The page's status
/// line (`live`) and its final figures (`final`) come from here. Main thread only.
struct MergedRunTotals {
    /// The agents' names, as `missing_agents` gives them.
    let agents: [String]
    /// Merged seconds so far, and the last one.
    private(set) var seconds = 0
    private(set) var last: LiveSecond?
    /// When the measured phase began (the merge's count starts there), Unix seconds.
    private(set) var startUnix: Double?
    private(set) var counts = RequestCounts()
    /// Corrected latency of every merged second, µs.
    let latency = HdrHistogram.latencyMicroseconds()
    /// Per agent name: the merged seconds it was missing from.
    private(set) var missing: [String: Int] = [:]

    init(agents: [String]) {
        self.agents = agents
    }

    /// Adds one merged second.
    mutating func add(_ s: LiveSecond) {
        let i = s.interval
        if startUnix == nil { startUnix = s.startUnix }
        seconds += 1
        last = s
        counts.sent += i.sent
        counts.completed += i.completed
        counts.succeeded += i.succeeded
        counts.failed += i.failed
        counts.transportErrors += i.transportErrors
        for (reason, n) in s.errors ?? [:] { counts.byReason[reason, default: 0] += n }
        latency.add(i.latency.decode())
        for name in s.missingAgents ?? [] { missing[name, default: 0] += 1 }
    }

    /// The `live` event at `now` (Unix seconds): the totals so far, the last second's figures, and which
    /// agents answer (`answering[k]`: nil before the first ask).
    func liveJSON(now: Double, answering: [Bool?], done: Bool) -> String {
        JSONWriter.text { w in
            w.object { o in
                let elapsed = startUnix.map { max(0, now - $0) } ?? 0
                o.member("elapsed_s", (elapsed * 1000).rounded() / 1000)
                o.member("phase", done ? "done" : startUnix == nil ? "waiting" : "measure")
                o.member("sent", counts.sent)
                o.member("completed", counts.completed)
                o.member("errors", counts.failed + counts.transportErrors)
                if let f = last?.inFlight { o.member("in_flight", f) }
                if let t = last?.interval.target { o.member("target_rps", t) }
                if let stage = last?.stage { o.member("stage", stage) }
                if let h = last.map({ $0.interval.latency.decode() }), h.totalCount > 0 {
                    o.member("p50_us", h.valueAtPercentile(50))
                    o.member("p99_us", h.valueAtPercentile(99))
                }
                o.member("agents", Int64(answering.filter { $0 == true }.count))
                o.member("agents_expected", Int64(agents.count))
                o.key("missing_agents")
                o.array { a in for (k, name) in agents.enumerated() where answering[k] == false { a.value(name) } }
            }
        }
    }

    /// The `final` event: the merged run's figures in summary.json's shape, as far as the seconds tell
    /// them (the merged run folder `pushbench merge` makes afterwards has the rest), per agent the seconds
    /// it was missing from and those that came too late to merge, and the agents given up on
    /// (`gaveUp[k]`: silent past `--give-up` while the others were done) as `silent_agents`.
    func finalJSON(label: String, late: [Int], gaveUp: [Bool], interrupted: Bool) -> String {
        JSONWriter.text { w in
            w.object { o in
                o.member("label", label)
                o.member("interrupted", interrupted)
                o.member("seconds", Int64(seconds))
                o.key("silent_agents")
                o.array { a in for (k, name) in agents.enumerated() where k < gaveUp.count && gaveUp[k] { a.value(name) } }
                o.member("requests") { r in
                    r.member("sent", counts.sent)
                    r.member("completed", counts.completed)
                    r.member("succeeded", counts.succeeded)
                    r.member("failed", counts.failed)
                    r.member("transport_errors", counts.transportErrors)
                    r.member("by_reason", sortedByKey: counts.byReason)
                }
                if latency.totalCount > 0 {
                    o.member("latency_us") { l in
                        l.member("p50", latency.valueAtPercentile(50))
                        l.member("p90", latency.valueAtPercentile(90))
                        l.member("p99", latency.valueAtPercentile(99))
                        l.member("p999", latency.valueAtPercentile(99.9))
                        l.member("max", latency.max)
                    }
                }
                o.member("throughput") { t in
                    t.member("achieved_rps", seconds > 0 ? (Double(counts.completed) / Double(seconds) * 10).rounded() / 10 : 0)
                }
                o.member("agents") { a in
                    for (k, name) in agents.enumerated() {
                        a.member(name) { m in
                            m.member("missing_seconds", Int64(missing[name] ?? 0))
                            m.member("late_seconds", Int64(k < late.count ? late[k] : 0))
                            m.member("gave_up", k < gaveUp.count && gaveUp[k])
                        }
                    }
                }
            }
        }
    }
}
