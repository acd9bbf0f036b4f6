import Foundation
import PushMetrics
import PushTransport
import PushVocabulary
import Synchronization

/// Follows the agents of a distributed run for `pushbench dashboard`: a thread that, every
/// ``pollInterval``, asks each agent's dashboard endpoint for its state (`GET /state`) and then for the
/// seconds it closed since the last one received (`GET /seconds?after=N&limit=K`), all agents at once
/// with one short timeout per ask, and feeds them to a ``LiveMerge``. The merged seconds go to
/// `onSeconds` as they are ready. The seconds come a page of at most ``pageLimit`` at a time, and an
/// agent whose page was full is asked for the next within the same round, at most ``maxPages`` pages a
/// round: a dashboard that starts late on a long run catches up in bounded asks (an agent that ignores
/// `limit` sends everything in one page). An agent that does not answer is marked so (and shown missing
/// in the seconds it should have sent); when it answers again it is asked for the seconds after the last
/// one received, so it picks up where it left off. Once at least one agent is done and every other has
/// not answered for ``giveUpAfter``, those silent ones are given up on: the merge completes without them,
/// each named missing in the seconds it did not send.
final class AgentFollower: @unchecked Sendable {
    // @unchecked: `merge` and `agents` belong to the follower's thread (or the caller of `poll`, never
    // both); what other threads read goes through `status`, a Mutex.

    /// What the follower knows of one agent.
    struct Agent: Equatable, Sendable {
        /// The agent's URL.
        let address: AgentAddress
        /// The numeric address its name resolved to, kept until a request fails.
        var resolved: String?
        /// The last of its own seconds received (-1: none yet): the next ask is `after=` this.
        var after = -1
        /// Whether its last poll was answered; nil before the first.
        var answering: Bool?
        /// Why the last poll failed.
        var lastError: String?
        /// Whether it said it is done (`"done":true` in /state) and its last seconds were fetched after.
        var done = false
        /// `label` and `kind` from its /state.
        var label: String?, kind: String?
        /// Its seconds received, and lines that were not seconds.
        var seconds = 0, badLines = 0
        /// When (the `now` of the round) it stopped answering; nil while it answers.
        var silentSince: Double?
        /// Whether it is given up on: silent past ``AgentFollower/giveUpAfter`` while the others are done.
        var gaveUp = false
    }

    /// How often the agents are asked, seconds.
    let pollInterval: Double
    /// How long one ask (every agent at once) may take, ms.
    let timeoutMilliseconds: UInt64
    /// Seconds an agent may be silent, once the others are done, before the merge ends without it.
    let giveUpAfter: Double
    /// Most seconds asked of an agent at once (`limit=`).
    let pageLimit: Int
    /// Most pages asked of an agent in one round.
    let maxPages: Int
    private var merge: LiveMerge
    private var agents: [Agent]
    private let get: ParallelGet
    private let onSeconds: @Sendable ([LiveSecond]) -> Void
    private let onNote: @Sendable (String) -> Void
    private let shared: Mutex<(agents: [Agent], complete: Bool, late: [Int])>
    private let stopping = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private var thread: Thread?

    /// A follower of `addresses`, merging with `wait` for a late agent and giving up on a silent one after
    /// `giveUp` once the others are done; `onSeconds` gets the merged seconds in order and `onNote` a line
    /// when an agent stops answering, answers again or is given up on (both on the follower's thread).
    init(_ addresses: [AgentAddress], wait: Double, giveUp: Double = 10, pollInterval: Double = 0.5,
         timeoutMilliseconds: UInt64 = 1_000, pageLimit: Int = 120, maxPages: Int = 5,
         onSeconds: @escaping @Sendable ([LiveSecond]) -> Void, onNote: @escaping @Sendable (String) -> Void) throws(TransportError) {
        precondition(pageLimit > 0 && maxPages > 0)
        self.pollInterval = pollInterval
        self.timeoutMilliseconds = timeoutMilliseconds
        giveUpAfter = giveUp
        self.pageLimit = pageLimit
        self.maxPages = maxPages
        merge = LiveMerge(agents: addresses.map(\.name), wait: wait)
        agents = addresses.map { Agent(address: $0) }
        get = try ParallelGet()
        self.onSeconds = onSeconds
        self.onNote = onNote
        shared = Mutex((agents, false, Array(repeating: 0, count: addresses.count)))
    }

    /// Every agent as last seen.
    var status: [Agent] { shared.withLock { $0.agents } }

    /// Per agent, its seconds that came too late to merge.
    var lateSeconds: [Int] { shared.withLock { $0.late } }

    /// True once every agent said it is done or is given up on, and every merged second has gone to
    /// `onSeconds`.
    var isComplete: Bool { shared.withLock { $0.complete } }

    /// Starts polling on a thread of its own.
    func start() {
        let t = Thread { [self] in
            nameCurrentThread("pb-dash-follow")
            while !stopping.load(ordering: .relaxed) {
                let began = Date().timeIntervalSince1970
                if poll(now: began) { break }
                let rest = pollInterval - (Date().timeIntervalSince1970 - began)
                if rest > 0 { usleep(UInt32(rest * 1_000_000)) }
            }
            finished.store(true, ordering: .releasing)
        }
        thread = t
        t.start()
    }

    /// Stops polling and waits for the thread (at most one round and one interval).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        guard thread != nil else { return }
        while !finished.load(ordering: .acquiring) { usleep(5_000) }
    }

    /// One round: every agent's state, then its new seconds page by page; the merged seconds ready at
    /// `now` (Unix seconds) go to `onSeconds`. Returns true when the merge is complete.
    @discardableResult
    func poll(now: Double) -> Bool {
        let states = ask(agents.indices.filter { !merge.isFinished(agent: $0) && !agents[$0].gaveUp }) { _ in "/state" }
        for (i, outcome) in states.enumerated() {
            guard case .answer(200, let body)? = outcome, let state = try? JSONValue.parse(body) else { continue }
            agents[i].label = state["label"]?.string ?? agents[i].label
            let kind = state["kind"]?.string
            if let kind, kind != agents[i].kind, kind == "gateway" {
                onNote("agent \(agents[i].address.name) is a gateway's dashboard: it has no measured seconds to merge")
            }
            agents[i].kind = kind ?? agents[i].kind
            if state["done"] == .bool(true) { agents[i].done = true }
        }
        // An agent that did not answer for its state is not asked for its seconds this round: a round is
        // one ask for the states and at most maxPages for the seconds, each bounded by the timeout,
        // whatever the agents do.
        var failures = states.map { Self.failure($0) }
        var caughtUp = [Bool](repeating: false, count: agents.count)
        var more = agents.indices.filter { states[$0] != nil && failures[$0] == nil }
        for _ in 0..<maxPages where !more.isEmpty {
            let pages = ask(more) { "/seconds?after=\($0.after)&limit=\(pageLimit)" }
            var full: [Int] = []
            for i in more {
                if let failure = Self.failure(pages[i]) {
                    failures[i] = failure
                    continue
                }
                guard case .answer(_, let body)? = pages[i] else { continue }
                let before = agents[i].after
                let lines = body.split(separator: UInt8(ascii: "\n")).filter { !$0.isEmpty }
                for line in lines {
                    guard let s = try? LiveSecond.parse(line: String(decoding: line, as: UTF8.self)) else {
                        agents[i].badLines += 1
                        continue
                    }
                    merge.add(s, from: i)
                    agents[i].seconds += 1
                    agents[i].after = max(agents[i].after, s.interval.second)
                }
                // A full page may have more behind it; more lines than asked means the agent ignores
                // `limit` and sent everything.
                if lines.count == pageLimit && agents[i].after > before { full.append(i) } else { caughtUp[i] = true }
            }
            more = full
        }
        for i in agents.indices where states[i] != nil {
            if let failure = failures[i] {
                agents[i].resolved = nil
                agents[i].done = false
                if agents[i].answering != false { onNote("agent \(agents[i].address.name) does not answer: \(failure)") }
                agents[i].answering = false
                agents[i].lastError = failure
                if agents[i].silentSince == nil { agents[i].silentSince = now }
                continue
            }
            if agents[i].answering == false { onNote("agent \(agents[i].address.name) answers again") }
            agents[i].answering = true
            agents[i].lastError = nil
            agents[i].silentSince = nil
            // Its state was read before these seconds: when it said done and the last page came, they
            // were its last.
            if agents[i].done, caughtUp[i], !merge.isFinished(agent: i) { merge.finish(agent: i) }
        }
        for i in Self.givingUp(agents, finished: agents.indices.map { merge.isFinished(agent: $0) }, now: now, after: giveUpAfter) {
            agents[i].gaveUp = true
            merge.giveUp(agent: i)
            onNote("agent \(agents[i].address.name) has not answered for \(DashboardExecution.seconds(giveUpAfter)) and every other agent is done: "
                   + "giving up on it (named missing in the seconds it did not send)")
        }
        let out = merge.take(now: now)
        if !out.isEmpty { onSeconds(out) }
        let complete = merge.isComplete
        shared.withLock { $0 = (agents, complete, merge.lateSeconds) }
        return complete
    }

    /// The agents to give up on at `now`: when at least one agent is done (`finished`) and every other
    /// has not answered for at least `after` seconds, those others; otherwise none. An agent that answers
    /// but is not done yet keeps the merge going, however long its run.
    static func givingUp(_ agents: [Agent], finished: [Bool], now: Double, after: Double) -> [Int] {
        let open = agents.indices.filter { !finished[$0] && !agents[$0].gaveUp }
        guard finished.contains(true), !open.isEmpty,
              open.allSatisfy({ i in agents[i].silentSince.map { since in now - since >= after } ?? false }) else { return [] }
        return open
    }

    /// Asks the agents `which` for `path(agent)` at once; nil for an agent not asked.
    private func ask(_ which: [Int], _ path: (Agent) -> String) -> [ParallelGet.Outcome?] {
        var targets: [ParallelGet.Target] = [], owners: [Int] = []
        var out = [ParallelGet.Outcome?](repeating: nil, count: agents.count)
        for i in which {
            let a = agents[i]
            do throws(HostResolver.Failure) {
                let host: String
                if let known = a.resolved { host = known } else { host = try HostResolver.numeric(a.address.host) }
                agents[i].resolved = host
                targets.append(ParallelGet.Target(host: host, port: a.address.port, authority: a.address.name, path: path(a)))
                owners.append(i)
            } catch {
                out[i] = .failed(error.description)
            }
        }
        for (k, outcome) in get.run(targets, timeoutMilliseconds: timeoutMilliseconds).enumerated() { out[owners[k]] = outcome }
        return out
    }

    /// Why an ask failed, or nil when it was answered 200 (or not made).
    private static func failure(_ outcome: ParallelGet.Outcome?) -> String? {
        switch outcome {
        case nil, .answer(200, _)?: return nil
        case .answer(let status, _)?: return "HTTP \(status)"
        case .failed(let reason)?: return reason
        }
    }
}
