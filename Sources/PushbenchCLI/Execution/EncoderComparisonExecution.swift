import Foundation
import LoadGenerator
import MockGateway
import PushMetrics
import PushPayload
import PushVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// `pushbench --encoder a,b,c …`: the variants in interleaved rounds against one target (one embedded
/// gateway for all), one run folder per variant (label `<label>-<encoder>`), then a comparison folder
/// (comparison.md, comparison.svg, comparison.json) and the table on the terminal (docs/nightly.md).
struct EncoderComparisonExecution {
    let run: RunExecution
    var options: RunOptions { run.options }

    typealias Failure = RunExecution.Failure

    func execute(template: PayloadTemplate, tokens: DeviceTokens, limit: Int,
                 destination: ResultsDestination) throws(Failure) -> Int32 {
        let names = options.encoders
        let variants = options.encoderVariants
        let environment = ProcessInfo.processInfo.environment
        var roundNs = ComparisonSchedule.defaultRoundNs
        if let text = environment[ComparisonSchedule.roundEnvironmentVariable], !text.isEmpty {
            guard let ns = ComparisonSchedule.parseDuration(text) else {
                throw Failure(status: 2, message: "\(ComparisonSchedule.roundEnvironmentVariable)='\(text)' is not a time (250ms, 1s)")
            }
            roundNs = ns
        }
        let slowdown: EncoderStandIn?
        do { slowdown = try EncoderStandIn.requested(by: environment) } catch {
            throw Failure(status: 2, message: error.description)
        }
        if let s = slowdown { printError("pushbench: \(s.notice)") }

        let (host, port, authority, gateway) = try run.startTarget()
        defer { gateway?.stop() }

        var config = options.loadConfiguration(host: host, port: port, authority: authority, template: template,
                                               tokens: tokens, limit: limit)
        try run.configureTLS(&config, gateway: gateway)
        slowdown?.apply(to: &config)
        let warmupNs = UInt64(options.warmupSeconds * 1e9)
        let schedule: [ComparisonRound]
        if let n = options.requests {
            // Open loop: as many requests as one round's worth of time; closed loop: ten rounds per variant.
            let perRound = config.rate.map { max(1, Int(Double($0) * Double(roundNs) / 1e9)) } ?? max(1, (n + 9) / 10)
            schedule = ComparisonSchedule.rounds(variants: variants.count, requests: n, perRound: perRound, warmupNs: warmupNs)
        } else {
            schedule = ComparisonSchedule.rounds(variants: variants.count, durationNs: config.durationNs, roundNs: roundNs,
                                                 warmupNs: warmupNs)
        }

        let talk = !options.quiet && !options.json
        // What the embedded gateway saw, attributed to the variant whose round it was.
        var gatewaySeen = [GatewayStats](repeating: GatewayStats(), count: variants.count)
        var gatewayBefore: GatewayStats?
        let display = ProgressDisplay(quiet: options.quiet, json: options.json, targetRPS: config.rate)
        let ab = try run.watched(label: options.label, target: authority, targetRPS: config.rate, display: display) {
            watch throws(LoadRunError) in
            try EncoderComparison.run(
                config, variants: variants, schedule: schedule,
                roundStarted: { r in
                    gatewayBefore = gateway?.stats()
                    watch.display.finish()
                    watch.display = ProgressDisplay(round: r, quiet: options.quiet, json: options.json, targetRPS: config.rate)
                    if talk {
                        printOut("round \(r.index + 1)/\(schedule.count): \(names[r.variant])")
                    }
                },
                roundEnded: { r in
                    if let before = gatewayBefore, let after = gateway?.stats() {
                        gatewaySeen[r.variant].add(after.subtracting(before))
                    }
                },
                progress: watch.show,
                shouldStop: { watch.stopRequested })
        }
        _ = gateway?.stop()

        let roundOrder = ab.rounds.map { names[$0.variant] }
        var entries: [VariantComparison.Entry] = []
        var warnings: [String] = []
        var nothingMeasured = false
        // A variant that never ran (Ctrl-C in the first rounds) gets no folder; a slowed one is labelled so,
        // so its history.csv row is never mistaken for a measurement.
        for (i, v) in ab.variants.enumerated() where v.rounds > 0 {
            var variantConfig = config
            variantConfig.encoder = v.variant
            let slowed = slowdown.map { $0.variant == v.variant } ?? false
            let label = "\(options.label)-\(v.variant.rawValue)\(slowed ? "-test-slowed" : "")"
            var record = run.makeRecord(v.result, config: variantConfig, label: label, gatewayStats: gateway == nil ? nil : gatewaySeen[i],
                                        wholeProcess: false)
            record.details.encoderComparison = EncoderComparisonShare(
                variants: names, rounds: v.rounds, roundSeconds: Double(roundNs) / 1e9, pushes: v.pushes,
                driverCPUSeconds: v.driverCPUSeconds, cpuSecondsPerMillion: v.cpuSecondsPerMillion,
                processCPUSeconds: v.processCPUSeconds,
                testSlowdownMicroseconds: slowdown.flatMap { $0.variant == v.variant ? Double($0.addedNanoseconds) / 1000 : nil })
            let folder = try destination.write(record)
            warnings += RunExecution.warnings(record, result: v.result).map { "\(v.variant.rawValue): \($0)" }
            nothingMeasured = nothingMeasured || RunExecution.measuredNothing(record, result: v.result)
            entries.append(VariantComparison.Entry(name: v.variant.rawValue, runID: folder.lastPathComponent, record: record,
                                                   cpuSecondsPerMillion: v.cpuSecondsPerMillion, rounds: v.rounds,
                                                   perRound: v.perRound.map {
                                                       VariantComparison.RoundPoint(index: $0.index, achievedRPS: $0.achievedRPS, p50: $0.p50,
                                                                                    p99: $0.p99, p999: $0.p999, cpuSecondsPerMillion: $0.cpuSecondsPerMillion)
                                                   }))
            if !options.json { printOut("\(folder.path)\(record.interrupted ? "  (interrupted)" : "")") }
        }
        let comparison = VariantComparison(label: options.label, entries: entries, roundOrder: roundOrder,
                                           roundSeconds: Double(roundNs) / 1e9)
        let folder = try destination.write { root in try comparison.write(root: root) }
        // --quiet hides the progress only: the table and the folders are the answer.
        if options.json {
            printOut(comparison.json(comparisonID: folder.lastPathComponent).render())
        } else {
            printOut("")
            printOut(String(comparison.table(markdown: false).dropLast()))
            printOut("\(folder.path)  (comparison.md, comparison.svg)\(ab.interrupted ? "  (interrupted)" : "")")
        }
        return RunExecution.closing(warnings: warnings, nothingMeasured: nothingMeasured, destination: destination)
    }
}

/// Gateway counts over one span of a run: the A/B rounds attribute them to their variant.
extension GatewayStats {
    /// The counts seen since `earlier` (connections open is the later value).
    func subtracting(_ earlier: GatewayStats) -> GatewayStats {
        var d = GatewayStats()
        d.requests = requests &- earlier.requests
        for (k, v) in byStatus { d.byStatus[k] = v &- (earlier.byStatus[k] ?? 0) }
        for (k, v) in byReason { d.byReason[k] = v &- (earlier.byReason[k] ?? 0) }
        d.byStatus = d.byStatus.filter { $0.value > 0 }
        d.byReason = d.byReason.filter { $0.value > 0 }
        d.bytesIn = bytesIn &- earlier.bytesIn
        d.connectionsOpen = connectionsOpen
        d.connectionsTotal = connectionsTotal &- earlier.connectionsTotal
        d.goaways = goaways &- earlier.goaways
        d.drops = drops &- earlier.drops
        return d
    }

    /// Adds another span's counts.
    mutating func add(_ o: GatewayStats) {
        requests += o.requests
        byStatus.merge(o.byStatus, uniquingKeysWith: +)
        byReason.merge(o.byReason, uniquingKeysWith: +)
        bytesIn += o.bytesIn
        connectionsOpen = o.connectionsOpen
        connectionsTotal += o.connectionsTotal
        goaways += o.goaways
        drops += o.drops
    }
}
