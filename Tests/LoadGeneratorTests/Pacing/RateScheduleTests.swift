import Testing
@testable import PushMetrics
@testable import PushPayload
@testable import LoadGenerator

/// The stage arithmetic of ``RateSchedule``: every intended time exact, across stage boundaries, down to 0
/// and over hours, checked against the integral written out independently.
@Suite struct RateScheduleTests {
    /// 2e9·D·N(t) for one stage from `from` to `to` rps over `d` ns, t ns into it: the integral of the rate.
    private func scaled(_ from: Int, _ to: Int, _ d: Int128, _ t: Int128) -> Int128 {
        2 * d * Int128(from) * t + Int128(to - from) * t * t
    }

    /// Whether `offset` is request g's intended time in a one-stage schedule: the integral has not passed g
    /// by then, and has by the next nanosecond.
    private func isIntended(_ g: Int64, at offset: UInt64, from: Int, to: Int, durationNs: UInt64) -> Bool {
        let d = Int128(durationNs), goal = Int128(g) * 2_000_000_000 * d, t = Int128(offset)
        return scaled(from, to, d, t) <= goal && scaled(from, to, d, t + 1) > goal
    }

    @Test func aConstantStageIsThePacersConstantSchedule() {
        for rate in [1, 3, 7, 999, 50_000, 123_457] {
            let s = RateSchedule.constant(rate: rate, durationNs: 3_000_000_000)
            let p = Pacer(start: 0, rate: rate)
            #expect(s.totalRequests == Int64(rate) * 3)
            for g: Int64 in [0, 1, 2, 10, Int64(rate) - 1, Int64(rate), Int64(rate) * 3 - 1] where g < s.totalRequests {
                #expect(s.offset(ofRequest: g) == p.intendedTime(global: g), "rate \(rate) g \(g)")
                #expect(s.dueCount(atOffset: s.offset(ofRequest: g)) == p.dueCount(at: p.intendedTime(global: g)))
            }
        }
    }

    @Test func everyRequestOfARampIsAtTheIntegralsCrossing() {
        for (from, to) in [(0, 1_000), (1_000, 3_000), (3_000, 1_000), (5_000, 0), (7, 13)] {
            let d: UInt64 = 2_000_000_000
            let s = RateSchedule.ramp(from: from, to: to, durationNs: d)
            // (from + to) / 2 × 2 s requests, exactly.
            #expect(s.totalRequests == Int64(from + to))
            var previous: UInt64 = 0
            for g in 0..<s.totalRequests {
                let t = s.offset(ofRequest: g)
                #expect(isIntended(g, at: t, from: from, to: to, durationNs: d), "\(from)→\(to): g \(g) at \(t)")
                #expect(t >= previous && t < d)
                #expect(s.dueCount(atOffset: t) >= g + 1)
                if t > 0 { #expect(s.dueCount(atOffset: t - 1) <= g) }
                previous = t
            }
            #expect(s.dueCount(atOffset: d) == s.totalRequests)
        }
    }

    @Test func stageBoundariesStepsAndAZeroStageKeepTheCount() throws {
        // Up to 1000 rps in 1 s (500 requests), hold 1 s (1000), down to 0 in 1 s (500), nothing for 1 s,
        // a step to 2000 for 0.5 s (1000): 3000 in all.
        let stages = try RateSchedule.parseStages("1s:1k,1s:1k,1s:0,1s:0,0s:2k,500ms:2k")
        let s = RateSchedule(stages: stages)
        #expect(s.durationNs == 4_500_000_000)
        #expect(s.totalRequests == 3_000)
        let second: UInt64 = 1_000_000_000
        #expect(s.count(before: second) == 500)
        #expect(s.count(before: 2 * second) == 1_500)
        #expect(s.count(before: 3 * second) == 2_000)
        #expect(s.count(before: 4 * second) == 2_000)
        #expect(s.count(before: 4 * second + 1) == 2_001)
        // The first request of each stage is at its start (the integral is a whole number there).
        #expect(s.offset(ofRequest: 0) == 0)
        #expect(s.offset(ofRequest: 500) == second)
        #expect(s.offset(ofRequest: 1_500) == 2 * second)
        #expect(s.offset(ofRequest: 2_000) == 4 * second)        // after the idle second, not in it
        #expect(s.offset(ofRequest: 2_001) == 4 * second + 500_000)
        #expect(s.offset(ofRequest: 2_999) == 4 * second + 499_500_000)
        // In order throughout, and each request's due count agrees with its time.
        var previous: UInt64 = 0
        for g in 0..<s.totalRequests {
            let t = s.offset(ofRequest: g)
            #expect(t >= previous)
            #expect(s.dueCount(atOffset: t) > g && (t == 0 || s.dueCount(atOffset: t - 1) <= g), "g \(g)")
            previous = t
        }
        #expect(s.rate(atOffset: 500_000_000) == 500)
        #expect(s.rate(atOffset: 3_500_000_000) == 0)
        #expect(s.rate(atOffset: 4_100_000_000) == 2_000)
    }

    @Test func anHourLongRampDoesNotDrift() {
        // 1k → 200k rps over an hour: 361,800,000 requests. At every whole second the due count is the
        // integral exactly; sampled requests sit exactly at their crossing, the last just before the end.
        let hour: UInt64 = 3_600_000_000_000
        let s = RateSchedule.ramp(from: 1_000, to: 200_000, durationNs: hour)
        #expect(s.totalRequests == 361_800_000)
        for sec in stride(from: Int128(1), through: 3_600, by: 1) {
            // N(s) = 1000 s + 199000 s² / 7200, rounded up to whole requests.
            let numerator = 1_000 * sec * 7_200 + 199_000 * sec * sec
            let expected = (numerator + 7_199) / 7_200
            #expect(s.count(before: UInt64(sec) * 1_000_000_000) == Int64(expected), "second \(sec)")
        }
        for g: Int64 in [0, 1, 999, 1_000, 123_456_789, 200_000_000, 361_799_998, 361_799_999] {
            let t = s.offset(ofRequest: g)
            #expect(isIntended(g, at: t, from: 1_000, to: 200_000, durationNs: hour), "g \(g) at \(t)")
        }
        #expect(s.offset(ofRequest: 361_799_999) < hour)
        #expect(s.offset(ofRequest: 361_799_999) > hour - 10_000)   // 200k rps: the last is within 5 µs of the end
    }

    @Test func aPacerOnARampStripesItAcrossThreads() {
        let s = RateSchedule.ramp(from: 0, to: 3_000, durationNs: 1_000_000_000)
        let pacers = (0..<3).map { Pacer(start: 100, schedule: s, threads: 3, thread: $0) }
        for now: UInt64 in [100, 1_000_000, 300_000_000, 999_999_999, 2_000_000_000] {
            let single = s.dueCount(atOffset: now - 100)
            #expect(pacers.map { $0.dueCount(at: now) }.reduce(0, +) == single)
        }
        #expect(pacers[1].intendedTime(local: 4) == 100 + s.offset(ofRequest: 13))
    }

    @Test func parsingStagesRatesAndRateFiles() throws {
        #expect(try RateSchedule.parseRate("10k") == 10_000)
        #expect(try RateSchedule.parseRate("1.5k") == 1_500)
        #expect(try RateSchedule.parseRate("2M") == 2_000_000)
        #expect(throws: ScheduleError.self) { try RateSchedule.parseRate("1.5") }
        #expect(throws: ScheduleError.self) { try RateSchedule.parseRate("11M") }
        #expect(try RateSchedule.parseRate("600k/min") == 10_000, "the vocabulary's N/UNIT form too")
        #expect(throws: ScheduleError("'fast' is not a rate (N per second as in 500, 10k, 1.5k, 2M, or N/UNIT as in 100/s, 600000/min, 5/10s)")) {
            try RateSchedule.parseRate("fast")
        }
        let stages = try RateSchedule.parseStages("30s:10k,60s:50k,30s:0")
        #expect(stages == [.init(seconds: 30, from: 0, to: 10_000), .init(seconds: 60, from: 10_000, to: 50_000),
                           .init(seconds: 30, from: 50_000, to: 0)])
        #expect(RateSchedule(stages: stages).stagesText == "30s:10k,60s:50k,30s:0")
        for bad in ["30s", "30s:10k,", "soon:10k", "30s:fast", "0s:10k", "10s:0"] {
            #expect(throws: ScheduleError.self, "\(bad)") { try RateSchedule.parseStages(bad) }
        }
        let file = "second,rate\n# recorded\n0,1000\n1,2500.4\n3,500\n"
        let replay = try RateSchedule.parseRateFile(file, path: "curve.csv")
        #expect(replay == [.init(seconds: 1, from: 1_000, to: 1_000), .init(seconds: 2, from: 2_500, to: 2_500),
                           .init(seconds: 1, from: 500, to: 500)])
        #expect(RateSchedule(stages: replay).totalRequests == 1_000 + 5_000 + 500)
        do {
            _ = try RateSchedule.parseRateFile("0,1000\n2,10\n1,5\n", path: "curve.csv")
            Issue.record("a second that goes back was accepted")
        } catch {
            #expect(error.description.hasPrefix("curve.csv:3:"), "\(error)")
        }
    }
}

/// Execution segments: N agents, each with its stripe, together send exactly the single agent's schedule.
@Suite struct SegmentScheduleTests {
    /// Every (g, intended time) an agent's threads would send, from their plans' pacers.
    private func pairs(_ plan: DriverPlan) -> [Int64: UInt64] {
        var out: [Int64: UInt64] = [:]
        let total = plan.totalRequests
        for thread in 0..<plan.threads {
            var p = plan
            p.thread = thread
            let pacer = p.pacer(start: 1_000)!
            for k in 0..<p.localShare(of: total) {
                let g = pacer.global(local: k)
                #expect(out[g] == nil, "g \(g) twice")
                out[g] = pacer.intendedTime(local: k)
            }
        }
        return out
    }

    @Test func theUnionOfTheSegmentsIsTheSingleAgentSchedule() {
        let ramp = RateSchedule(stages: [.init(seconds: 0.3, from: 0, to: 2_000), .init(seconds: 0.2, from: 2_000, to: 700)])
        let plans: [DriverPlan] = [
            DriverPlan(rate: 1_000, warmupNs: 100_000_000, durationNs: 400_000_000, capacity: 1),
            DriverPlan(rate: 3, warmupNs: 0, durationNs: 5_000_000_000, capacity: 1),
            DriverPlan(rate: 123_457, warmupNs: 10_000_000, durationNs: 20_000_000, capacity: 1),
            DriverPlan(rate: nil, warmupNs: 50_000_000, capacity: 1, schedule: ramp),
            DriverPlan(rate: 7_000, threads: 2, warmupNs: 0, durationNs: 100_000_000, requests: 333, capacity: 1),
        ]
        for base in plans {
            let single = pairs(base)
            #expect(single.count == Int(base.totalRequests))
            for n in 1...7 {
                var union: [Int64: UInt64] = [:]
                for i in 0..<n {
                    var agent = base
                    agent.segment = i
                    agent.segments = n
                    for (g, t) in pairs(agent) {
                        #expect(g % Int64(n) == Int64(i), "agent \(i)/\(n) sent g \(g)")
                        #expect(union[g] == nil, "g \(g) in two segments")
                        union[g] = t
                    }
                }
                #expect(union == single, "\(n) agents")
            }
        }
    }

    @Test func requestsSplitExactlyAcrossAgentsAndThreads() {
        for n in 1...7 {
            for requests in [1, 2, 7, 100, 1_001] {
                var measured: Int64 = 0, warm: Int64 = 0
                for i in 0..<n {
                    for thread in 0..<3 {
                        let p = DriverPlan(rate: 5_000, threads: 3, thread: thread, warmupNs: 1_000_000, requests: requests,
                                           capacity: 1, segment: i, segments: n)
                        measured += p.localShare(of: p.totalRequests) - p.localShare(of: p.warmupRequests)
                        warm += p.localShare(of: p.warmupRequests)
                    }
                }
                #expect(measured == Int64(requests), "\(n) agents, \(requests) requests")
                #expect(warm == 5)
            }
        }
    }

    @Test func eachAgentsDriverSendsItsStripeAtTheGlobalTimes() {
        // The driver itself, stepped through its own wake-ups on a fake clock, answering at once.
        func run(segment: Int, of n: Int) -> [(Int64, UInt64)] {
            let clock = ManualClock(1_000_000_000)
            let plan = DriverPlan(rate: 2_500, warmupNs: 20_000_000, durationNs: 100_000_000, capacity: 4, segment: segment, segments: n)
            let core = DriverCore(plan: plan, clock: clock, recorder: Recorder())
            let port = FakePort(streams: 4)
            core.attach(port)
            let t0 = clock.time
            core.begin(at: t0)
            var next = core.pump()
            while let due = next {
                clock.time = due
                next = core.pump()
                while !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
            }
            #expect(core.recorder.measured.sent + core.recorder.warmup.sent == port.started.count)
            return zip(port.started, port.sentAt.map { $0 - t0 }).map { ($0, $1) }
        }
        let single = run(segment: 0, of: 1)
        #expect(single.count == 300)
        for n in [2, 3, 7] {
            let union = (0..<n).flatMap { run(segment: $0, of: n) }.sorted { $0.0 < $1.0 }
            #expect(union.map(\.0) == single.map(\.0))
            #expect(union.map(\.1) == single.map(\.1))
        }
    }

    @Test func eachRequestCarriesTheSameValuesWhicheverSegmentSendsIt() throws {
        // The token, {{seq}}, {{badge}}, {{message_id}} (apns-id) and {{uuid}} of every request the drivers of
        // 3 agents start, rendered as the connection pools do from the global index the driver hands them,
        // against one agent alone: request for request the same bytes.
        let template = try PayloadTemplate(bytes: Array(#"{"aps":{"alert":"n {{seq}}","badge":{{badge}}},"t":"{{token}}","id":"{{message_id}}","u":"{{uuid}}"}"#.utf8))
        var config = LoadConfiguration(host: "127.0.0.1", port: 1, template: template, tokens: DeviceTokens(synthetic: 7))
        config.seed = 42
        let encoder = makePayloadEncoder(.zerocopy, template: template)
        func run(segment: Int, of n: Int) -> [Int64: [UInt8]] {
            let clock = ManualClock(1_000_000_000)
            let plan = DriverPlan(rate: 2_500, warmupNs: 20_000_000, durationNs: 100_000_000, capacity: 4, segment: segment, segments: n)
            let core = DriverCore(plan: plan, clock: clock, recorder: Recorder())
            let port = FakePort(streams: 4)
            core.attach(port)
            core.begin(at: clock.time)
            var next = core.pump()
            while let due = next {
                clock.time = due
                next = core.pump()
                while !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
            }
            var agent = config
            agent.segment = segment
            agent.segments = n
            var out: [Int64: [UInt8]] = [:]
            var slot = [UInt8](repeating: 0, count: 1024)
            for g in port.started {
                let ctx = agent.requestContext(sequence: g, tokenIndex: agent.tokenIndex(sequence: g))
                let length = slot.withUnsafeMutableBytes { encoder.encode(ctx, into: $0) } ?? 0
                out[g] = Array(slot[..<length]) + Array(ctx.messageID.description.utf8)
            }
            return out
        }
        let single = run(segment: 0, of: 1)
        #expect(single.count == 300)
        #expect(Set(single.values).count == 300, "every request differs from the others")
        var union: [Int64: [UInt8]] = [:]
        for i in 0..<3 {
            for (g, bytes) in run(segment: i, of: 3) {
                #expect(g % 3 == Int64(i))
                union[g] = bytes
            }
        }
        #expect(union == single)
        // What request 8 carries: token 8 mod 7, badge 8 mod 99 + 1, the id of (seed 42, g 8).
        let eight = try #require(String(bytes: single[8] ?? [], encoding: .utf8))
        let token = config.tokens.withToken(1) { String(decoding: $0, as: UTF8.self) }
        for part in [#"{"aps":{"alert":"n 8","badge":9}"#, #""t":"\#(token)""#, #""id":"\#(PushRandom.uuid(seed: 42, index: 8))""#] {
            #expect(eight.contains(part), "\(eight)")
        }
    }
}
