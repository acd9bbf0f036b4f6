import Foundation
import LoadGenerator
import MockGateway
import PushMetrics
import PushPayload
import PushTransport
import PushVocabulary

/// One `pushbench pipeline`: the egress gateway with its correlator, the load run against the front door
/// with its taps, the wait for the last pushes, the run folder with the pipeline's files, the printout.
struct PipelineExecution {
    var run: RunExecution
    var options: RunOptions { run.options }
    typealias Failure = RunExecution.Failure

    typealias File = PipelineMerge.File

    func execute() -> Int32 {
        do throws(Failure) {
            try run.checkDescriptors()
            let (request, template, tokens) = try loadInputs()
            let destination = ResultsDestination(root: URL(fileURLWithPath: options.outputRoot))
            try destination.check()
            var watched = self
            watched.run.dashboard = try run.startDashboard(kind: "pipeline", label: options.label, command: "pipeline")
            defer { watched.run.dashboard?.stop() }
            let status = try watched.runOnce(request: request, template: template, tokens: tokens, destination: destination)
            watched.run.lingerDashboard(command: "pipeline")
            return status
        } catch {
            printError("pushbench pipeline: \(error.message)")
            return error.status
        }
    }

    /// The request file, its body template and the device tokens, or exit 2 naming the file and line.
    func loadInputs() throws(Failure) -> (RequestFile, PayloadTemplate, DeviceTokens) {
        // A pipeline's tokens may be APNs or FCM ones: read as FCM's, whose alphabet takes both.
        let tokens = try run.loadTokens(kind: .fcm)
        do throws(TemplateError) {
            let request = try RequestFile(path: options.pipeline.requestFile!)
            let template = try request.template(options: TemplateOptions(limit: nil, maxTokenLength: max(64, tokens.maxLength)))!
            return (request, template, tokens)
        } catch {
            throw Failure(status: 2, message: "--request: \(error.description)")
        }
    }

    /// The run's id tag: agents of one segmented run agree on it (it comes from what they share: the
    /// seed and the start time); a lone run draws one.
    static func tag(_ o: RunOptions) -> UInt16 {
        guard o.segment != nil else { return UInt16.random(in: 0...UInt16.max) }
        var h = UInt64(truncatingIfNeeded: o.startAtUnixNs ?? 0) ^ (o.seed &* 0x9E37_79B9_7F4A_7C15)
        h ^= h >> 29
        h = h &* 0xBF58_476D_1CE4_E5B9
        return UInt16(truncatingIfNeeded: h ^ (h >> 32))
    }

    private func runOnce(request: RequestFile, template: PayloadTemplate, tokens: DeviceTokens,
                         destination: ResultsDestination) throws(Failure) -> Int32 {
        let label = options.label
        var spool: TimelineSpool?
        let tracker = run.objectiveTracker()
        var tee: ObjectiveSink?
        var watching: DashboardSink?
        let dashboard = run.dashboard
        var measured = try measure(request: request, template: template, tokens: tokens, label: label, timeline: { startedAt in
            spool = destination.openSpool(startedAt: startedAt, label: label)
            tee = tracker.map { ObjectiveSink(inner: spool, tracker: $0) }
            guard let dashboard else { return tee ?? spool }
            dashboard.measuredStart(startedAt)
            watching = DashboardSink(inner: tee ?? spool, dashboard: dashboard)
            return watching
        }, abort: { tracker?.abortReason != nil })
        if let tee, spool == nil { measured.record.intervals = tee.kept }
        if let watching, tee == nil, spool == nil { measured.record.intervals = watching.kept }
        let c = measured.counts
        let report = tracker.map {
            ObjectiveReport(tracker: $0, record: measured.record,
                            pipeline: .init(expected: c.expected, lost: c.lost, duplicated: c.duplicated, endToEnd: measured.endToEnd))
        }
        if let report { measured.record.extra.append(("objectives", report.json)) }
        let folder: URL
        do { folder = try destination.write(measured.record, spool: spool) } catch {
            if !options.json { printError(ResultsWriter.summaryJSON(measured.record, runID: label).render()) }
            throw error
        }
        do {
            try writeFiles(measured, to: folder)
        } catch {
            throw Failure(status: 1, message: "writing the pipeline files in \(folder.path): \(error)")
        }
        dashboard?.finish(summaryJSON: ResultsWriter.summaryJSON(measured.record, runID: folder.lastPathComponent).render())
        var summary: [String] = []
        if options.json {
            printOut(ResultsWriter.summaryJSON(measured.record, runID: folder.lastPathComponent).render())
        } else {
            summary = RunExecution.summaryLines(measured.record, result: measured.result, folder: folder.path,
                                                warmupSeconds: options.warmupSeconds, tokenChurn: false,
                                                runLines: run.runLines(measured.result)) + summaryLines(measured)
            for line in summary { printOut(line) }
        }
        var warnings = RunExecution.warnings(measured.record, result: measured.result)
        if measured.overflow > 0 {
            warnings.append("\(measured.overflow) answers or pushes could not be queued for matching (the run's main thread fell behind); the pipeline counts are short by as many")
        }
        let failures = measured.result.stats.connections.connectFailures
        if failures > 0 {
            warnings.append("the front door refused \(failures) connection\(failures == 1 ? "" : "s") during the run: the service stopped accepting them (did it exit?)"
                            + (c.lost > 0 ? "; \(c.lost) pushes of requests it had accepted never reached the egress" : ""))
        }
        let w = measured.warmup
        let nothingArrived = !measured.result.interrupted && c.apns + c.fcm + w.apns + w.fcm == 0 && measured.result.measured.completed > 0
        if nothingArrived {
            printError("pushbench pipeline: not one push reached the egress at \(egressURL): check that the service sends its pushes there"
                       + (options.pipeline.egressH2C ? "" : " and trusts the egress's CA" + (options.pipeline.certificateOut.map { " (\($0))" } ?? "")))
        }
        let status = RunExecution.closing(warnings: warnings, nothingMeasured: RunExecution.measuredNothing(measured.record, result: measured.result),
                                          destination: destination)
        return run.finishObjectives(report, status: status == 0 && nothingArrived ? RunExecution.measuredNothingStatus : status,
                                    record: measured.record, summary: summary, folder: folder)
    }

    /// What a pipeline run measured.
    struct Measured {
        var result: LoadResult
        var record: RunRecord
        var counts: PipelineLedger.Counts
        var warmup: PipelineLedger.Counts
        var endToEnd: HdrHistogram
        var seconds: [PipelineLedger.Second]
        var overflow: Int
    }

    var egressURL: String {
        if let url = options.pipeline.egressURL { return url }
        let host = options.pipeline.egressHost.contains(":") ? "[\(options.pipeline.egressHost)]" : options.pipeline.egressHost
        return "\(options.pipeline.egressH2C ? "http" : "https")://\(host):\(options.pipeline.egressPort ?? 0)"
    }

    private func measure(request: RequestFile, template: PayloadTemplate, tokens: DeviceTokens, label: String,
                         timeline: (Date) -> TimelineSink?, abort: () -> Bool) throws(Failure) -> Measured {
        let egress = try startEgress()
        defer { egress.stop() }
        let prefix = egress.prefix
        if !options.json {
            printError("pushbench pipeline: egress (mock APNs and FCM) at \(egressURL)"
                       + (options.pipeline.certificateOut.map { ", its CA in \($0)" } ?? ""))
        }
        let (host, port, authority) = try run.resolveTarget(options.target!)
        var config = options.loadConfiguration(host: host, port: port, authority: authority, template: template, tokens: tokens,
                                               limit: template.maxLength)
        try run.configureTLS(&config, gateway: nil)
        config.frontDoor = FrontDoorRequest(request)
        config.measuresBusy = run.dashboard != nil
        let tap = PipelineTap(prefix: prefix, threads: config.threads)
        config.pipeline = tap
        let drainNs = UInt64(options.pipeline.drainSeconds * 1e9)
        let requestLog = try run.openRequestLog(threads: config.threads, pipelinePrefix: prefix)
        config.requestLog = requestLog
        let pipeline = PipelineRun(config: config, tap: tap, drainNs: drainNs, arrivals: egress.drain, refused: egress.refused)

        let display = ProgressDisplay(quiet: options.quiet, json: options.json, warmupSeconds: options.warmupSeconds, targetRPS: config.rate)
        // Pipeline seconds already on the dashboard.
        var shown = 0
        let result: LoadResult
        do throws(Failure) {
            // The drain for the last pushes stays inside the watch, so a stop signal during it still
            // ends the run with its results kept.
            result = try run.watched(label: label, target: authority, targetRPS: config.rate, display: display) { watch throws(LoadRunError) in
                let result = try LoadRun.run(config, timeline: timeline, progress: watch.show,
                                             shouldStop: { watch.stopRequested || abort() }, poll: { t0 in
                                                 pipeline.poll(t0: t0)
                                                 if let dashboard = run.dashboard { shown = PipelineDashboard.show(pipeline, from: shown, on: dashboard) }
                                             })
                watch.display.finish()
                if let ledger = pipeline.ledger, ledger.inFlight > 0, !options.quiet, !options.json {
                    printError("pushbench pipeline: waiting up to \(ProgressDisplay.fixed(options.pipeline.drainSeconds, 1)) s for \(ledger.inFlight) pushes still on their way")
                }
                pipeline.drain(t0: result.t0Ns, deadline: MonotonicClock.nanoseconds() + drainNs, shouldStop: { watch.stopRequested })
                if let dashboard = run.dashboard { shown = PipelineDashboard.show(pipeline, from: shown, on: dashboard) }
                return result
            }
        } catch {
            requestLog?.finish()
            throw error
        }
        let gatewayStats = egress.stop()
        if let failures = egress.remote?.fetchFailures, failures.count > 0 {
            printError("pushbench pipeline: WARNING: \(failures.count) fetches from --egress-url failed (last: \(failures.last ?? "?")); pushes they would have brought count as lost")
        }
        let counts = pipeline.finish(t0: result.t0Ns)
        if let dashboard = run.dashboard { shown = PipelineDashboard.show(pipeline, from: shown, on: dashboard) }
        var record = run.makeRecord(result, config: config, label: label, gatewayStats: gatewayStats)
        run.closeRequestLog(requestLog, record: &record)
        let endToEnd = pipeline.ledger!.endToEnd
        let warmup = pipeline.ledger!.warmup
        record.extra.append(("pipeline", json(counts, warmup: warmup, endToEnd: endToEnd,
                                              frontDoorByStatus: pipeline.ledger!.frontDoorByStatus, fanOut: template.fanOut,
                                              prefix: prefix, overflow: pipeline.overflow)))
        return Measured(result: result, record: record, counts: counts, warmup: warmup, endToEnd: endToEnd, seconds: pipeline.seconds,
                        overflow: pipeline.overflow)
    }

    /// summary.json's `pipeline` section.
    func json(_ c: PipelineLedger.Counts, warmup w: PipelineLedger.Counts, endToEnd: HdrHistogram,
              frontDoorByStatus: [UInt16: HdrHistogram], fanOut: Int, prefix: [UInt8], overflow: Int) -> JSONValue {
        .object([
            ("correlated", .bool(!options.pipeline.noCorrelation)),
            ("id_prefix", .string(String(decoding: prefix, as: UTF8.self))),
            ("fan_out", .int(Int64(fanOut))),
            ("egress", .string(egressURL)),
            ("drain_s", .double(options.pipeline.drainSeconds)),
            ("expected", .int(c.expected)),
            ("delivered", .int(c.delivered)),
            ("rejected", .int(c.rejected)),
            ("lost", .int(c.lost)),
            ("in_flight", .int(c.inFlight)),
            ("duplicated", .int(c.duplicated)),
            ("retried", .int(c.retried)),
            ("refused_by_gateway", .int(c.refusedByGateway)),
            ("unexpected", .int(c.unexpected)),
            ("unexpected_by_cause", .object([
                ("no_id", .int(c.noID)), ("other_run", .int(c.otherRun)), ("unknown_request", .int(c.unknownRequest)),
                ("refused_request", .int(c.refusedRequest)),
            ])),
            ("by_route", .object([("apns", .object([("received", .int(c.apns))])), ("fcm", .object([("received", .int(c.fcm))]))])),
            ("queue_overflow", .int(Int64(overflow))),
            ("warmup", .object([
                ("expected", .int(w.expected)), ("delivered", .int(w.delivered)), ("rejected", .int(w.rejected)), ("lost", .int(w.lost)),
                ("duplicated", .int(w.duplicated)), ("retried", .int(w.retried)), ("unexpected", .int(w.unexpected)),
            ])),
            ("end_to_end_latency_us", ResultsWriter.latencyJSON(endToEnd)),
            ("front_door_latency_us_by_status", .object(frontDoorByStatus.keys.sorted().map {
                (String($0), ResultsWriter.latencyJSON(frontDoorByStatus[$0]!))
            })),
        ])
    }

    /// e2e_latency.hgrm, e2e_latency.hlog and pipeline.csv.
    func writeFiles(_ m: Measured, to folder: URL) throws {
        try ResultsWriter.save(m.endToEnd.percentileDistribution(outputValueUnitScalingRatio: 1000), folder.appendingPathComponent(File.hgrm))
        let start = m.record.startedAt.timeIntervalSince1970 + options.warmupSeconds
        var log = IntervalLog(startTime: start)
        var csv = File.csvHeader + "\n"
        for s in m.seconds {
            if let h = s.histogram {
                log.intervals.append(IntervalLog.Interval(startOffset: Double(s.second), length: 1, histogram: h))
            }
            csv += "\(s.second),\(s.frontDoor),\(s.apns),\(s.fcm),\(s.backlog),\(s.p50),\(s.p99)\n"
        }
        try ResultsWriter.save(log.render(comment: "pushbench pipeline: end-to-end latency, request intended time to push arrival"),
                               folder.appendingPathComponent(File.hlog))
        try ResultsWriter.save(csv, folder.appendingPathComponent(File.csv))
        let c = m.counts
        try ResultsWriter.save(PipelineChart.svg(endToEnd: m.endToEnd, frontDoor: m.record.latency, title: "pushbench pipeline",
                                                 subtitle: "\(options.target ?? "") - expected \(c.expected), delivered \(c.delivered), lost \(c.lost), duplicated \(c.duplicated)"),
                               folder.appendingPathComponent(File.chart))
    }

    /// The end summary's pipeline lines.
    func summaryLines(_ m: Measured) -> [String] {
        let c = m.counts
        let h = m.endToEnd
        let ms = { (v: Int64) in ProgressDisplay.milliseconds(Int(v)) }
        var lines: [String] = []
        func line(_ name: String, _ text: String) {
            lines.append("  " + name + String(repeating: " ", count: max(1, 11 - name.count)) + text)
        }
        line("egress", "pushes received: apns \(c.apns)  fcm \(c.fcm)  answered 429/5xx or dropped \(c.refusedByGateway)")
        if options.pipeline.noCorrelation {
            line("pipeline", "not correlated (--no-correlation): pushes counted by route only")
            return lines
        }
        line("pipeline", "expected \(c.expected)  delivered \(c.delivered)  lost \(c.lost)  duplicated \(c.duplicated)"
             + "  retried \(c.retried)  unexpected \(c.unexpected)")
        if c.rejected > 0 {
            line("", "of those delivered, \(c.rejected) were refused by APNs/FCM with a 4xx (bad token, unregistered, bad credentials: see the gateway's by_reason)")
        }
        if m.warmup.expected + m.warmup.unexpected > 0 {
            line("", "warm-up apart: expected \(m.warmup.expected)  delivered \(m.warmup.delivered)  lost \(m.warmup.lost)")
        }
        if c.unexpected > 0 {
            line("", "unexpected: no id \(c.noID)  another run's id \(c.otherRun)  unknown or closed request \(c.unknownRequest)"
                 + "  for refused requests \(c.refusedRequest)")
        }
        if h.totalCount > 0 {
            line("end to end", "p50 \(ms(h.valueAtPercentile(50)))  p90 \(ms(h.valueAtPercentile(90)))"
                 + "  p99 \(ms(h.valueAtPercentile(99)))  p99.9 \(ms(h.valueAtPercentile(99.9)))  max \(ms(h.max))")
        }
        return lines
    }

    /// The egress: the embedded gateway at `--egress-listen` with its correlator, or the gateway at
    /// `--egress-url` (its prefix fetched now; exit 3 when it cannot be reached, 2 when it does not match).
    struct Egress {
        var prefix: [UInt8]
        var drain: ((PushArrival) -> Void) -> Void
        var refused: () -> Int
        var stop: () -> GatewayStats?
        var remote: RemoteEgress?
    }

    private func startEgress() throws(Failure) -> Egress {
        if let url = options.pipeline.egressURL {
            var tls: TLSClientContext?
            if url.hasPrefix("https://") {
                let trust: TLSTrust = options.insecure ? .insecure : options.caFile.map { .caFile($0) } ?? .system
                do throws(TLSError) { tls = try TLSClientContext(trust: trust, alpn: ["http/1.1"]) } catch {
                    throw Failure(status: 2, message: "--egress-url: TLS: \(error.message)")
                }
            }
            let remote: RemoteEgress
            do throws(LoadRunError) { remote = try RemoteEgress(url: url, tls: tls) } catch { throw Failure(error) }
            remote.start()
            return Egress(prefix: remote.prefix, drain: { remote.drain($0) }, refused: { 0 },
                          stop: { remote.stop(); return nil }, remote: remote)
        }
        let prefix = PipelineRun.prefix(tag: Self.tag(options))
        var egressConfig = options.embeddedGateway
        let correlator = PushCorrelator(prefix: prefix, source: options.pipeline.correlate, loops: egressConfig.threads)
        egressConfig.correlator = correlator
        let gateway: EmbeddedGateway
        do {
            gateway = try EmbeddedGateway.start(egressConfig, host: options.pipeline.egressHost, port: options.pipeline.egressPort ?? 0)
        } catch let error as GatewayStartError {
            throw Failure(status: error.cannotListen ? 2 : 1, message: "--egress-listen: \(error.message)")
        } catch {
            throw Failure(status: 1, message: "--egress-listen: \(error)")
        }
        return Egress(prefix: prefix, drain: { correlator.drain($0) }, refused: { correlator.refused }, stop: { gateway.stop() })
    }
}
