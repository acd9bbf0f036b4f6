import LoadGenerator
import Testing
@testable import PushbenchCLI

/// What `--metrics-listen` publishes for one snapshot.
@Suite struct RunMetricsTests {
    let run = RunMetricsEndpoint.Run(label: "nightly \"a\"", pushProtocol: "fcm", target: "127.0.0.1:8080", targetRPS: 1000,
                                     warmupSeconds: 2)

    @Test func countsRateAndPercentilesOfTheLastSecond() {
        var s = LiveSnapshot()
        s.sent = 3000
        s.completed = 2990
        s.errors = 4
        s.inFlight = 10
        s.backlog = 50
        s.p50Micros = 250
        s.p99Micros = 1800
        s.lastSecondCompleted = 1000
        let text = RunMetricsEndpoint.text(s, elapsed: 3, sentPerSecond: 1000, run: run)
        #expect(text.contains("pushbench_run_info{label=\"nightly \\\"a\\\"\",protocol=\"fcm\",target=\"127.0.0.1:8080\"} 1\n"))
        #expect(text.contains("\npushbench_run_elapsed_seconds 3\n") && text.contains("\npushbench_run_warmup 0\n"))
        #expect(text.contains("\npushbench_run_target_rps 1000\n") && text.contains("\npushbench_run_behind 1\n"))
        #expect(text.contains("\npushbench_run_requests_sent_total 3000\n") && text.contains("\npushbench_run_responses_total 2990\n"))
        #expect(text.contains("\npushbench_run_errors_total 4\n") && text.contains("\npushbench_run_backlog 50\n"))
        #expect(text.contains("\npushbench_run_latency_seconds{quantile=\"0.5\"} 0.00025\n"))
        #expect(text.contains("\npushbench_run_latency_seconds{quantile=\"0.99\"} 0.0018\n"))
    }

    /// A second with no response has no percentiles (rather than a false 0); the warm-up says so; a
    /// closed loop has no target rate.
    @Test func noFalseZeroAndTheWarmUpMarked() {
        var closed = run
        closed.targetRPS = nil
        let text = RunMetricsEndpoint.text(LiveSnapshot(), elapsed: 1, sentPerSecond: 0, run: closed)
        #expect(!text.contains("pushbench_run_latency_seconds"))
        #expect(!text.contains("pushbench_run_target_rps") && !text.contains("pushbench_run_behind"))
        #expect(text.contains("\npushbench_run_warmup 1\n"))
    }
}
