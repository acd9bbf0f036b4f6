import Foundation
import PushMetrics
import PushTransport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What `pushbench dashboard` does: follows the agents (``AgentFollower``) and serves their merged
/// seconds with the run's page and endpoints (``RunDashboard``: `/`, `/events`, `/seconds`, `/state`),
/// shows each on stderr (and stdout with `--ndjson`), and ends when every agent is done (or, once some
/// are, the others have been silent for `--give-up`) or on a stop signal, with the final figures of what
/// was merged.
struct DashboardExecution {
    let agents: [AgentAddress]
    let options: DashboardCommandOptions

    func run() -> Int32 {
        let previous = catchInterrupts()
        defer { restoreInterrupts(previous) }
        let count = agents.count
        let label = "\(count) agent\(count == 1 ? "" : "s")"
        let dashboard: RunDashboard
        do throws(ScrapeEndpoint.Failure) {
            dashboard = try RunDashboard(address: MetricsAddress(host: options.listen.host, port: options.listen.port),
                                         viewers: options.viewers,
                                         source: RunDashboard.Source(kind: "dashboard", label: label, warmupSeconds: 0))
        } catch {
            printError("pushbench dashboard: --listen: \(error)")
            return 2
        }
        defer { dashboard.stop() }
        // The follower's thread hands the merged seconds over; this thread publishes and prints them.
        let handed = Mutex<[LiveSecond]>([]), notes = Mutex<[String]>([])
        let follower: AgentFollower
        do {
            follower = try AgentFollower(agents, wait: options.wait, giveUp: options.giveUp, onSeconds: { s in handed.withLock { $0 += s } },
                                         onNote: { n in notes.withLock { $0.append(n) } })
        } catch {
            printError("pushbench dashboard: cannot start following the agents: \(error.message)")
            return 1
        }
        if let warning = ListenWarning.dashboardMessage(host: options.listen.host, port: dashboard.port) {
            printError("pushbench dashboard: \(warning)")
        }
        let host = options.listen.host.contains(":") ? "[\(options.listen.host)]" : options.listen.host
        printError("pushbench dashboard: dashboard at http://\(host):\(dashboard.port)/ following \(label) ("
                   + agents.map(\.name).joined(separator: ", ") + "); a second waits \(Self.seconds(options.wait)) for a late one")
        var totals = MergedRunTotals(agents: agents.map(\.name))
        func drain() {
            for n in notes.withLock({ n in defer { n = [] }; return n }) { printError("pushbench dashboard: \(n)") }
            for s in handed.withLock({ h in defer { h = [] }; return h }) {
                if totals.startUnix == nil { dashboard.measuredStart(Date(timeIntervalSince1970: s.startUnix)) }
                totals.add(s)
                dashboard.publish(s)
                if options.ndjson { printOut(s.jsonLine()) }
                if !options.quiet { printError("pushbench dashboard: " + Self.line(s, agents: count)) }
            }
        }
        follower.start()
        // Until every agent is done (or given up on) or a signal; bounded by them, as a server is.
        var ticks = 0
        while !interruptRequested.load(ordering: .relaxed) && !follower.isComplete {
            usleep(100_000)
            drain()
            ticks += 1
            if ticks % 5 == 0 {
                let answering = follower.status.map(\.answering)
                dashboard.publish(liveJSON: totals.liveJSON(now: Date().timeIntervalSince1970, answering: answering, done: false))
            }
        }
        follower.stop()
        drain()
        let interrupted = interruptRequested.load(ordering: .relaxed)
        let status = follower.status, late = follower.lateSeconds
        dashboard.publish(liveJSON: totals.liveJSON(now: Date().timeIntervalSince1970, answering: status.map(\.answering), done: true))
        dashboard.finish(summaryJSON: totals.finalJSON(label: label, late: late, gaveUp: status.map(\.gaveUp), interrupted: interrupted))
        printError("pushbench dashboard: " + Self.summary(totals: totals, status: status, late: late, interrupted: interrupted))
        if follower.isComplete, options.linger > 0, !interrupted {
            printError("pushbench dashboard: the dashboard keeps serving the final page for \(RunExecution.shortDuration(options.linger)) (Ctrl-C ends it)")
            dashboard.linger(options.linger)
        }
        return 0
    }

    /// The end line: what was merged, which agents finished, which were given up on, and what did not come.
    static func summary(totals: MergedRunTotals, status: [AgentFollower.Agent], late: [Int], interrupted: Bool) -> String {
        let count = status.count, done = status.filter(\.done).count
        var text = "\(totals.seconds) merged second\(totals.seconds == 1 ? "" : "s"), \(done) of \(count) agents done"
        let silent = status.filter { $0.answering != true }.map(\.address.name)
        if !silent.isEmpty { text += "; not answering: " + silent.joined(separator: ", ") }
        let gaveUp = status.filter(\.gaveUp).map(\.address.name)
        if !gaveUp.isEmpty { text += "; ended without: " + gaveUp.joined(separator: ", ") }
        let missing = totals.agents.compactMap { name in totals.missing[name].map { "\(name) \($0)" } }
        if !missing.isEmpty { text += "; seconds missing: " + missing.joined(separator: ", ") }
        let lateNames = zip(status, late).filter { $0.1 > 0 }.map { "\($0.0.address.name) \($0.1)" }
        if !lateNames.isEmpty { text += "; seconds that came too late to merge: " + lateNames.joined(separator: ", ") }
        let bad = status.filter { $0.badLines > 0 }.map { "\($0.address.name) \($0.badLines)" }
        if !bad.isEmpty { text += "; lines that were not seconds: " + bad.joined(separator: ", ") }
        if interrupted { text += " (stopped by a signal)" }
        return text
    }

    /// The stderr line of one merged second: its counts, percentiles and who is missing.
    static func line(_ s: LiveSecond, agents: Int) -> String {
        let i = s.interval
        let h = i.latency.decode()
        var text = "second \(i.second): \(s.agents ?? 0)/\(agents) agents, \(i.completed) answered"
        if let t = i.target { text += " of \(t) due" }
        if h.totalCount > 0 {
            text += ", p50 \(ms(h.valueAtPercentile(50))) p99 \(ms(h.valueAtPercentile(99))) p99.9 \(ms(h.valueAtPercentile(99.9))) ms"
        }
        let errors = i.failed + i.transportErrors
        if errors > 0 { text += ", \(errors) errors" }
        if let missing = s.missingAgents, !missing.isEmpty { text += "; missing: " + missing.joined(separator: ", ") }
        return text
    }

    /// µs as milliseconds with two decimals.
    private static func ms(_ us: Int64) -> String { String(format: "%.2f", Double(us) / 1000) }

    /// A duration as the options write it (`3s`, `500ms`).
    static func seconds(_ t: Double) -> String {
        t < 1 || t != t.rounded() ? "\(Int((t * 1000).rounded()))ms" : "\(Int(t))s"
    }
}
