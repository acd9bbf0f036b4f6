import Foundation
import PushMetrics
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What `pushbench dashboard` does: follows the agents (``AgentFollower``), shows each merged second on
/// stderr (and stdout with `--ndjson`), and ends when every agent is done or on a stop signal.
struct DashboardExecution {
    let agents: [AgentAddress]
    let options: DashboardOptions

    func run() -> Int32 {
        let previous = catchInterrupts()
        defer { restoreInterrupts(previous) }
        let quiet = options.quiet, ndjson = options.ndjson
        let count = agents.count
        let merged = Mutex<Int>(0)
        let follower: AgentFollower
        do {
            follower = try AgentFollower(agents, wait: options.wait, onSeconds: { seconds in
                for s in seconds {
                    if ndjson { printOut(s.jsonLine()) }
                    if !quiet { printError("pushbench dashboard: " + Self.line(s, agents: count)) }
                }
                merged.withLock { $0 += seconds.count }
            }, onNote: { printError("pushbench dashboard: \($0)") })
        } catch {
            printError("pushbench dashboard: cannot start following the agents: \(error.message)")
            return 1
        }
        if let warning = Self.listenWarning(options.listen) { printError("pushbench dashboard: \(warning)") }
        if !quiet {
            printError("pushbench dashboard: following \(count) agent\(count == 1 ? "" : "s") ("
                       + agents.map(\.name).joined(separator: ", ") + "), a second waits \(Self.seconds(options.wait)) for a late one")
        }
        follower.start()
        // Until every agent is done or a signal: the follower's thread does the work, this one waits.
        while !interruptRequested.load(ordering: .relaxed) && !follower.isComplete { usleep(100_000) }
        follower.stop()
        let status = follower.status, late = follower.lateSeconds
        let total = merged.withLock { $0 }
        let done = status.filter(\.done).count
        var summary = "\(total) merged second\(total == 1 ? "" : "s"), \(done) of \(count) agents done"
        let silent = status.filter { $0.answering != true }.map(\.address.name)
        if !silent.isEmpty { summary += "; not answering: " + silent.joined(separator: ", ") }
        let lateNames = zip(status, late).filter { $0.1 > 0 }.map { "\($0.0.address.name) \($0.1)" }
        if !lateNames.isEmpty { summary += "; seconds that came too late to merge: " + lateNames.joined(separator: ", ") }
        let bad = status.filter { $0.badLines > 0 }.map { "\($0.address.name) \($0.badLines)" }
        if !bad.isEmpty { summary += "; lines that were not seconds: " + bad.joined(separator: ", ") }
        if interruptRequested.load(ordering: .relaxed) { summary += " (stopped by a signal)" }
        printError("pushbench dashboard: " + summary)
        if follower.isComplete, options.linger > 0, !interruptRequested.load(ordering: .relaxed) {
            let until = Date().timeIntervalSince1970 + options.linger
            while !interruptRequested.load(ordering: .relaxed) && Date().timeIntervalSince1970 < until { usleep(100_000) }
        }
        return 0
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
    private static func seconds(_ t: Double) -> String {
        t < 1 || t != t.rounded() ? "\(Int((t * 1000).rounded()))ms" : "\(Int(t))s"
    }

    /// The warning for a listen address beyond loopback: the page shows the run to whoever reaches it.
    static func listenWarning(_ listen: DashboardOptions.ListenAddress) -> String? {
        let interfaces = ListenWarning.reachedInterfaces(host: listen.host)
        if interfaces.allSatisfy(\.loopback) || ListenWarning.isLoopbackName(listen.host) { return nil }
        let named = interfaces.map { "\($0.name) \($0.address)" }.joined(separator: ", ")
        let host = listen.host.contains(":") ? "[\(listen.host)]" : listen.host
        return "warning: listening on \(host):\(listen.port) reaches \(named); the dashboard is read-only, but anyone who can reach it sees the run"
    }
}
