import Foundation
import LoadGenerator
import PushMetrics

/// The end summary of a run: what was sent and what came of it, what failed and why, the connections,
/// the throughput against the target, the latency and what it leaves out, the machine. Each line is
/// one concern, named in its first column, so another part of the tool adds a line of its own.
extension RunExecution {
    func printSummary(_ record: RunRecord, result r: LoadResult, folder: URL) {
        for line in Self.summaryLines(record, result: r, folder: folder.path, warmupSeconds: options.warmupSeconds,
                                      tokenChurn: options.tokenChurnPerSecond != nil, runLines: runLines(r)) {
            printOut(line)
        }
    }

    /// Lines about how this run was driven (a schedule, a segment), shown after the throughput.
    func runLines(_ r: LoadResult) -> [(name: String, text: String)] {
        let f = ProgressDisplay.fixed
        var out: [(name: String, text: String)] = []
        if let spec = options.scheduleSpec, let schedule = options.schedule {
            out.append(("schedule", "\(spec): \(schedule.totalRequests) intended, peak \(schedule.peakRate) rps; timeline.csv has the target per second"))
        }
        if let s = options.segment {
            let late = r.firstSend.map { "; first send \(f(Double($0.afterT0Ns) / 1e6, 3)) ms after t0" } ?? ""
            out.append(("segment", "\(s.index)/\(s.count): every \(s.count == 1 ? "" : "\(s.count)th ")request of the run from t0 \(StartTime.format(r.t0UnixNs))\(late)"))
        }
        return out
    }

    /// The summary's lines (the first is the folder written). `runLines` come after the throughput.
    static func summaryLines(_ record: RunRecord, result r: LoadResult, folder: String, warmupSeconds: Double,
                             tokenChurn: Bool, runLines: [(name: String, text: String)] = []) -> [String] {
        let c = record.counts
        let m = r.measured
        let f = ProgressDisplay.fixed
        var lines = ["\(folder)\(record.interrupted ? "  (interrupted)" : "")"]
        func line(_ name: String, _ text: String) {
            lines.append("  " + name + String(repeating: " ", count: max(1, 11 - name.count)) + text)
        }
        line("requests", "sent \(c.sent)  ok \(c.succeeded)  failed \(c.failed)  transport errors \(c.transportErrors)"
             + "  unfinished \(c.unfinished)")
        var neverSent: [String] = []
        if m.notSent > 0 { neverSent.append("\(m.notSent) due but never sent") }
        if m.oversizeNotSent > 0 { neverSent.append("\(m.oversizeNotSent) over the size limit (PayloadTooLarge, not sent)") }
        if !neverSent.isEmpty { line("", "and " + neverSent.joined(separator: ", ")) }
        if c.failed > 0 {
            let failedStatuses = c.byStatus.filter { !(200..<300).contains(Int($0.key) ?? 0) }
            line("failed", "by status " + top(failedStatuses.map { ($0.key, Int($0.value)) }, separator: ": ")
                 + (c.byReason.isEmpty ? "" : "   by reason " + top(c.byReason.map { ($0.key, Int($0.value)) })))
        }
        if m.transportErrors > 0 {
            line("transport", top(m.transportErrorCauseCounts.map { ($0.key.replacingOccurrences(of: "_", with: " "), $0.value) }))
        }
        let k = r.stats.connections
        line("connections", "opened \(k.opened)  lost \(k.lost)  goaways \(k.goaways)  connect failures \(k.connectFailures)"
             + (k.peerMaxStreams.map { "  peer stream limit \($0)" } ?? ""))
        if r.warmup.sent > 0 {
            line("warm-up", "sent \(r.warmup.sent)  ok \(r.warmup.succeeded) in the first \(f(warmupSeconds, 1)) s,"
                 + " kept out of every figure here")
        }
        if tokenChurn {
            line("tokens", "pruned \(r.stats.pruned.count)\(r.tokensExhausted ? " (all: the run stopped)" : "")")
        }
        if let t = record.details.providerToken {
            line("auth", "provider tokens: key \(t.keyID) (\(t.keyFile)), team \(t.teamID),"
                 + " re-signed \(t.refreshes) times (every \(f(t.refreshSeconds / 60, 1)) min)")
        }
        let target = record.config.rps.map { "target \($0)" } ?? "closed loop"
        let kept = record.rate.map { $0.kept ? ", kept" : ", NOT KEPT: sent \(f($0.sentRPS, 1)) rps" } ?? ""
        line("throughput", "\(f(record.achievedRPS, 1)) rps (\(target)\(kept))  backlog max \(r.stats.maxBacklog)"
             + "  client cpu \(f(record.cpuUserSeconds + record.cpuSystemSeconds, 2)) s")
        for (name, text) in runLines { line(name, text) }
        for (name, h) in [("latency", record.latency), ("service", record.serviceTime)] {
            let ms = { (v: Int64) in ProgressDisplay.milliseconds(Int(v)) }
            line(name, "p50 \(ms(h.valueAtPercentile(50)))  p90 \(ms(h.valueAtPercentile(90)))"
                 + "  p99 \(ms(h.valueAtPercentile(99)))  p99.9 \(ms(h.valueAtPercentile(99.9)))  max \(ms(h.max))")
        }
        let untimed = RunExecution.notInLatency(m)
        if untimed > 0 {
            line("", "not in these figures: \(untimed) measured request\(untimed == 1 ? "" : "s") never answered"
                 + " (never sent, cut off or unfinished); a slow or dead target makes them, so read them with p99")
        }
        if let t = record.details.tls {
            let h = t.histogram
            let ms = { (v: Int64) in ProgressDisplay.milliseconds(Int(v)) }
            line("tls", "\(t.version)  \(t.cipher)  ALPN \(t.alpn ?? "none")\(t.verified ? "" : "  (certificate not verified)")"
                 + "  \(t.handshakes) handshakes  p50 \(ms(h.valueAtPercentile(50)))  max \(ms(h.max))")
        }
        // The host's share of the tail, where a VM reports it: read p99 beside it.
        if let steal = r.stealSeconds {
            line("machine", "steal \(f(steal * 1000, 0)) ms during the run  driver preemptions \(r.stats.involuntarySwitches)"
                 + (r.loadAverageAtStart.map { "  load \(f($0, 2)) at start" } ?? ""))
        }
        // Time our own threads were ready to run while another thread held the CPU: a neighbour's share
        // of the tail that steal does not show.
        if let machine = record.details.machine, let driver = machine.driverCPUWaitSeconds {
            line("", "waited for a CPU: driver \(f(driver * 1000, 0)) ms"
                 + (machine.gatewayCPUWaitSeconds.map { ", gateway \(f($0 * 1000, 0)) ms" } ?? "")
                 + (machine.realtime ? " (real-time threads)" : ""))
        }
        return lines
    }

    /// `name count, name count, …`, the largest first, at most five, then how many more.
    static func top(_ counts: [(String, Int)], separator: String = " ") -> String {
        let sorted = counts.filter { $0.1 > 0 }.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }
        var text = sorted.prefix(5).map { "\($0.0)\(separator)\($0.1)" }.joined(separator: ", ")
        if sorted.count > 5 { text += ", and \(sorted.count - 5) more" }
        return text
    }

    /// What a run that measured nothing, or did not keep its rate, must not hide: lines for stderr,
    /// printed whatever `--quiet` and `--json` say.
    static func warnings(_ record: RunRecord, result r: LoadResult) -> [String] {
        var out: [String] = []
        let m = r.measured
        let k = r.stats.connections
        // A target whose certificate stopped verifying is up but refused: blamed on the certificate.
        let certificate = k.certificateProblem.map { "\(k.certificateFailures) of \(k.connectFailures) connect failures: \($0)" }
        var certificateSaid = false
        if measuredNothing(record, result: r) {
            if m.sent == 0 {
                certificateSaid = certificate != nil && m.oversizeNotSent == 0
                let why = m.oversizeNotSent > 0 ? "every payload was over the size limit"
                    : certificate ?? (k.lost > 0 || k.connectFailures > 0 ? "the target went away (\(k.lost) connections lost, \(k.connectFailures) connect failures)"
                    : "nothing fell due")
                out.append("no request was sent in the measured time: \(why)")
            } else {
                out.append("none of the \(m.sent) requests sent was answered (\(m.transportErrors) cut off, \(m.unfinished) unfinished):"
                           + " the target did not respond")
            }
        }
        if let rate = record.rate, let shortfall = rate.shortfall, let target = record.config.rps {
            let f = ProgressDisplay.fixed
            let head = "the rate was not kept: sent \(f(rate.sentRPS, 1)) of \(target) rps, answered \(f(record.achievedRPS, 1))"
                + (m.notSent > 0 ? ", \(m.notSent) due requests never sent" : "")
            let why: String
            switch shortfall {
            case .sender:
                why = "the sender could not make requests fast enough though streams were free (more --threads, or a lower --rps)"
            case .streams:
                let slots = record.config.connections * record.config.streams * max(1, record.config.threads)
                why = "every stream was busy when requests fell due (\(slots) in flight at most; more --connections or"
                    + " --streams, or the target answers too slowly for this rate)"
            case .target:
                if let certificate {
                    certificateSaid = true
                    why = certificate + " (\(k.lost) connections lost, \(m.transportErrors) cut off, \(m.unfinished) unanswered)"
                } else {
                    why = "the target did not keep up (\(k.lost) connections lost, \(k.connectFailures) connect failures,"
                        + " \(m.transportErrors) cut off, \(m.unfinished) unanswered)"
                }
            }
            out.append(head + ": " + why)
        }
        if let certificate, !certificateSaid { out.append(certificate) }
        return out
    }

    /// A run that was not stopped early but measured no answer at all: exit status 4.
    static func measuredNothing(_ record: RunRecord, result r: LoadResult) -> Bool {
        !r.interrupted && !r.tokensExhausted && r.measured.completed == 0
    }
}
