import Foundation
import Testing
@testable import MockGateway
@testable import PushMetrics
import PushPayload
@testable import LoadGenerator

/// Whole runs over loopback against the embedded mock gateway. Bounds are generous (a loaded 2-core
/// machine); what is asserted is what must hold whatever the speed: latencies are never below what the
/// gateway injected, the backlog is charged to the corrected latency, and the books balance.
@Suite(.serialized) struct LoopbackRunTests {
    private func configuration(_ gateway: EmbeddedGateway, rate: Int?, durationMs: UInt64, connections: Int = 2,
                               streams: Int = 50) -> LoadConfiguration {
        var c = LoadConfiguration(host: gateway.host, port: gateway.port, template: .defaultAPNs(),
                                  tokens: DeviceTokens(synthetic: 100, seed: 7))
        c.rate = rate
        c.durationNs = durationMs * 1_000_000
        c.connections = connections
        c.streams = streams
        c.drainTimeoutNs = 10_000_000_000
        return c
    }

    private func gateway(_ args: [String]) throws -> EmbeddedGateway {
        try EmbeddedGateway.start(GatewayConfiguration.parse(args))
    }

    @Test func injectedLatencyShowsInThePercentiles() throws {
        let gw = try gateway(["--latency", "2ms"])
        defer { gw.stop() }
        let r = try LoadRun.run(configuration(gw, rate: 500, durationMs: 1_000))
        let stats = gw.stop()
        #expect(r.measured.sent == 500)
        #expect(r.measured.succeeded == 500)
        #expect(r.measured.check())
        // Every response was held 2 ms by the gateway: nothing can be faster (µs histogram).
        #expect(r.latency.min >= 2_000)
        #expect(r.serviceTime.min >= 2_000)
        #expect(r.latency.valueAtPercentile(50) >= 2_000)
        #expect(r.latency.valueAtPercentile(50) < 500_000)
        #expect(r.latency.totalCount == 500)
        #expect(stats.requests == 500)
        #expect(r.intervals.reduce(0) { $0 + $1.completed } == 500)
    }

    @Test func aStallIsChargedToTheCorrectedLatencyNotHidden() throws {
        // One stream, 20 ms per response: at most 50 rps get through, 100 rps are asked for. The requests
        // queue in the backlog; their corrected latency grows with the wait while the service time stays
        // at ~20 ms. A closed-loop tool would report ~20 ms here (coordinated omission).
        let gw = try gateway(["--latency", "20ms"])
        defer { gw.stop() }
        let r = try LoadRun.run(configuration(gw, rate: 100, durationMs: 500, connections: 1, streams: 1))
        #expect(r.measured.sent == 50)
        #expect(r.measured.completed == 50)
        #expect(r.measured.check())
        #expect(r.serviceTime.min >= 20_000)
        #expect(r.stats.maxBacklog >= 10)
        // The last request was due at 490 ms but could only go out after ~49 × 20 ms: ~0.5 s late.
        #expect(r.latency.max >= 300_000)
        #expect(r.latency.valueAtPercentile(90) > 5 * r.serviceTime.valueAtPercentile(50))
    }

    @Test func anOverloadedRunEndsADrainTimeoutAfterItsScheduleAndCountsWhatWasNotSent() throws {
        let gw = try gateway(["--latency", "50ms"])
        defer { gw.stop() }
        var c = configuration(gw, rate: 200, durationMs: 500, connections: 1, streams: 1)
        c.drainTimeoutNs = 300_000_000
        let t = MonotonicClock.nanoseconds()
        let r = try LoadRun.run(c)
        let elapsed = Double(MonotonicClock.nanoseconds() - t) / 1e9
        let m = r.measured
        #expect(m.check())
        #expect(m.sent + m.notSent == 100)        // 20 rps of capacity for 200 rps asked: most never went out
        #expect(m.notSent > 50)
        #expect(elapsed < 5)                      // not the 5 s the backlog would need
    }

    @Test func booksBalanceWithFailuresAndKilledConnections() throws {
        let gw = try gateway(["--fail", "BadDeviceToken=0.1", "--unregistered", "0.1", "--drop-after-streams", "150"])
        defer { gw.stop() }
        var c = configuration(gw, rate: 2_000, durationMs: 1_000, connections: 2, streams: 20)
        c.warmupNs = 200_000_000
        let r = try LoadRun.run(c)
        let stats = gw.stop()
        let m = r.measured, w = r.warmup
        #expect(m.check() && w.check())
        #expect(w.sent + m.sent + w.notSent + m.notSent == 2_400)
        #expect(m.byReason[Reasons.index(of: "BadDeviceToken")] > 0)
        #expect(m.byReason[Reasons.index(of: "Unregistered")] > 0)
        #expect(m.byStatus[400] == m.byReason[Reasons.index(of: "BadDeviceToken")])
        #expect(m.transportErrors + w.transportErrors > 0)   // streams cut off by the dropped connections
        #expect(r.stats.connections.lost > 0)
        #expect(r.stats.connections.opened > 2)                     // ... and the pool reconnected
        // Everything the client counted as answered, the gateway received; it received nothing never sent.
        let answered = UInt64(m.completed + w.completed)
        #expect(answered <= stats.requests)
        #expect(stats.requests <= UInt64(m.sent + w.sent + m.retries + w.retries))
    }

    @Test func goawayIsFollowedByANewConnection() throws {
        let gw = try gateway(["--goaway-after-streams", "100"])
        defer { gw.stop() }
        let r = try LoadRun.run(configuration(gw, rate: 1_000, durationMs: 600, connections: 2, streams: 20))
        let stats = gw.stop()
        let m = r.measured
        #expect(m.check())
        #expect(m.sent == 600)
        #expect(r.stats.connections.goaways > 0)
        #expect(r.stats.connections.opened > 2)
        #expect(stats.goaways > 0)
        // A graceful GOAWAY lets the streams in flight finish; nothing is lost.
        #expect(m.completed + m.transportErrors == 600)
        #expect(UInt64(m.completed) <= stats.requests)
    }

    @Test func retriesResendCutOffRequests() throws {
        let gw = try gateway(["--drop-after-streams", "100"])
        defer { gw.stop() }
        var c = configuration(gw, rate: 1_000, durationMs: 600, connections: 2, streams: 20)
        c.retries = 3
        let r = try LoadRun.run(c)
        let m = r.measured
        #expect(m.check())
        #expect(m.retries > 0)
        #expect(m.sent == 600)
        #expect(m.completed + m.transportErrors + m.unfinished == 600)
    }

    @Test func closedLoopKeepsStreamsBusyAndStops() throws {
        let gw = try gateway([])
        defer { gw.stop() }
        let r = try LoadRun.run(configuration(gw, rate: nil, durationMs: 300, connections: 2, streams: 8))
        #expect(r.measured.sent > 16)
        #expect(r.measured.check())
        #expect(r.measured.unfinished == 0)
        #expect(r.stats.maxBacklog == 0)
    }

    @Test func peerStreamLimitCapsStreams() throws {
        let gw = try gateway(["--max-streams", "3", "--latency", "5ms"])
        defer { gw.stop() }
        let r = try LoadRun.run(configuration(gw, rate: nil, durationMs: 200, connections: 1, streams: 100))
        #expect(r.stats.connections.peerMaxStreams == 3)
        #expect(r.measured.check())
        #expect(r.measured.transportErrors == 0)   // never more streams than the peer allows
    }

    @Test func threadsShareTheRateAndMerge() throws {
        let gw = try gateway([])
        defer { gw.stop() }
        var c = configuration(gw, rate: 1_000, durationMs: 500, connections: 1, streams: 20)
        c.threads = 3
        c.requests = 400
        let r = try LoadRun.run(c)
        let stats = gw.stop()
        #expect(r.measured.sent == 400)          // the three shares of one schedule add up exactly
        #expect(r.measured.succeeded == 400)
        #expect(r.measured.check())
        #expect(r.latency.totalCount == 400)
        #expect(stats.connectionsTotal == 3)
        #expect(TimelineInterval.merged(r.intervals).reduce(0) { $0 + $1.completed } == 400)
    }

    @Test func unreachableTargetThrows() {
        var c = LoadConfiguration(host: "127.0.0.1", port: 1, template: .defaultAPNs(), tokens: DeviceTokens(synthetic: 1))
        c.connectTimeoutMilliseconds = 500
        #expect(throws: LoadRunError.self) { try LoadRun.run(c) }
    }
}
