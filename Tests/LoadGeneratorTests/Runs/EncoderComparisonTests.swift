import Foundation
import Testing
@testable import MockGateway
@testable import PushMetrics
import PushPayload
import PushbenchTestSupport
@testable import LoadGenerator

/// Encoder A/B in one invocation: the round-robin schedule and the merged per-variant results against one
/// embedded gateway (the command line's side: EndToEndTests/EncoderComparisonCommandTests). Short
/// rounds and low rates; nothing here asserts a speed.
@Suite(.serialized) struct EncoderComparisonTests {
    // MARK: Schedule

    @Test func roundsAreRoundRobinUntilEachVariantHasItsTime() {
        let r = ComparisonSchedule.rounds(variants: 3, durationNs: 2_500_000_000, roundNs: 1_000_000_000, warmupNs: 500_000_000)
        #expect(r.map(\.variant) == [0, 1, 2, 0, 1, 2, 0, 1, 2])
        #expect(r.map(\.pass) == [0, 0, 0, 1, 1, 1, 2, 2, 2])
        #expect(r.map(\.index) == Array(0..<9))
        #expect(r.map(\.durationNs) == [1, 1, 1, 1, 1, 1, 0.5, 0.5, 0.5].map { UInt64($0 * 1e9) })
        #expect(r.map(\.warmupNs) == [500_000_000, 500_000_000, 500_000_000, 0, 0, 0, 0, 0, 0])
        for v in 0..<3 {
            #expect(r.filter { $0.variant == v }.reduce(0) { $0 + $1.durationNs } == 2_500_000_000)
        }
        // Shorter than a round: one round each.
        #expect(ComparisonSchedule.rounds(variants: 2, durationNs: 300_000_000, roundNs: 1_000_000_000).map(\.durationNs)
                == [300_000_000, 300_000_000])
        let q = ComparisonSchedule.rounds(variants: 2, requests: 250, perRound: 100)
        #expect(q.map(\.variant) == [0, 1, 0, 1, 0, 1])
        #expect(q.map(\.requests) == [100, 100, 100, 100, 50, 50])
    }

    @Test func roundLengthsAndSlowdownsParseOrNameTheProblem() throws {
        #expect(ComparisonSchedule.parseDuration("250ms") == 250_000_000)
        #expect(ComparisonSchedule.parseDuration("1.5s") == 1_500_000_000)
        #expect(ComparisonSchedule.parseDuration("20us") == 20_000)
        #expect(ComparisonSchedule.parseDuration("fast") == nil)
        #expect(ComparisonSchedule.parseDuration("0s") == nil)
        #expect(try TestSlowdown.parse("copy:20us") == TestSlowdown(variant: .copy, nanoseconds: 20_000))
        #expect(try TestSlowdown.fromEnvironment([:]) == nil)
        do {
            _ = try TestSlowdown.parse("turbo:1ms")
            Issue.record("accepted an unknown variant")
        } catch {
            #expect(error.description.contains("PUSHBENCH_TEST_SLOW_ENCODER='turbo:1ms'"))
        }
        do {
            _ = try TestSlowdown.parse("copy:soon")
            Issue.record("accepted a bad time")
        } catch {
            #expect(error.description.contains("'soon' is not a time"))
        }
    }

    // MARK: Library run

    @Test func variantsRunInTurnAgainstOneGatewayAndMergeExactly() throws {
        let gw = try EmbeddedGateway.start(GatewayConfiguration.parse([]))
        defer { gw.stop() }
        var c = LoadConfiguration(host: gw.host, port: gw.port, template: .defaultAPNs(),
                                  tokens: DeviceTokens(synthetic: 50, seed: 3))
        c.rate = 500
        c.connections = 2
        c.streams = 20
        c.drainTimeoutNs = 10_000_000_000
        let variants: [EncoderVariant] = [.zerocopy, .copy, .foundation]
        let schedule = ComparisonSchedule.rounds(variants: 3, durationNs: 600_000_000, roundNs: 200_000_000)
        var started: [Int] = [], ended: [Int] = []
        var gatewayBefore: UInt64 = 0
        var gatewaySeen = [UInt64](repeating: 0, count: variants.count)
        let ab = try EncoderComparison.run(c, variants: variants, schedule: schedule,
                                           roundStarted: { started.append($0.variant); gatewayBefore = gw.stats().requests },
                                           roundEnded: { ended.append($0.variant); gatewaySeen[$0.variant] += gw.stats().requests - gatewayBefore })
        #expect(started == [0, 1, 2, 0, 1, 2, 0, 1, 2])
        #expect(ended == started)
        #expect(ab.rounds == schedule)
        #expect(!ab.interrupted)
        #expect(ab.variants.map(\.variant) == variants)
        var gatewayTotal: UInt64 = 0
        for v in ab.variants {
            let r = v.result
            #expect(v.rounds == 3)
            // 500 rps × 3 rounds of 0.2 s, every request answered 200 by the one gateway.
            #expect(r.measured.sent == 300, "\(v.variant)")
            #expect(r.measured.succeeded == 300, "\(v.variant)")
            #expect(r.measured.check())
            #expect(r.latency.totalCount == 300)
            #expect(abs(r.measuredSeconds - 0.6) < 0.3)
            #expect(r.intervals.reduce(0) { $0 + $1.completed } == 300)
            // Each round's requests reached the gateway before the round ended.
            #expect(gatewaySeen[variants.firstIndex(of: v.variant)!] == 300)
            #expect(v.pushes == 300)
            #expect(v.perRound.map(\.index) == schedule.filter { variants[$0.variant] == v.variant }.map(\.index))
            #expect(v.perRound.allSatisfy { $0.p99 > 0 && ($0.cpuSecondsPerMillion ?? 0) > 0 })
            #expect(v.driverCPUSeconds > 0)
            // Linux has /proc/stat: each variant carries the steal of its own rounds, as a plain run does.
            #expect((r.stealSeconds ?? -1) >= 0, "\(v.variant)")
            #expect(r.intervals.contains { $0.stealMs != nil }, "per-second steal survives the rounds' merge")
            #expect((v.cpuSecondsPerMillion ?? 0) > 0)
            gatewayTotal += gatewaySeen[variants.firstIndex(of: v.variant)!]
        }
        #expect(gatewayTotal == gw.stats().requests)
    }
}
