import Foundation
import PushVocabulary
import Testing
@testable import MockGateway

/// Parses Prometheus text with the Python prometheus_client package (a real scraper's parser, installed
/// by scripts/setup): every sample as `name{labels} value`, sorted labels, or the parser's error.
func parsePrometheus(_ text: String) throws -> [String: Double] {
    let script = """
    import sys
    from prometheus_client.parser import text_string_to_metric_families
    for family in text_string_to_metric_families(sys.stdin.read()):
        for s in family.samples:
            labels = ','.join('%s="%s"' % (k, s.labels[k]) for k in sorted(s.labels))
            print('%s%s %r' % (s.name, '{' + labels + '}' if labels else '', s.value))
    """
    let p = Process()
    p.executableURL = URL(fileURLWithPath: which("python3") ?? "/usr/bin/python3")
    p.arguments = ["-c", script]
    let input = Pipe(), output = Pipe(), error = Pipe()
    p.standardInput = input
    p.standardOutput = output
    p.standardError = error
    try p.run()
    input.fileHandleForWriting.write(Data(text.utf8))
    try input.fileHandleForWriting.close()
    let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let err = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { throw ProbeError(message: "prometheus_client could not parse it: \(err)") }
    var samples: [String: Double] = [:]
    for line in out.split(separator: "\n") {
        guard let space = line.lastIndex(of: " "), let v = Double(line[line.index(after: space)...]) else { continue }
        samples[String(line[..<space])] = v
    }
    return samples
}

@Suite(.serialized) struct GatewayMetricsTests {
    @Test func everyNumberOfStatsIsAMetricAPrometheusParserReads() throws {
        var s = GatewayStats()
        s.requests = 10
        s.byStatus = [200: 7, 410: 2, 429: 1]
        s.byReason = ["Unregistered": 2, "TooManyRequests": 1]
        s.bytesIn = 1234
        s.connectionsOpen = 2
        s.connectionsTotal = 5
        s.streamsOpen = 3
        s.goaways = 1
        s.drops = 1
        s.limits = ["header_size": 3]
        s.delayedResponses = 4
        s.injectedDelayNanos = 2_500_000
        s.fcm.requests = 3
        s.fcm.messagesAccepted = 2
        s.fcm.topicMessages = 1
        s.fcm.deviceDeliveries = 101
        s.fcm.fanoutPending = 50
        s.fcm.byCode = ["UNREGISTERED": 1]
        s.fcm.churnedTokens = 6
        s.fcm.churnRefusals = 8
        s.http1Requests = 5
        s.http1Refused = 1
        let m = try parsePrometheus(s.prometheusText)
        let p = "pushbench_gateway_"
        #expect(m[p + "requests_total{route=\"apns\"}"] == 7 && m[p + "requests_total{route=\"fcm\"}"] == 3)
        #expect(m[p + "responses_total{status=\"200\"}"] == 7 && m[p + "responses_total{status=\"410\"}"] == 2)
        #expect(m[p + "apns_errors_total{reason=\"Unregistered\"}"] == 2 && m[p + "fcm_errors_total{code=\"UNREGISTERED\"}"] == 1)
        #expect(m[p + "request_body_bytes_total"] == 1234)
        #expect(m[p + "http1_requests_total"] == 5 && m[p + "http1_refused_total"] == 1)
        #expect(m[p + "delayed_responses_total"] == 4 && m[p + "injected_latency_seconds_total"] == 0.0025)
        #expect(m[p + "connections_open"] == 2 && m[p + "connections_total"] == 5 && m[p + "streams_open"] == 3)
        #expect(s.json.contains(#""streams_open":3"#))
        #expect(m[p + "goaways_total"] == 1 && m[p + "drops_total"] == 1)
        #expect(m[p + "limits_enforced_total{limit=\"header_size\"}"] == 3)
        #expect(m[p + "churned_tokens_total"] == 6 && m[p + "churn_refusals_total"] == 8)
        #expect(m[p + "fcm_messages_accepted_total"] == 2 && m[p + "fcm_topic_messages_total"] == 1)
        #expect(m[p + "fcm_device_deliveries_total"] == 101 && m[p + "fcm_fanout_pending"] == 50)
    }

    /// Over h2c with curl, as a monitor next to a load test would: the counts of what was sent, the
    /// latency injected, and the scrape itself not counted as a request.
    @Test func metricsOverH2CCountWhatWasSent() throws {
        try withGateway(["--latency", "1ms", "--unregistered", "1"]) { g in
            for _ in 0..<3 {
                let (status, _) = try curl(g.port, path: "/3/device/" + validToken, body: "{\"aps\":{}}",
                                           headers: ["apns-topic: com.example.app"])
                #expect(status == 410)
            }
            let (status, text) = try curl(g.port, path: "/metrics", method: "GET", headers: [])
            #expect(status == 200)
            let m = try parsePrometheus(text)
            #expect(m["pushbench_gateway_requests_total{route=\"apns\"}"] == 3)
            #expect(m["pushbench_gateway_responses_total{status=\"410\"}"] == 3)
            #expect(m["pushbench_gateway_apns_errors_total{reason=\"Unregistered\"}"] == 3)
            #expect(m["pushbench_gateway_delayed_responses_total"] == 3)
            #expect((m["pushbench_gateway_injected_latency_seconds_total"] ?? 0) >= 0.003)
            #expect(m["pushbench_gateway_connections_total"] == 4)
        }
    }

    /// Requests held by `--latency` are streams open: /metrics and /stats show them while they are held and
    /// 0 once they are answered.
    @Test func streamsHeldByLatencyAreOpenUntilAnswered() throws {
        try withGateway(["--latency", "3s"]) { g in
            let held = try (0..<2).map { _ in
                try startProcess("/usr/bin/curl", ["-s", "--http2-prior-knowledge", "--max-time", "60", "-o", "/dev/null",
                                                    "-w", "%{http_code}", "-H", "apns-topic: com.example.app",
                                                    "--data-binary", "{\"aps\":{}}",
                                                    "http://127.0.0.1:\(g.port)/3/device/" + validToken])
            }
            func streamsOpen() throws -> Double? {
                guard let text = httpGet("127.0.0.1:\(g.port)", "/metrics"), let body = text.range(of: "\r\n\r\n") else { return nil }
                return try parsePrometheus(String(text[body.upperBound...]))["pushbench_gateway_streams_open"]
            }
            // Polled until a request is held, or until every client has its answer (then it was missed).
            var seen: Double?
            while held.contains(where: { $0.process.isRunning }) {
                seen = try streamsOpen()
                if let seen, seen > 0 { break }
                usleep(10_000)
            }
            #expect((seen ?? 0) > 0)
            for child in held { #expect(child.finish(timeout: 60).stdout == "200") }
            #expect(try streamsOpen() == 0)
            #expect(g.statsJSON().contains(#""streams_open":0"#))
            #expect(g.stats().delayedResponses == 2)
        }
    }

    /// A plain HTTP/1.1 client (curl --http1.1, as Prometheus scrapes) reads /metrics and /stats, and
    /// /metrics counts what came over HTTP/1.1.
    @Test func metricsAndStatsOverHTTP1() throws {
        try withGateway { g in
            let (_, refused, _) = try curlHTTP1(g.port, path: "/3/device/" + validToken, body: "{\"aps\":{}}", headers: [])
            #expect(refused == 0)
            let (_, status, text) = try curlHTTP1(g.port, path: "/metrics", method: "GET", headers: [])
            #expect(status == 200)
            let m = try parsePrometheus(text)
            #expect(m["pushbench_gateway_http1_refused_total"] == 1)
            #expect((m["pushbench_gateway_http1_requests_total"] ?? 0) >= 1)
            let (_, statsStatus, stats) = try curlHTTP1(g.port, path: "/stats", method: "GET", headers: [])
            #expect(statsStatus == 200 && stats.contains("\"http1\":{\"requests\":"))
        }
    }
}
