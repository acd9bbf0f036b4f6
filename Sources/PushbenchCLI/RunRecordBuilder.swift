import Foundation
import LoadGenerator
import MockGateway
import PushMetrics
import PushPayload
import PushVocabulary
#if canImport(Glibc)
import Glibc
#endif

extension RunExecution {
    func makeRecord(_ r: LoadResult, config: LoadConfiguration, label: String, gatewayStats: GatewayStats?) -> RunRecord {
        var extra: [(String, JSONValue)] = [
            ("warmup_s", .double(options.warmupSeconds)),
            ("tokens", .int(Int64(config.tokens.count))),
            ("payload", .string(options.payloadFile ?? "default")),
            ("retry", .int(Int64(options.retries))),
            ("send_oversize", .bool(options.sendOversize)),
            ("apns_id", .bool(!options.noApnsID)),
        ]
        if let n = options.requests { extra.insert(("requests", .int(Int64(n))), at: 0) }
        let runConfig = RunConfig(
            target: options.target ?? "embedded", protocolName: options.pushProtocol.rawValue, rps: config.rate,
            durationSeconds: options.requests == nil ? options.durationSeconds : nil, connections: options.connections,
            streams: options.streams, threads: options.threads, encoder: config.encoder.rawValue, extra: extra)
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
        record.maxRSSBytes = Int64(usage.ru_maxrss) * 1024
        record.interrupted = r.interrupted
        let m = r.measured, w = r.warmup
        var more: [(String, JSONValue)] = [
            ("warmup", Self.counts(w).json),
            ("accounting", .object([
                ("consistent", .bool(m.check() && w.check())),
                ("retries", .int(Int64(m.retries + w.retries))),
                ("not_sent", .int(Int64(m.notSent))),
                ("oversize_not_sent", .int(Int64(m.oversizeNotSent))),
            ])),
            ("backlog", .object([("max", .int(Int64(r.stats.maxBacklog))), ("blocked", .int(Int64(r.stats.blocked)))])),
            ("in_flight_max", .int(Int64(r.stats.maxInFlight))),
            ("connections", .object([
                ("opened", .int(Int64(r.stats.connections.opened))), ("goaways", .int(Int64(r.stats.connections.goaways))),
                ("lost", .int(Int64(r.stats.connections.lost))), ("connect_failures", .int(Int64(r.stats.connections.connectFailures))),
                ("peer_max_concurrent_streams", r.stats.connections.peerMaxStreams.map { .int(Int64($0)) } ?? .null),
            ])),
            ("cpu_process", .object([
                ("user_s", .double(Self.seconds(usage.ru_utime))), ("sys_s", .double(Self.seconds(usage.ru_stime))),
            ])),
            // What the host took that the percentiles cannot show: read p99 beside these.
            ("machine", .object([
                ("cpus", .int(Int64(sysconf(Int32(_SC_NPROCESSORS_ONLN))))),
                ("load_average_1m_at_start", r.loadAverageAtStart.map { .double(($0 * 100).rounded() / 100) } ?? .null),
                ("steal_ms", r.stealSeconds.map { .double(($0 * 1e6).rounded() / 1e3) } ?? .null),
                ("driver_involuntary_switches", .int(Int64(r.stats.involuntarySwitches))),
            ])),
        ]
        if options.tokenChurnPerSecond != nil {
            more.append(("pruned_tokens", .int(Int64(r.stats.pruned.count))))
            more.append(("tokens_exhausted", .bool(r.tokensExhausted)))
        }
        if let g = gatewayStats {
            let clientAttempts = Int64(m.sent + w.sent + m.retries + w.retries)
            let clientAnswered = Int64(m.completed + w.completed)
            var byStatus: [(String, JSONValue)] = []
            for k in g.byStatus.keys.sorted() { byStatus.append((String(k), .int(Int64(g.byStatus[k]!)))) }
            var byReason: [(String, JSONValue)] = []
            for k in g.byReason.keys.sorted() { byReason.append((k, .int(Int64(g.byReason[k]!)))) }
            more.append(("gateway", .object([
                ("received", .int(Int64(g.requests))), ("by_status", .object(byStatus)), ("by_reason", .object(byReason)),
                ("connections_total", .int(Int64(g.connectionsTotal))), ("goaways", .int(Int64(g.goaways))),
                ("drops", .int(Int64(g.drops))), ("bytes_in", .int(Int64(g.bytesIn))),
            ] + (g.fcm.isEmpty ? [] : [("fcm", Self.fcmSection(g.fcm))]))))
            // Every response the client counted was received by the gateway, and the gateway received no
            // request the client did not send: answered <= received <= attempts.
            more.append(("reconciliation", .object([
                ("client_attempts", .int(clientAttempts)), ("client_answered", .int(clientAnswered)),
                ("gateway_received", .int(Int64(g.requests))),
                ("consistent", .bool(clientAnswered <= Int64(g.requests) && Int64(g.requests) <= clientAttempts)),
            ] + (g.fcm.isEmpty ? [] : Self.fcmReconciliation(g.fcm, m, w)))))
        }
        record.extra = more
        return record
    }

    /// summary.json `gateway.fcm`: the FCM route's counters (the captured pushes go to capture.json).
    static func fcmSection(_ f: FCMStats) -> JSONValue {
        var byCode: [(String, JSONValue)] = []
        for k in f.byCode.keys.sorted() { byCode.append((k, .int(Int64(f.byCode[k]!)))) }
        return .object([
            ("requests", .int(Int64(f.requests))), ("messages_accepted", .int(Int64(f.messagesAccepted))),
            ("validate_only", .int(Int64(f.validatedOnly))), ("topic_messages", .int(Int64(f.topicMessages))),
            ("device_deliveries", .int(Int64(f.deviceDeliveries))), ("fanout_pending", .int(Int64(f.fanoutPending))),
            ("by_code", .object(byCode)), ("churned_tokens", .int(Int64(f.churnedTokens))),
            ("churn_refusals", .int(Int64(f.churnRefusals))), ("captured", .int(Int64(f.captured.count))),
        ])
    }

    /// FCM messages the gateway accepted against the client's 200s: every 200 the client counted is an
    /// accepted message, and the gateway accepted none the client did not send (unanswered requests may
    /// have been accepted): ok <= accepted <= ok + unanswered. Left out when no request took the FCM route
    /// (an APNs run with token churn).
    static func fcmReconciliation(_ f: FCMStats, _ m: Tally, _ w: Tally) -> [(String, JSONValue)] {
        guard f.requests > 0 else { return [] }
        let ok = Int64(m.byStatus[200] + w.byStatus[200])
        let unanswered = Int64(m.unfinished + w.unfinished + m.transportErrors + w.transportErrors)
        let accepted = Int64(f.messagesAccepted + f.validatedOnly)
        return [
            ("fcm_messages_accepted", .int(accepted)), ("client_ok", .int(ok)),
            ("fcm_consistent", .bool(ok <= accepted && accepted <= ok + unanswered)),
        ]
    }

    static func counts(_ t: Tally) -> RequestCounts {
        var c = RequestCounts()
        c.sent = Int64(t.sent); c.completed = Int64(t.completed); c.succeeded = Int64(t.succeeded)
        c.failed = Int64(t.failed); c.transportErrors = Int64(t.transportErrors); c.unfinished = Int64(t.unfinished)
        c.byStatus = t.statusCounts.mapValues { Int64($0) }
        c.byReason = t.reasonCounts.mapValues { Int64($0) }
        return c
    }

    static func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
}
