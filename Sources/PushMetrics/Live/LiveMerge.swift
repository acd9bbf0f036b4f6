/// The live seconds of several agents of one distributed run, merged into the seconds of the whole run
/// as they arrive: what `pushbench dashboard` serves.
///
/// Seconds line up by wall time. An agent's second N covers `[startUnix + N, startUnix + N + 1)`; agents
/// sharing `--start-at` start their measured phases within milliseconds of each other, so each agent's
/// seconds are shifted by its start's distance from the earliest start, rounded to whole seconds, and
/// merged second K is every agent's second that lands on K, as `pushbench merge` shifts run folders.
/// Until the first merged second goes out the count starts at the earliest start seen so far (an agent
/// that started earlier than those seen before moves their seconds on); after that it stays. An agent is
/// not expected in the merged seconds before the one its second 0 lands on.
/// Counts are summed and histograms added bucket by bucket (``TimelineInterval/merged(_:)``), so a merged
/// second's p99 is the p99 of every request the agents completed in it, never an average of theirs.
///
/// A merged second is given out (``take(now:)``) once every agent expected for it has sent it, or once it
/// has waited ``wait`` past its end: then it goes out with what came, and the agents that did not answer
/// are named in its `missing_agents`. An agent that said it is done (``finish(agent:)``) is not expected
/// after its last second; an agent given up on (``giveUp(agent:)``) is not waited for, and is named
/// missing in every second it did not send. Seconds are given out in order, each once; a second that
/// arrives after its merged second went out is counted in ``lateSeconds``, not merged. What is kept
/// between calls is the seconds not given out yet, at most ``maxPending`` of them (older ones go out
/// early, with whoever came), whatever the run's length.
///
/// ```swift
/// var merge = LiveMerge(agents: ["10.0.0.5:8088", "10.0.0.6:8088"])
/// merge.add(second, from: 0)
/// for merged in merge.take(now: Date().timeIntervalSince1970) { print(merged.jsonLine()) }
/// ```
public struct LiveMerge: Sendable {
    /// The agents' names, as `missing_agents` gives them; an agent is its index here.
    public let agents: [String]
    /// Seconds a merged second waits past its end for an agent that has not sent it.
    public let wait: Double
    /// Most merged seconds kept waiting at once.
    let maxPending: Int
    /// The measured phase's start the merged seconds count from, Unix seconds: the earliest agent's start
    /// seen before the first merged second went out.
    public private(set) var startUnix: Double?
    /// Per agent: its seconds that came after their merged second had gone out.
    public private(set) var lateSeconds: [Int]
    /// Per agent: its seconds merged so far.
    private(set) var mergedSeconds: [Int]

    /// The next merged second to give out (set once a merged second went out; from then on the count's
    /// start stays).
    private var next: Int?
    /// Merged second → agent → its second (already shifted onto the merged count).
    private var pending: [Int: [Int: LiveSecond]] = [:]
    /// Per agent: the last merged second it sent.
    private var lastSent: [Int?]
    /// Per agent: whether it said it is done (then nothing is expected after ``lastSent``).
    private var finished: [Bool]
    /// Per agent: whether it is given up on (then no second waits for it).
    private var gaveUp: [Bool]
    /// Per agent: its measured phase's start, once a second of it came.
    private var starts: [Double?]

    /// A merge of `agents` (names for `missing_agents`, e.g. host:port), each second waiting at most
    /// `wait` seconds past its end for an agent.
    public init(agents: [String], wait: Double = 3, maxPending: Int = 300) {
        precondition(!agents.isEmpty && maxPending > 0)
        self.agents = agents
        self.wait = wait
        self.maxPending = maxPending
        lateSeconds = Array(repeating: 0, count: agents.count)
        mergedSeconds = Array(repeating: 0, count: agents.count)
        lastSent = Array(repeating: nil, count: agents.count)
        finished = Array(repeating: false, count: agents.count)
        gaveUp = Array(repeating: false, count: agents.count)
        starts = Array(repeating: nil, count: agents.count)
    }

    /// Whole seconds from `base` to `start`, rounded as `pushbench merge` rounds an agent's shift.
    private static func shift(_ start: Double, from base: Double) -> Int {
        Int((start - base).rounded())
    }

    /// The merged second `second` of `agent` falls on.
    func mergedIndex(of second: LiveSecond) -> Int {
        guard let start = startUnix else { return second.interval.second }
        return second.interval.second + Self.shift(second.startUnix, from: start)
    }

    /// Takes one second of `agent`. Returns false when it came too late (its merged second went out
    /// already); a second sent twice replaces the first.
    @discardableResult
    public mutating func add(_ second: LiveSecond, from agent: Int) -> Bool {
        precondition(agents.indices.contains(agent))
        if starts[agent] == nil { starts[agent] = second.startUnix }
        if let start = startUnix {
            if next == nil, second.startUnix < start { rebase(on: second.startUnix) }
        } else {
            startUnix = second.startUnix
        }
        let k = mergedIndex(of: second)
        if let next, k < next {
            lateSeconds[agent] += 1
            return false
        }
        var s = second
        s.interval.second = k
        pending[k, default: [:]][agent] = s
        lastSent[agent] = max(lastSent[agent] ?? k, k)
        return true
    }

    /// Counts the merged seconds from `start`, earlier than ``startUnix``: the seconds waiting move onto
    /// the new count. Only while no merged second has gone out, so every second sent is still waiting.
    private mutating func rebase(on start: Double) {
        guard let old = startUnix else { return }
        startUnix = start
        var moved: [Int: [Int: LiveSecond]] = [:]
        for got in pending.values {
            for (agent, var s) in got {
                s.interval.second += Self.shift(s.startUnix, from: start) - Self.shift(s.startUnix, from: old)
                moved[s.interval.second, default: [:]][agent] = s
            }
        }
        pending = moved
        lastSent = agents.indices.map { a in moved.filter { $0.value[a] != nil }.keys.max() }
    }

    /// `agent` said it is done, and every second it sent has been added: it is not expected after its
    /// last one.
    public mutating func finish(agent: Int) {
        finished[agent] = true
    }

    /// No second waits for `agent` any more (it stopped answering and the others are done): the seconds
    /// go out without it, naming it missing, and the merge completes without it saying it is done.
    public mutating func giveUp(agent: Int) {
        gaveUp[agent] = true
    }

    /// Whether `agent` said it is done.
    public func isFinished(agent: Int) -> Bool { finished[agent] }

    /// True when every agent said it is done or is given up on, and every merged second has gone out.
    public var isComplete: Bool { agents.indices.allSatisfy { finished[$0] || gaveUp[$0] } && pending.isEmpty }

    /// Merged seconds kept waiting for an agent.
    public var pendingCount: Int { pending.count }

    /// Whether `agent` is expected to send merged second `k` (of the count from `start`).
    private func expects(_ agent: Int, _ k: Int, start: Double) -> Bool {
        if let own = starts[agent], k < Self.shift(own, from: start) { return false }
        guard finished[agent] else { return true }
        guard let last = lastSent[agent] else { return false }
        return k <= last
    }

    /// The merged seconds ready at `now` (Unix seconds), in order: those every expected agent sent,
    /// those waited for long enough, and the oldest beyond ``maxPending``.
    public mutating func take(now: Double) -> [LiveSecond] {
        guard let start = startUnix, let newest = pending.keys.max() else { return [] }
        var k = next ?? pending.keys.min()!
        var out: [LiveSecond] = []
        while k <= newest {
            let got = pending[k] ?? [:]
            let expected = agents.indices.filter { expects($0, k, start: start) }
            let complete = expected.allSatisfy { got[$0] != nil || gaveUp[$0] }
            let overdue = now >= start + Double(k + 1) + wait
            guard complete || overdue || pending.count > maxPending else { break }
            out.append(merge(k, got, missing: expected.filter { got[$0] == nil }, start: start))
            for a in got.keys { mergedSeconds[a] += 1 }
            pending[k] = nil
            k += 1
        }
        if !out.isEmpty { next = k }
        return out
    }

    /// Merged second `k` of the seconds `got` (by agent).
    private func merge(_ k: Int, _ got: [Int: LiveSecond], missing: [Int], start: Double) -> LiveSecond {
        let seconds = got.sorted { $0.key < $1.key }.map(\.value)
        let interval: TimelineInterval
        if seconds.isEmpty {
            interval = TimelineInterval(second: k, sent: 0, completed: 0, succeeded: 0, failed: 0, transportErrors: 0,
                                        latency: .latencyMicroseconds(), serviceTime: .latencyMicroseconds())
        } else {
            interval = TimelineInterval.merged(seconds.map(\.interval))[0]
        }
        func sum(_ value: (LiveSecond) -> Int64?) -> Int64? {
            seconds.compactMap(value).reduce(nil) { ($0 ?? 0) + $1 }
        }
        var errors: [String: Int64]?
        for s in seconds {
            guard let e = s.errors else { continue }
            errors = (errors ?? [:]).merging(e, uniquingKeysWith: +)
        }
        // The stream limit each agent's peer set: the tightest is the one that binds. Busy: the busiest
        // agent is the one that holds the rate back.
        return LiveSecond(interval: interval, startUnix: start, errors: errors, inFlight: sum(\.inFlight),
                          connections: sum(\.connections), peerStreamLimit: seconds.compactMap(\.peerStreamLimit).min(),
                          busy: seconds.compactMap(\.busy).max(), stage: seconds.lazy.compactMap(\.stage).first,
                          agents: Int64(seconds.count), missingAgents: missing.map { agents[$0] })
    }
}
