import Foundation
import LoadGenerator
import MockGateway
import PushMetrics
import PushPayload
import PushTransport
import PushVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// One `pushbench run`: input checks (exit 2), the embedded gateway, the load run per encoder, the
/// results folder, the printout.
struct RunExecution {
    let options: RunOptions
    /// The `--dashboard`, listening for the whole command (a capacity search's steps share it).
    var dashboard: RunDashboard?

    /// A bad input (exit 2), an unreachable target (exit 3) or a failure (exit 1), with the message to print.
    struct Failure: Error {
        var status: Int32
        var message: String

        init(status: Int32, message: String) {
            self.status = status
            self.message = message
        }

        /// A load run that could not start: exit 3 when the target was unreachable, else 1, and the
        /// message says which.
        init(_ error: LoadRunError) {
            status = error.badInput ? 2 : error.unreachable ? 3 : 1
            message = error.unreachable ? "target unreachable: \(error.description)" : error.description
        }
    }

    /// What the run does with its encoders: one measured run, or several in interleaved rounds, compared.
    enum Plan: Equatable {
        /// One encoder: one run folder labelled `--label`.
        case single(EncoderVariant)
        /// Several: a folder per encoder and a comparison (EncoderComparisonExecution.swift).
        case comparison([EncoderVariant])
    }

    /// The plan for `options`.
    static func plan(_ options: RunOptions) -> Plan {
        options.encoderVariants.count == 1 ? .single(options.encoderVariants[0]) : .comparison(options.encoderVariants)
    }

    func execute() -> Int32 {
        do throws(Failure) {
            try checkDescriptors()
            let (template, tokens, limit) = try loadInputs()
            let destination = ResultsDestination(root: URL(fileURLWithPath: options.outputRoot))
            try destination.check()
            switch Self.plan(options) {
            case .single(let encoder):
                var run = self
                run.dashboard = try startDashboard(kind: "run", label: options.label, command: "run")
                defer { run.dashboard?.stop() }
                let status = try run.runOnce(encoder: encoder, label: options.label, template: template, tokens: tokens,
                                             limit: limit, destination: destination)
                run.lingerDashboard(command: "run")
                return status
            case .comparison:
                if options.dashboard != nil {
                    throw Failure(status: 2, message: "--dashboard: watches one encoder's run; drop it or give one --encoder")
                }
                return try EncoderComparisonExecution(run: self).execute(template: template, tokens: tokens, limit: limit,
                                                                         destination: destination)
            }
        } catch {
            printError("pushbench run: \(error.message)")
            return error.status
        }
    }

    /// `--tokens`: synthetic ones, or a file read as tokens of `kind`; exit 2 naming the file when it
    /// cannot be read or holds none.
    func loadTokens(kind: DeviceTokens.Kind) throws(Failure) -> DeviceTokens {
        switch options.tokens {
        case .synthetic(let n):
            return DeviceTokens(synthetic: n, seed: options.seed)
        case .file(let path):
            let tokens: DeviceTokens
            do { tokens = try DeviceTokens(path: path, kind: kind) } catch { throw Failure(status: 2, message: error.description) }
            guard tokens.count > 0 else { throw Failure(status: 2, message: "\(path): no device tokens in the file") }
            return tokens
        }
    }

    /// The payload template, the tokens and the size limit, or exit 2 naming the file, line and reason.
    /// A template whose output can exceed the push type's size limit is refused here, before any
    /// traffic, unless `--send-oversize` asks to send such payloads (to load-test the gateway's 413).
    func loadInputs() throws(Failure) -> (PayloadTemplate, DeviceTokens, Int) {
        let tokens = try loadTokens(kind: options.pushProtocol == .fcm ? .fcm : .apns)
        let limit = PayloadLimits.limit(for: options.pushProtocol, pushType: options.pushType)
        do throws(TemplateError) {
            let template = try PayloadTemplate.forRun(path: options.payloadFile, protocol: options.pushProtocol,
                                                      pushType: options.pushType,
                                                      maxTokenLength: max(64, tokens.maxLength),
                                                      allowOversize: options.sendOversize)
            return (template, tokens, limit)
        } catch {
            let hint = error.reason.contains("-byte limit") ? " (--send-oversize sends such payloads on purpose)" : ""
            throw Failure(status: 2, message: error.description + hint)
        }
    }

    private func runOnce(encoder: EncoderVariant, label: String, template: PayloadTemplate, tokens: DeviceTokens,
                         limit: Int, destination: ResultsDestination) throws(Failure) -> Int32 {
        // Each second's results go to the run folder as the second closes (docs/results.md).
        var spool: TimelineSpool?
        let tracker = objectiveTracker()
        var tee: ObjectiveSink?
        var watching: DashboardSink?
        var (result, record, gatewayStats) = try measure(encoder: encoder, label: label, template: template, tokens: tokens, limit: limit,
                                                         timeline: { startedAt in
                                                             spool = destination.openSpool(startedAt: startedAt, label: label)
                                                             tee = tracker.map { ObjectiveSink(inner: spool, tracker: $0) }
                                                             guard let dashboard else { return tee ?? spool }
                                                             dashboard.measuredStart(startedAt)
                                                             watching = DashboardSink(inner: tee ?? spool, dashboard: dashboard)
                                                             return watching
                                                         },
                                                         abort: { tracker?.abortReason != nil })
        if let tee, spool == nil { record.intervals = tee.kept }
        if let watching, tee == nil, spool == nil { record.intervals = watching.kept }
        let report = tracker.map { ObjectiveReport(tracker: $0, record: record) }
        if let report { record.extra.append(("objectives", report.json)) }
        let folder: URL
        do { folder = try destination.write(record, spool: spool) } catch {
            // Nothing measured is lost: the summary goes to the terminal when no folder can take it.
            if !options.json { printError(ResultsWriter.summaryJSON(record, runID: label).render()) }
            throw error
        }
        dashboard?.finish(summaryJSON: ResultsWriter.summaryJSON(record, runID: folder.lastPathComponent).render())
        if options.capture != nil, let g = gatewayStats {
            let file = folder.appendingPathComponent("capture.json")
            do { try ResultsWriter.save(g.fcm.captureJSON + "\n", file) } catch {
                throw Failure(status: 1, message: "\(error)")
            }
        }
        // --quiet hides the progress line only; the summary and the folder written are the run's answer.
        var summary: [String] = []
        if options.json {
            printOut(ResultsWriter.summaryJSON(record, runID: folder.lastPathComponent).render())
        } else {
            summary = Self.summaryLines(record, result: result, folder: folder.path, warmupSeconds: options.warmupSeconds,
                                        tokenChurn: options.tokenChurnPerSecond != nil, runLines: runLines(result))
            for line in summary { printOut(line) }
        }
        let status = Self.closing(warnings: Self.warnings(record, result: result), nothingMeasured: Self.measuredNothing(record, result: result),
                                  destination: destination)
        return finishObjectives(report, status: status, record: record, summary: summary, folder: folder)
    }

    /// The tracker of `--slo`, or nil without objectives.
    func objectiveTracker() -> ObjectiveTracker? {
        options.objectives.isEmpty ? nil
            : ObjectiveTracker(objectives: options.objectives, abortAfterSeconds: options.abortOnSLO ? Int(options.sloGraceSeconds) : nil)
    }

    /// The objectives' ending: the verdict table (stdout, or stderr with --json), why the run stopped
    /// early, the JUnit file, the GitHub job summary; exit 6 when an objective failed and `status` is 0.
    /// Without objectives, `--junit` writes a report of no test cases and the job summary still gets the
    /// end summary.
    func finishObjectives(_ report: ObjectiveReport?, status: Int32, record: RunRecord, summary: [String], folder: URL) -> Int32 {
        let command = options.pipeline.requestFile == nil ? "run" : "pipeline"
        if let report {
            if options.json { for line in report.lines { printError(line) } } else { for line in report.lines { printOut(line) } }
            if let why = report.abortReason { printError("pushbench \(command): stopped early (--abort-on-slo): \(why)") }
        }
        var status = status
        let verdicts = report ?? ObjectiveReport(verdicts: [])
        if let path = options.junitFile,
           let problem = JUnitReport(suite: "pushbench \(command) \(folder.lastPathComponent)", seconds: record.measuredSeconds,
                                     cases: verdicts.junitCases).write(to: path) {
            printError("pushbench \(command): \(problem)")
            if status == 0 { status = 1 }
        }
        let lines = summary.isEmpty ? ["\(folder.path)"] : summary
        let markdown = "### pushbench \(command) \(folder.lastPathComponent)\n\n```\n" + lines.joined(separator: "\n") + "\n```\n\n"
            + (report.map { $0.markdown + "\n" } ?? "")
        if let problem = StepSummary.append(markdown) { printError("pushbench \(command): WARNING: \(problem)") }
        if status == 0, let report, !report.passed { return ObjectiveReport.failedStatus }
        return status
    }

    /// One measured run, not yet written: the target (the embedded gateway started and stopped around it,
    /// or `--target`), the load run with its progress line (Ctrl-C ends it early, what was measured kept),
    /// and its record. `timeline` is handed to ``LoadRun/run(_:timeline:progress:shouldStop:)``: a sink for the
    /// seconds as they close, or nil to keep them in the record.
    func measure(encoder: EncoderVariant, label: String, template: PayloadTemplate, tokens: DeviceTokens,
                 limit: Int, timeline: (Date) -> TimelineSink? = { _ in nil },
                 abort: () -> Bool = { false }) throws(Failure) -> (LoadResult, RunRecord, GatewayStats?) {
        let (host, port, authority, gateway) = try startTarget()
        defer { gateway?.stop() }

        var config = options.loadConfiguration(host: host, port: port, authority: authority, template: template,
                                               tokens: tokens, limit: limit)
        try configureTLS(&config, gateway: gateway)
        config.encoder = encoder
        config.measuresBusy = dashboard != nil
        let refresher = try startAccessTokens(gateway: gateway)
        defer { refresher?.stop() }
        config.accessTokens = refresher?.source

        let requestLog = try openRequestLog(threads: config.threads)
        config.requestLog = requestLog
        let display = ProgressDisplay(quiet: options.quiet, json: options.json, warmupSeconds: options.warmupSeconds,
                                      targetRPS: config.rate)
        let result: LoadResult
        let gatewayWaitBefore = gateway?.cpuWaitNanoseconds()
        do throws(Failure) {
            result = try watched(label: label, target: authority, targetRPS: config.rate, display: display) { watch throws(LoadRunError) in
                try LoadRun.run(config, timeline: timeline, progress: watch.show, shouldStop: { watch.stopRequested || abort() })
            }
        } catch {
            requestLog?.finish()
            throw error
        }
        var gatewayWait: Double?
        if let before = gatewayWaitBefore, let after = gateway?.cpuWaitNanoseconds(), after >= before {
            gatewayWait = Double(after - before) / 1e9
        }
        let gatewayStats = gateway?.stop()
        if result.tokensExhausted {
            printError("pushbench run: every token was answered as gone (\(result.stats.pruned.count) pruned); the run stopped early")
        }

        var record = makeRecord(result, config: config, label: label, gatewayStats: gatewayStats, gatewayCPUWaitSeconds: gatewayWait)
        closeRequestLog(requestLog, record: &record)
        return (result, record, gatewayStats)
    }

    /// The `--metrics-listen` endpoint, listening before any traffic (exit 2 when it cannot), or nil.
    func startMetrics(label: String, target: String, targetRPS: Int?) throws(Failure) -> RunMetricsEndpoint? {
        guard let address = options.metricsListen else { return nil }
        let run = RunMetricsEndpoint.Run(label: label, pushProtocol: options.pushProtocol.rawValue, target: target,
                                         targetRPS: targetRPS, warmupSeconds: options.warmupSeconds)
        do throws(ScrapeEndpoint.Failure) {
            let endpoint = try RunMetricsEndpoint(host: address.host, port: address.port, run: run)
            let host = address.host.contains(":") ? "[\(address.host)]" : address.host
            printError("pushbench run: metrics at http://\(host):\(endpoint.port)/metrics while the run lasts")
            return endpoint
        } catch {
            throw Failure(status: 2, message: "--metrics-listen: \(error)")
        }
    }

    /// Prints what must not be missed (stderr, whatever --quiet and --json say) and picks the exit status:
    /// 5 when the results went to the fallback folder, else 4 when the run measured nothing, else 0.
    static func closing(warnings: [String], nothingMeasured: Bool, destination: ResultsDestination) -> Int32 {
        for w in warnings { printError("pushbench run: WARNING: \(w)") }
        let (lines, status) = destination.closingMessages()
        for line in lines { printError("pushbench run: \(line)") }
        if let status { return status }
        return nothingMeasured ? Self.measuredNothingStatus : 0
    }

    /// Exit status of a run that completed but measured no answer at all.
    static let measuredNothingStatus: Int32 = 4
}

extension RunExecution {
    /// With `--credentials`: the first access token, fetched before any traffic from the account's
    /// token_uri (the embedded gateway's /token when there is no --target), and the refresher that keeps it
    /// fresh. An unreachable endpoint is exit 3, a refusal exit 2, each naming the endpoint.
    func startAccessTokens(gateway: EmbeddedGateway?) throws(Failure) -> AccessTokenRefresher? {
        guard let account = options.credentials else { return nil }
        let endpoint: TokenEndpoint
        do throws(LoadRunError) {
            endpoint = try TokenEndpoint(url: gateway.map { "\($0.isTLS ? "https" : "http")://\($0.host):\($0.port)/token" }
                                         ?? account.tokenURI)
        } catch {
            throw Failure(status: error.unreachable ? 3 : 2, message: "--credentials \(options.credentialsPath ?? ""): \(error.description)")
        }
        // An https token_uri is checked as the target is: --insecure, --cacert, the embedded gateway's own
        // CA, else the system's.
        let trust: TLSTrust = options.insecure ? .insecure : options.caFile.map { .caFile($0) }
            ?? gateway?.trustedCertificatePEM.map { .certificates(pem: $0) } ?? .system
        let tokens = ServiceAccountTokens(account: account, endpoint: endpoint, trust: trust)
        let started = MonotonicClock.nanoseconds()
        do throws(LoadRunError) {
            let first = try tokens.fetch()
            let refresher = AccessTokenRefresher(tokens: tokens, source: AccessTokenSource(token: first.token), first: first,
                                                 fetchedAt: started)
            refresher.start()
            return refresher
        } catch {
            throw Failure(status: error.unreachable ? 3 : 2, message: "--credentials \(options.credentialsPath ?? ""): \(error.description)")
        }
    }
}

extension RunOptions {
    /// `--connections`, or with `--rps max --segment I/N` agent I's share of them (the closed loop has no
    /// schedule to split, so the agents split the connections that keep it busy).
    var connectionsOfThisAgent: Int {
        guard let s = segment, rate == .max else { return connections }
        return connections / s.count + (s.index < connections % s.count ? 1 : 0)
    }

    /// The load generator's configuration for these options against `host:port` (the encoder is left at
    /// its default; `pushbench run` and the encoder A/B set it per run or per round).
    func loadConfiguration(host: String, port: Int, authority: String, template: PayloadTemplate,
                           tokens: DeviceTokens, limit: Int) -> LoadConfiguration {
        var config = LoadConfiguration(host: host, port: port, authority: authority, template: template, tokens: tokens)
        config.pushProtocol = pushProtocol
        if case .perSecond(let n) = rate { config.rate = n } else { config.rate = nil }
        config.durationNs = UInt64(durationSeconds * 1e9)
        if let schedule {
            config.schedule = schedule
            config.rate = nil
            config.durationNs = schedule.durationNs
        }
        if let segment {
            config.segment = segment.index
            config.segments = segment.count
        }
        config.startAtUnixNs = startAtUnixNs
        config.startLateOK = startLateOK
        config.warmupNs = UInt64(warmupSeconds * 1e9)
        config.requests = requests
        config.connections = connectionsOfThisAgent
        config.streams = streams
        config.threads = threads
        config.payloadLimit = limit
        config.sendOversize = sendOversize
        config.sendsApnsID = !noApnsID
        config.topic = topic
        config.pushType = pushType.rawValue
        config.priority = priority
        config.expiration = expiration
        config.collapseID = collapseID
        config.project = project
        config.providerTokens = providerTokens
        config.http1 = http1
        if http1 { config.streams = 1 }
        config.retries = retries
        config.seed = seed
        config.pruneGoneTokens = tokenChurnPerSecond != nil
        if let q = paceQuantumSeconds { config.pacingQuantumNs = UInt64((q * 1e9).rounded()) }
        config.realtime = realtime
        return config
    }
}
