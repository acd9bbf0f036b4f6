import Foundation
import Testing
@testable import MockGateway

@Suite struct GatewayConfigurationTests {
    @Test func defaultsTurnEveryBehaviourOff() throws {
        let c = try GatewayConfiguration.parse([])
        #expect(c == GatewayConfiguration())
        #expect(c.host == "127.0.0.1" && c.port == 8080 && c.threads == 1)
        #expect(c.latency == .none && c.failures.isEmpty && c.unregisteredFraction == 0 && c.tokenRateLimit == nil)
        #expect(c.maxConcurrentStreams == 1000 && !c.dropStreamsOnError)
        #expect(c.goawayAfterStreams == nil && c.goawayAfterSeconds == nil && c.dropRate == 0 && c.dropAfterStreams == nil)
    }

    /// Every bound has a flag; sizes take units, timeouts durations (0s turns one off); bad values are named.
    @Test func limitFlagsAreParsed() throws {
        let c = try GatewayConfiguration.parse([
            "--max-connections", "500", "--max-header-size", "8KiB", "--max-header-memory", "1MiB", "--max-body", "16KiB",
            "--max-body-memory", "2MiB", "--max-body-total", "64MiB", "--max-outbound-frames", "1000",
            "--max-control-frames", "500", "--handshake-timeout", "2s", "--idle-timeout", "0s", "--request-timeout", "500ms",
            "--write-timeout", "1m",
        ])
        #expect(c.maxConnections == 500)
        let l = c.limits
        #expect(l.maxHeaderListSize == 8192 && l.maxHeaderMemoryPerConnection == 1 << 20 && l.maxRequestBodySize == 16384)
        #expect(l.maxBodyMemoryPerConnection == 2 << 20 && l.maxBodyMemory == 64 << 20)
        #expect(l.maxOutboundFrames == 1000 && l.maxControlFramesPerSecond == 500)
        #expect(l.handshakeTimeoutNanos == 2_000_000_000 && l.idleTimeoutNanos == 0 && l.requestTimeoutNanos == 500_000_000)
        #expect(l.writeTimeoutNanos == 60_000_000_000)
        #expect(String(decoding: l.idleGoAwayDebugData, as: UTF8.self) == #"{"reason":"IdleTimeout"}"#)
        #expect(GatewayConfiguration().limits.maxRequestBodySize == 64 * 1024)
        for (args, message) in [(["--max-body", "1KiB"], "--max-body: 1KiB is out of range"), (["--max-header-size", "lots"], "--max-header-size: 'lots' is not a size"),
                                (["--idle-timeout", "2d"], "--idle-timeout:"), (["--max-connections", "0"], "--max-connections: 0 is out of range")] {
            #expect(throws: GatewayConfigurationError.self) { try GatewayConfiguration.parse(args) }
            do { _ = try GatewayConfiguration.parse(args) } catch { #expect(error.message.hasPrefix(message), "\(error.message)") }
        }
    }

    @Test func flagsAreParsed() throws {
        let c = try GatewayConfiguration.parse([
            "--listen", "0.0.0.0:9000", "--threads=4", "--seed", "42", "--latency", "p50=1ms,p99=10ms",
            "--fail", "InternalServerError=0.01", "--fail", "TooManyRequests=2%", "--unregistered", "0.05",
            "--token-rate", "10/20", "--max-streams", "100", "--streams-drop-on-error", "--goaway-after-streams", "1000",
            "--goaway-after", "30s", "--goaway-reason", "IdleTimeout", "--drop-rate", "0.001", "--drop-after-streams", "5000",
            "--token-length", "64", "--topic-optional",
        ])
        #expect(c.host == "0.0.0.0" && c.port == 9000 && c.threads == 4 && c.seed == 42 && c.idSeed == 42)
        #expect(c.latency == .percentiles([LatencyPoint(percentile: 50, nanos: 1_000_000), LatencyPoint(percentile: 99, nanos: 10_000_000)]))
        #expect(c.failures == [FailureRate(reason: .internalServerError, fraction: 0.01), FailureRate(reason: .tooManyRequests, fraction: 0.02)])
        #expect(c.unregisteredFraction == 0.05 && c.tokenRateLimit == TokenRateLimit(perSecond: 10, burst: 20))
        #expect(c.maxConcurrentStreams == 100 && c.dropStreamsOnError)
        #expect(c.goawayAfterStreams == 1000 && c.goawayAfterSeconds == 30 && c.goawayReason == .idleTimeout)
        #expect(c.dropRate == 0.001 && c.dropAfterStreams == 5000 && c.tokenLength == 64...64 && !c.requireTopic)
        #expect(try GatewayConfiguration.parse(["--listen", "[::1]:0"]).host == "::1")
        #expect(try GatewayConfiguration.parse(["--latency", "250us"]).latency == .fixed(nanos: 250_000))
        #expect(try GatewayConfiguration.parse(["--latency", "1s-2s"]).latency == .uniform(minNanos: 1_000_000_000, maxNanos: 2_000_000_000))
    }

    @Test(arguments: [
        (["--threads", "0"], "--threads: 0 is out of range (1...64)"),
        (["--threads", "x"], "--threads: 'x' is not a whole number"),
        (["--listen", "8080"], "--listen: '8080' is not HOST:PORT (e.g. 127.0.0.1:8080, localhost:0, :8080)"),
        (["--latency", "fast"], "--latency: 'fast' is not a latency (e.g. 2ms, 1ms-5ms, p50=1ms,p99=10ms)"),
        // A number without its unit is refused everywhere: is `--latency=2` two seconds or two milliseconds?
        (["--latency", "2"], "--latency: '2' has no unit: say which, as in 2s or 2ms (a number and a unit: ns, us or µs, ms, s, m, h; several as in 1m30s)"),
        (["--latency", "p50=1,p99=10ms"], "--latency: '1' has no unit: say which, as in 1s or 1ms (a number and a unit: ns, us or µs, ms, s, m, h; several as in 1m30s)"),
        (["--goaway-after", "30"], "--goaway-after: '30' has no unit: say which, as in 30s or 30ms (a number and a unit: ns, us or µs, ms, s, m, h; several as in 1m30s)"),
        (["--token-churn", "0.01"], "--token-churn: '0.01' has no time unit: say per what, as in 0.01/s or 0.01/min (N/UNIT as in 100/s, 600000/min, 5/10s)"),
        (["--fanout-rate", "10000"], "--fanout-rate: '10000' has no time unit: say per what, as in 10000/s or 10000/min (N/UNIT as in 100/s, 600000/min, 5/10s)"),
        (["--latency", "5ms-1ms"], "--latency: '5ms-1ms': the minimum is above the maximum"),
        (["--latency", "p50=5ms,p99=1ms"], "--latency: latency at p99.0 is below the latency at p50.0"),
        (["--fail", "Oops=0.1"], "--fail: 'Oops' is not an APNs reason (e.g. InternalServerError)"),
        (["--fail", "InternalServerError"], "--fail: 'InternalServerError' is not REASON=FRACTION"),
        (["--fail", "InternalServerError=2"], "--fail: '2' is not a fraction between 0 and 1 (or 0%...100%)"),
        (["--fail", "InternalServerError=0.6", "--fail", "Shutdown=0.6"], "failure fractions add up to 1.2, more than 1"),
        (["--unregistered", "-0.1"], "--unregistered: '-0.1' is not a fraction between 0 and 1 (or 0%...100%)"),
        (["--token-rate", "0"], "--token-rate: '0' is not a positive rate N or N/BURST"),
        (["--goaway-reason", "Bye"], "--goaway-reason: 'Bye' is not an APNs reason (e.g. Shutdown)"),
        (["--token-length", "63"], "--token-length: '63': a hex token has an even length"),
        (["--nope"], "unknown option '--nope'"),
        (["--seed"], "--seed: needs a value"),
        (["--seed", "1", "--seed", "2"], "--seed: given more than once"),
        (["--topic-optional=yes"], "--topic-optional: takes no value"),
        (["stray"], "unexpected argument 'stray'"),
    ])
    func badFlagIsNamedInOneLine(_ c: ([String], String)) {
        #expect(throws: GatewayConfigurationError(c.1)) { _ = try GatewayConfiguration.parse(c.0) }
    }

    func scenario(_ json: String) throws -> String {
        let path = NSTemporaryDirectory() + "pushbench-scenario-\(UUID().uuidString).json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func scenarioFileSetsBehavioursAndFlagsOverrideIt() throws {
        let path = try scenario("""
        {"seed": 9, "threads": 2, "latency": {"uniform_ms": [1, 5]},
         "failures": {"InternalServerError": 0.01, "Unregistered": 0.02},
         "unregistered_fraction": 0.1, "token_rate_limit": {"per_second": 5, "burst": 10},
         "max_concurrent_streams": 200, "streams_drop_on_error": true,
         "goaway": {"after_streams": 100, "after_seconds": 2.5, "reason": "Shutdown"},
         "drops": {"rate": 0.001, "after_streams": 7}, "token_length": "64-100", "require_topic": false}
        """)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let c = try GatewayConfiguration.parse(["--scenario", path, "--seed", "3"])
        #expect(c.seed == 3 && c.idSeed == 3 && c.threads == 2 && c.scenarioFile == path)
        #expect(GatewayConfiguration().idSeed == nil)
        #expect(try GatewayConfiguration.parse([]).idSeed == nil)
        #expect(c.latency == .uniform(minNanos: 1_000_000, maxNanos: 5_000_000))
        #expect(c.failures == [FailureRate(reason: .internalServerError, fraction: 0.01), FailureRate(reason: .unregistered, fraction: 0.02)])
        #expect(c.unregisteredFraction == 0.1 && c.tokenRateLimit == TokenRateLimit(perSecond: 5, burst: 10))
        #expect(c.maxConcurrentStreams == 200 && c.dropStreamsOnError)
        #expect(c.goawayAfterStreams == 100 && c.goawayAfterSeconds == 2.5 && c.goawayReason == .shutdown)
        #expect(c.dropRate == 0.001 && c.dropAfterStreams == 7 && c.tokenLength == 64...100 && !c.requireTopic)

        let p2 = try scenario(#"{"latency": {"percentiles_ms": {"50": 1, "p99": 10}}}"#)
        defer { try? FileManager.default.removeItem(atPath: p2) }
        #expect(try GatewayConfiguration.parse(["--scenario", p2]).latency
                == .percentiles([LatencyPoint(percentile: 50, nanos: 1_000_000), LatencyPoint(percentile: 99, nanos: 10_000_000)]))
        let p3 = try scenario(#"{"latency": "2ms"}"#)
        defer { try? FileManager.default.removeItem(atPath: p3) }
        #expect(try GatewayConfiguration.parse(["--scenario", p3]).latency == .fixed(nanos: 2_000_000))
    }

    @Test(arguments: [
        (#"{"latency": {"uniform_ms": [1]}}"#, "field 'latency.uniform_ms': needs two numbers [min, max]"),
        (#"{"latency": {"fixed_ms": "2"}}"#, "field 'latency.fixed_ms': must be a number"),
        (#"{"latency": {"fixed_ms": 1, "uniform_ms": [1, 2]}}"#, "field 'latency': give exactly one of fixed_ms, uniform_ms, percentiles_ms"),
        (#"{"latency": "soon"}"#, "field 'latency': 'soon' is not a latency (e.g. 2ms, 1ms-5ms, p50=1ms,p99=10ms)"),
        (#"{"failures": {"Nope": 0.1}}"#, "field 'failures.Nope': not an APNs reason (e.g. InternalServerError)"),
        (#"{"failures": {"Shutdown": 1.5}}"#, "field 'failures.Shutdown': must be a fraction between 0 and 1"),
        (#"{"failures": {"Shutdown": 0.7, "BadTopic": 0.7}}"#, "failure fractions add up to 1.4, more than 1"),
        (#"{"unregistered_fraction": true}"#, "field 'unregistered_fraction': must be a number"),
        (#"{"streams_drop_on_error": 1}"#, "field 'streams_drop_on_error': must be true or false"),
        (#"{"max_concurrent_streams": 0}"#, "field 'max_concurrent_streams': must be a whole number, 1...2147483647"),
        (#"{"goaway": {"reason": "Bye"}}"#, "field 'goaway.reason': must be an APNs reason string (e.g. \"Shutdown\")"),
        (#"{"goaway": {"after": 3}}"#, "field 'goaway.after': unknown field (expected one of after_streams, after_seconds, reason)"),
        (#"{"latncy": {}}"#, "field 'latncy': unknown field (expected one of listen, threads, seed, latency, failures, unregistered_fraction, token_rate_limit, max_concurrent_streams, streams_drop_on_error, goaway, drops, token_length, require_topic, token_topics, not_for_topic_fraction, disallowed_topics)"),
        (#"{"token_rate_limit": {"burst": 3}}"#, "field 'token_rate_limit.per_second': is required"),
        (#"{"token_length": 63}"#, "field 'token_length': a hex token has an even length"),
        (#"[1, 2]"#, "the top level must be a JSON object"),
    ])
    func malformedScenarioIsRejectedNamingFileAndField(_ c: (String, String)) throws {
        let path = try scenario(c.0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: GatewayConfigurationError("scenario \(path): \(c.1)")) {
            _ = try GatewayConfiguration.parse(["--scenario", path])
        }
    }

    @Test func missingScenarioFileIsNamed() {
        #expect(throws: GatewayConfigurationError("scenario /nonexistent/s.json: no such file")) {
            _ = try GatewayConfiguration.parse(["--scenario", "/nonexistent/s.json"])
        }
    }

    @Test func brokenScenarioJSONIsReportedAtItsLineAndColumn() throws {
        let path = try scenario("{\n  \"seed\": 7,\n  \"latency\": }\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: GatewayConfigurationError("scenario \(path):3:14: not valid JSON: expected a JSON value")) {
            _ = try GatewayConfiguration.parse(["--scenario", path])
        }
    }

    @Test func listenTakesHostNamesAndABarePort() throws {
        let named = try GatewayConfiguration.parse(["--listen", "localhost:0"])
        #expect(named.host == "127.0.0.1" && named.port == 0)
        let bare = try GatewayConfiguration.parse(["--listen", ":8080"])
        #expect(bare.host == "127.0.0.1" && bare.port == 8080)
        #expect(try GatewayConfiguration.parse(["--listen", "[::1]:0"]).host == "::1")
        #expect(throws: (any Error).self) { _ = try GatewayConfiguration.parse(["--listen", "no-such-host.invalid:0"]) }
    }
}
