import LoadGenerator
import PushTransport
import PushVocabulary
import Synchronization

/// `pushbench run --metrics-listen HOST:PORT`: the run's live counters and last-second percentiles in
/// Prometheus's text format at `GET /metrics` over HTTP/1.1, so a dashboard can follow a long run.
///
/// The main thread renders the text once a second, from the snapshot the progress line shows (the
/// driver threads' counters, read with relaxed atomic loads), and publishes it; a scrape only copies the
/// published text on the endpoint's own thread, so it never reaches a driver thread.
final class RunMetricsEndpoint: Sendable {
    /// What describes the run on every scrape (`pushbench_run_info`'s labels and the target rate).
    struct Run: Sendable {
        var label: String
        var pushProtocol: String
        var target: String
        /// The open-loop rate (nil: closed loop).
        var targetRPS: Int?
        var warmupSeconds: Double
    }

    /// The text a scrape answers, shared by the main thread (writer) and the endpoint's thread (reader).
    private final class Published: Sendable {
        let text: Mutex<String>
        init(_ text: String) { self.text = Mutex(text) }
    }

    private let endpoint: ScrapeEndpoint
    private let published: Published
    private let run: Run
    private let previous = Mutex<(sent: Int, elapsed: Double)>((0, 0))

    /// The port listened on.
    var port: Int { endpoint.port }

    /// Listens on `host:port` (exit 2 in the caller when it cannot) and publishes a first, empty text.
    init(host: String, port: Int, run: Run) throws(ScrapeEndpoint.Failure) {
        self.run = run
        let published = Published(Self.text(LiveSnapshot(), elapsed: 0, sentPerSecond: 0, run: run))
        self.published = published
        endpoint = try ScrapeEndpoint.start(host: host, port: port) { path in
            path == "/metrics"
                ? ScrapeEndpoint.Response(status: 200, contentType: ScrapeEndpoint.prometheusContentType,
                                          body: published.text.withLock { $0 })
                : nil
        }
    }

    /// Publishes `snapshot`, taken `elapsed` seconds after the run started (main thread, once a second).
    func publish(_ snapshot: LiveSnapshot, elapsed: Double) {
        let rate = previous.withLock { p -> Double in
            defer { p = (snapshot.sent, elapsed) }
            let window = elapsed - p.elapsed
            return window > 0 ? Double(snapshot.sent - p.sent) / window : 0
        }
        let text = Self.text(snapshot, elapsed: elapsed, sentPerSecond: rate, run: run)
        published.text.withLock { $0 = text }
    }

    /// Stops serving.
    func stop() { endpoint.stop() }

    /// The exposition for one snapshot. The percentiles are left out for a second with no response
    /// (no figure rather than a false 0).
    static func text(_ s: LiveSnapshot, elapsed: Double, sentPerSecond: Double, run: Run) -> String {
        var t = PrometheusText()
        let p = "pushbench_run_"
        t.family(p + "info", .gauge, "The run being measured: its label, protocol and target.",
                 [(["label": run.label, "protocol": run.pushProtocol, "target": run.target], 1)])
        t.family(p + "elapsed_seconds", .gauge, "Seconds since the run started (warm-up included).", elapsed)
        t.family(p + "warmup", .gauge, "1 while the warm-up lasts (its requests stay out of the results), else 0.",
                 elapsed < run.warmupSeconds ? 1 : 0)
        if let rate = run.targetRPS {
            t.family(p + "target_rps", .gauge, "The open-loop rate asked for, requests per second.", Double(rate))
            t.family(p + "behind", .gauge, "1 when more than 10 ms of the schedule waits to be sent (the sender is behind), else 0.",
                     ProgressDisplay.behind(s, targetRPS: rate) ? 1 : 0)
        }
        t.family(p + "sent_rps", .gauge, "Requests sent per second over the last interval.", sentPerSecond)
        t.family(p + "requests_sent_total", .counter, "Requests sent (warm-up included).", Double(s.sent))
        t.family(p + "responses_total", .counter, "Responses received (warm-up included).", Double(s.completed))
        t.family(p + "errors_total", .counter, "Non-2xx responses plus transport errors.", Double(s.errors))
        t.family(p + "in_flight", .gauge, "Requests sent and not yet answered.", Double(s.inFlight))
        t.family(p + "backlog", .gauge, "Requests due but waiting for a free stream.", Double(s.backlog))
        t.family(p + "last_second_responses", .gauge, "Responses in the last whole second.", Double(s.lastSecondCompleted))
        if s.lastSecondCompleted > 0 {
            t.family(p + "latency_seconds", .gauge,
                     "Corrected latency (from each request's intended send time) in the last whole second, by quantile.",
                     [(["quantile": "0.5"], Double(s.p50Micros) / 1e6), (["quantile": "0.99"], Double(s.p99Micros) / 1e6)])
        }
        return t.text
    }
}
