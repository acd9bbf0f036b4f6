import Foundation
import LoadGenerator
import MockGateway
import PushMetrics
import PushVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// The typed run record of one measured run: what the load generator and the embedded gateway
/// measured, in the sections ``ResultsWriter`` renders as summary.json.
extension RunExecution {
    /// The record of `r`. `wholeProcess` is false for an encoder A/B variant, whose rounds shared the
    /// process with the other variants: the process's CPU time is then not this run's (its own share is
    /// in the `ab` section).
    func makeRecord(_ r: LoadResult, config: LoadConfiguration, label: String, gatewayStats: GatewayStats?,
                    gatewayCPUWaitSeconds: Double? = nil, wholeProcess: Bool = true) -> RunRecord {
        var settings = RunSettings(
            requests: options.requests, warmupSeconds: options.warmupSeconds, tokens: config.tokens.count,
            payload: options.payloadFile ?? "default", retry: options.retries, sendOversize: options.sendOversize,
            apnsID: !options.noApnsID)
        var rps = config.rate
        if let schedule = config.schedule, let spec = options.scheduleSpec {
            settings.schedule = ScheduleSettings(
                spec: spec, stages: schedule.stages.map { (Double($0.durationNs) / 1e9, $0.from, $0.to) },
                digest: schedule.digest, requests: schedule.totalRequests, peakRPS: schedule.peakRate)
            // The contract's one rate: the schedule's mean, which the achieved rate is measured against.
            rps = Int((Double(schedule.totalRequests) / (Double(schedule.durationNs) / 1e9)).rounded())
        }
        settings.http = config.http1 ? "1.1" : "2"
        settings.credentials = config.accessTokens != nil
        let runConfig = RunConfig(
            target: options.target ?? "embedded", protocolName: options.pushProtocol.rawValue, rps: rps,
            durationSeconds: options.requests == nil ? options.durationSeconds : nil, connections: options.connections,
            streams: config.streams, threads: options.threads, encoder: config.encoder.rawValue, settings: settings)
        var record = RunRecord(label: label, startedAt: r.measuredStart, config: runConfig, version: PushbenchVersion.current)
        record.counts = Self.counts(r.measured)
        record.measuredSeconds = r.measuredSeconds
        record.latency = r.latency
        record.serviceTime = r.serviceTime
        record.intervals = r.intervals
        record.cpuUserSeconds = r.stats.cpuUser
        record.cpuSystemSeconds = r.stats.cpuSystem
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        record.maxRSSBytes = PeakMemory.bytes()
        record.interrupted = r.interrupted
        // This agent's share of the rate (a schedule's mean rate, split among --segment agents).
        record.rate = r.rateOutcome(targetRPS: rps.map { Double($0) / Double(max(1, config.segments)) })

        let m = r.measured, w = r.warmup
        var d = RunDetails()
        d.warmup = Self.counts(w)
        d.accounting = RunAccounting(consistent: m.check() && w.check(), retries: m.retries + w.retries, notSent: m.notSent,
                                     oversizeNotSent: m.oversizeNotSent, notInLatency: Self.notInLatency(m))
        d.accounting?.transportErrorsByCause = m.transportErrorCauseCounts
        d.accounting?.truncatedResponseBodies = r.stats.connections.truncatedBodies
        d.backlog = Backlog(max: r.stats.maxBacklog, blocked: r.stats.blocked)
        d.inFlightMax = r.stats.maxInFlight
        let c = r.stats.connections
        d.connections = ConnectionCounts(opened: c.opened, goaways: c.goaways, lost: c.lost, connectFailures: c.connectFailures,
                                         peerMaxConcurrentStreams: c.peerMaxStreams.map { Int($0) })
        if let t = c.tls {
            d.tls = TLSDetails(version: t.version, cipher: t.cipher, alpn: t.alpn, serverName: t.serverName, verified: t.verified,
                               handshakes: t.count, handshakeMicros: t.nanoseconds.map { Int64(($0 + 500) / 1000) })
        }
        if wholeProcess { d.processCPU = CPUTime(user: Self.seconds(usage.ru_utime), system: Self.seconds(usage.ru_stime)) }
        d.machine = MachineNoise(cpus: sysconf(Int32(_SC_NPROCESSORS_ONLN)), loadAverageAtStart: r.loadAverageAtStart,
                                 stealSeconds: r.stealSeconds, driverInvoluntarySwitches: r.stats.involuntarySwitches,
                                 driverCPUWaitSeconds: r.stats.cpuWaitNanoseconds.map { Double($0) / 1e9 },
                                 gatewayCPUWaitSeconds: gatewayCPUWaitSeconds, realtime: config.realtime)
        if options.tokenChurnPerSecond != nil {
            d.tokenPruning = TokenPruning(pruned: r.stats.pruned.count, exhausted: r.tokensExhausted)
        }
        if let g = gatewayStats {
            d.gateway = Self.gatewayCounts(g)
            d.reconciliation = Reconciliation(
                clientAttempts: m.sent + w.sent + m.retries + w.retries, clientAnswered: m.completed + w.completed,
                gatewayReceived: Int(g.requests), fcm: Self.fcmReconciliation(g.fcm, m, w))
        }
        d.start = RunStart(t0UnixNs: r.t0UnixNs, requested: options.startAtUnixNs != nil, lateOK: options.startLateOK,
                           firstSendAfterT0Micros: r.firstSend.map { $0.afterT0Ns / 1000 },
                           firstSendLateMicros: r.firstSend.map { $0.lateNs / 1000 })
        if let s = options.segment {
            d.segment = RunSegment(index: s.index, count: s.count, payloadDigest: payloadDigest, seed: options.seed)
        }
        d.host = Self.hostName
        if let s = options.segment, let rate = rps { record.targetRPS = Double(rate) / Double(s.count) }
        if let t = config.providerTokens {
            d.providerToken = ProviderTokenUse(keyID: t.keyID, teamID: t.teamID, keyFile: t.keyFile,
                                               refreshSeconds: Double(t.refreshIntervalNanos) / 1e9,
                                               refreshes: r.stats.providerTokenRefreshes)
        }
        record.details = d
        return record
    }

    /// summary.json `gateway`: the embedded gateway's counters.
    static func gatewayCounts(_ g: GatewayStats) -> GatewayCounts {
        let f = g.fcm
        let fcm = f.isEmpty ? nil : FCMCounts(
            requests: Int(f.requests), messagesAccepted: Int(f.messagesAccepted), validateOnly: Int(f.validatedOnly),
            topicMessages: Int(f.topicMessages), deviceDeliveries: Int(f.deviceDeliveries), fanoutPending: Int(f.fanoutPending),
            byCode: f.byCode.mapValues { Int($0) }, churnedTokens: Int(f.churnedTokens), churnRefusals: Int(f.churnRefusals),
            captured: f.captured.count)
        return GatewayCounts(received: Int(g.requests), byStatus: g.byStatus.mapValues { Int($0) },
                             byReason: g.byReason.mapValues { Int($0) }, connectionsTotal: Int(g.connectionsTotal),
                             goaways: Int(g.goaways), drops: Int(g.drops), bytesIn: Int(g.bytesIn), fcm: fcm,
                             http1Requests: Int(g.http1Requests), http1Refused: Int(g.http1Refused))
    }

    /// The FCM route's reconciliation; nil when no request took the FCM route (an APNs run with token churn).
    static func fcmReconciliation(_ f: FCMStats, _ m: Tally, _ w: Tally) -> FCMReconciliation? {
        guard !f.isEmpty, f.requests > 0 else { return nil }
        return FCMReconciliation(accepted: Int(f.messagesAccepted + f.validatedOnly), clientOK: m.byStatus[200] + w.byStatus[200],
                                 clientUnanswered: m.unfinished + w.unfinished + m.transportErrors + w.transportErrors)
    }

    static func counts(_ t: Tally) -> RequestCounts {
        var c = RequestCounts()
        c.sent = Int64(t.sent); c.completed = Int64(t.completed); c.succeeded = Int64(t.succeeded)
        c.failed = Int64(t.failed); c.transportErrors = Int64(t.transportErrors); c.unfinished = Int64(t.unfinished)
        c.byStatus = t.statusCounts.mapValues { Int64($0) }
        c.byReason = t.reasonCounts.mapValues { Int64($0) }
        return c
    }

    /// The machine's name (gethostname: no name service lookup).
    static var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "unknown" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A fingerprint of the payload template: FNV-1a of the file's bytes, or the default template's name.
    var payloadDigest: String {
        guard let path = options.payloadFile, let data = FileManager.default.contents(atPath: path) else {
            return "default-\(options.pushProtocol.rawValue)-\(options.pushType.rawValue)"
        }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data { h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return String(h, radix: 16)
    }

    static func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }

    /// Measured requests outside the corrected latency: due but never sent, over the size limit, cut off
    /// by the transport, unanswered at the end.
    static func notInLatency(_ m: Tally) -> Int { m.notSent + m.oversizeNotSent + m.transportErrors + m.unfinished }
}
