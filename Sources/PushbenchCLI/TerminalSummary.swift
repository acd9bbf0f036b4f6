import Foundation
import LoadGenerator
import PushMetrics

extension RunExecution {
    func printSummary(_ record: RunRecord, result r: LoadResult, folder: URL) {
        let c = record.counts
        let f = ProgressDisplay.fixed
        let target = record.config.rps.map { "target \($0)" } ?? "closed loop"
        printOut("\(folder.path)\(record.interrupted ? "  (interrupted)" : "")")
        printOut("  requests   sent \(c.sent)  ok \(c.succeeded)  failed \(c.failed)  transport errors \(c.transportErrors)"
                 + "  unfinished \(c.unfinished)\(r.measured.notSent > 0 ? "  not sent \(r.measured.notSent)" : "")")
        if r.warmup.sent > 0 {
            printOut("  warm-up    sent \(r.warmup.sent)  ok \(r.warmup.succeeded) in the first \(f(options.warmupSeconds, 1)) s,"
                     + " kept out of every figure here")
        }
        if options.tokenChurnPerSecond != nil {
            printOut("  tokens     pruned \(r.stats.pruned.count)\(r.tokensExhausted ? " (all: the run stopped)" : "")")
        }
        if let t = record.details.providerToken {
            printOut("  auth       provider tokens: key \(t.keyID) (\(t.keyFile)), team \(t.teamID),"
                     + " re-signed \(t.refreshes) times (every \(f(t.refreshSeconds / 60, 1)) min)")
        }
        printOut("  throughput \(f(record.achievedRPS, 1)) rps (\(target))  backlog max \(r.stats.maxBacklog)"
                 + "  client cpu \(f(record.cpuUserSeconds + record.cpuSystemSeconds, 2)) s")
        if let spec = options.scheduleSpec, let schedule = options.schedule {
            printOut("  schedule   \(spec): \(schedule.totalRequests) intended, peak \(schedule.peakRate) rps; timeline.csv has the target per second")
        }
        if let s = options.segment {
            let late = r.firstSend.map { "; first send \(f(Double($0.afterT0Ns) / 1e6, 3)) ms after t0" } ?? ""
            printOut("  segment    \(s.index)/\(s.count): every \(s.count == 1 ? "" : "\(s.count)th ")request of the run from t0 \(StartTime.format(r.t0UnixNs))\(late)")
        }
        for (name, h) in [("latency   ", record.latency), ("service   ", record.serviceTime)] {
            let ms = { (v: Int64) in ProgressDisplay.milliseconds(Int(v)) }
            printOut("  \(name) p50 \(ms(h.valueAtPercentile(50)))  p90 \(ms(h.valueAtPercentile(90)))"
                     + "  p99 \(ms(h.valueAtPercentile(99)))  p99.9 \(ms(h.valueAtPercentile(99.9)))  max \(ms(h.max))")
        }
        if let t = record.details.tls {
            let h = t.histogram
            let ms = { (v: Int64) in ProgressDisplay.milliseconds(Int(v)) }
            printOut("  tls        \(t.version)  \(t.cipher)  ALPN \(t.alpn ?? "none")\(t.verified ? "" : "  (certificate not verified)")"
                     + "  \(t.handshakes) handshakes  p50 \(ms(h.valueAtPercentile(50)))  max \(ms(h.max))")
        }
        // The host's share of the tail, where a VM reports it: read p99 beside it.
        if let steal = r.stealSeconds {
            printOut("  machine    steal \(f(steal * 1000, 0)) ms during the run  driver preemptions \(r.stats.involuntarySwitches)"
                     + (r.loadAverageAtStart.map { "  load \(f($0, 2)) at start" } ?? ""))
        }
    }
}
