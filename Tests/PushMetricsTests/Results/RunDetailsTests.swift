import Foundation
import PushVocabulary
import Testing
@testable import PushMetrics

/// summary.json's run sections come from typed values; these are the bytes a run has always written.
@Suite struct RunDetailsTests {
    static func fullDetails() -> RunDetails {
        var d = RunDetails()
        var warmup = RequestCounts()
        warmup.sent = 100; warmup.completed = 100; warmup.succeeded = 100; warmup.byStatus = ["200": 100]
        d.warmup = warmup
        d.accounting = RunAccounting(consistent: true, retries: 2, notSent: 0, oversizeNotSent: 1)
        d.accounting?.transportErrorsByCause = ["reset_internal_error": 2, "connection_lost": 1]
        d.accounting?.truncatedResponseBodies = 3
        d.backlog = Backlog(max: 7, blocked: 3)
        d.inFlightMax = 800
        d.connections = ConnectionCounts(opened: 8, goaways: 0, lost: 1, connectFailures: 0, peerMaxConcurrentStreams: 1000)
        d.processCPU = CPUTime(user: 1.25, system: 0.5)
        d.machine = MachineNoise(cpus: 2, loadAverageAtStart: 0.456, stealSeconds: 0.0123456, driverInvoluntarySwitches: 12,
                                 driverCPUWaitSeconds: 0.0021234, gatewayCPUWaitSeconds: 0.5, realtime: true)
        d.tokenPruning = TokenPruning(pruned: 5, exhausted: false)
        d.gateway = GatewayCounts(received: 1102, byStatus: [410: 2, 200: 1100], byReason: ["Unregistered": 2], connectionsTotal: 8,
                                  goaways: 0, drops: 0, bytesIn: 99_000,
                                  fcm: FCMCounts(requests: 1102, messagesAccepted: 1100, validateOnly: 0, topicMessages: 0,
                                                 deviceDeliveries: 1100, fanoutPending: 0, byCode: ["UNREGISTERED": 2],
                                                 churnedTokens: 5, churnRefusals: 2, captured: 3))
        d.reconciliation = Reconciliation(clientAttempts: 1102, clientAnswered: 1102, gatewayReceived: 1102,
                                          fcm: FCMReconciliation(accepted: 1100, clientOK: 1100, clientUnanswered: 0))
        d.encoderComparison = EncoderComparisonShare(variants: ["zerocopy", "copy"], rounds: 5, roundSeconds: 1, pushes: 5000,
                                                     driverCPUSeconds: 0.12345, cpuSecondsPerMillion: 24.6912,
                                                     processCPUSeconds: 0.3333, testSlowdownMicroseconds: 20)
        return d
    }

    @Test func everySectionRendersAsARunHasAlwaysWrittenIt() throws {
        let expected = #"{"warmup":{"sent":100,"completed":100,"succeeded":100,"failed":0,"transport_errors":0,"unfinished":0,"by_status":{"200":100},"by_reason":{}},"accounting":{"consistent":true,"retries":2,"not_sent":0,"oversize_not_sent":1,"transport_errors_by_cause":{"connection_lost":1,"reset_internal_error":2},"truncated_response_bodies":3},"backlog":{"max":7,"blocked":3},"in_flight_max":800,"connections":{"opened":8,"goaways":0,"lost":1,"connect_failures":0,"peer_max_concurrent_streams":1000},"cpu_process":{"user_s":1.25,"sys_s":0.5},"machine":{"cpus":2,"load_average_1m_at_start":0.46,"steal_ms":12.346,"driver_involuntary_switches":12,"driver_cpu_wait_ms":2.123,"gateway_cpu_wait_ms":500.0,"realtime":true},"pruned_tokens":5,"tokens_exhausted":false,"gateway":{"received":1102,"by_status":{"200":1100,"410":2},"by_reason":{"Unregistered":2},"connections_total":8,"goaways":0,"drops":0,"bytes_in":99000,"fcm":{"requests":1102,"messages_accepted":1100,"validate_only":0,"topic_messages":0,"device_deliveries":1100,"fanout_pending":0,"by_code":{"UNREGISTERED":2},"churned_tokens":5,"churn_refusals":2,"captured":3}},"reconciliation":{"client_attempts":1102,"client_answered":1102,"gateway_received":1102,"consistent":true,"fcm_messages_accepted":1100,"client_ok":1100,"fcm_consistent":true},"ab":{"variants":["zerocopy","copy"],"reference":"zerocopy","rounds":5,"round_s":1.0,"pushes":5000,"driver_cpu_s":0.123,"cpu_s_per_million":24.691,"process_cpu_s":0.333,"test_slowdown_us":20.0}}"#
        // Parsed and printed again, so ints stay ints, doubles doubles and the key order counts.
        #expect(JSONValue.object(Self.fullDetails().members).render() == (try JSONValue.parse(expected)).render())
    }

    @Test func absentSectionsAreNotWritten() throws {
        #expect(RunDetails().members.isEmpty)
        var d = RunDetails()
        d.reconciliation = Reconciliation(clientAttempts: 10, clientAnswered: 11, gatewayReceived: 11)
        #expect(d.members.map(\.0) == ["reconciliation"])
        #expect(d.reconciliation?.consistent == false)
        let expected = #"{"client_attempts":10,"client_answered":11,"gateway_received":11,"consistent":false}"#
        #expect(d.reconciliation?.json.render() == (try JSONValue.parse(expected)).render())
    }

    /// The typed sections go after the core figures and before what a reader kept, and a kept section
    /// never repeats a typed one.
    @Test func sectionsSitBetweenTheCoreAndTheKeptExtras() {
        var r = Fixtures.record()
        r.details = Self.fullDetails()
        r.extra = [("backlog", .int(1)), ("merged_from", .array([]))]
        r.config.settings = RunSettings(requests: nil, warmupSeconds: 2, tokens: 1000, payload: "default", retry: 0,
                                        sendOversize: false, apnsID: true)
        let s = ResultsWriter.summaryJSON(r, runID: "x")
        let keys = s.members.map(\.0)
        #expect(Array(keys[keys.firstIndex(of: "max_rss_bytes")!...]) == ["max_rss_bytes"] + Self.fullDetails().members.map(\.0)
                + ["merged_from", "histograms"])
        #expect(s["config"]?.members.map(\.0) == ["target", "protocol", "rps", "duration_s", "connections", "streams", "threads",
                                                 "encoder", "warmup_s", "tokens", "payload", "retry", "send_oversize", "apns_id", "http", "credentials"])
    }
}
