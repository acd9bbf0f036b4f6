import Testing
import PushPayload
@testable import LoadGenerator

@Suite struct PacerTests {
    @Test func automaticQuantumWakesOncePerFiveRequestsAboveTwentyThousandAtLeast100Microseconds() {
        var c = LoadConfiguration(host: "127.0.0.1", port: 1, template: .defaultAPNs(), tokens: DeviceTokens(synthetic: 1))
        #expect(c.effectiveQuantumNs(perThreadRate: 20_000) == 0)
        #expect(c.effectiveQuantumNs(perThreadRate: 50_000) == 100_000)
        #expect(c.effectiveQuantumNs(perThreadRate: 40_000) == 125_000)
        #expect(c.effectiveQuantumNs(perThreadRate: 100_000) == 100_000)
        #expect(c.effectiveQuantumNs(perThreadRate: 25_000) == 200_000)
        #expect(c.effectiveQuantumNs(perThreadRate: 1_000_000) == 100_000)
        c.pacingQuantumNs = 0
        #expect(c.effectiveQuantumNs(perThreadRate: 50_000) == 0)
        c.pacingQuantumNs = 30_000
        #expect(c.effectiveQuantumNs(perThreadRate: 50_000) == 30_000)
    }

    @Test func intendedTimesAreExactAndDoNotDrift() {
        let t0: UInt64 = 5_000_000_000
        let p = Pacer(start: t0, rate: 50_000)
        #expect(p.intendedTime(local: 0) == t0)
        #expect(p.intendedTime(local: 1) == t0 + 20_000)
        #expect(p.intendedTime(local: 50_000) == t0 + 1_000_000_000)
        // 3 rps: the interval is not a whole number of ns, yet every third request lands on the second.
        let q = Pacer(start: t0, rate: 3)
        #expect(q.intendedTime(local: 1) == t0 + 333_333_333)
        #expect(q.intendedTime(local: 2) == t0 + 666_666_666)
        #expect(q.intendedTime(local: 3_000_000) == t0 + 1_000_000 * 1_000_000_000)
        // Far into a long run at a high rate: no overflow, still exact.
        let r = Pacer(start: 0, rate: 10_000_000)
        #expect(r.intendedTime(local: 36_000_000_000) == 3_600_000_000_000)
    }

    @Test func dueCountMatchesIntendedTimes() {
        for rate in [1, 3, 7, 999, 50_000, 123_457] {
            let p = Pacer(start: 1_000, rate: rate)
            #expect(p.dueCount(at: 999) == 0)
            #expect(p.dueCount(at: 1_000) == 1)
            for k: Int64 in [1, 2, 3, 10, 997, 50_001, 1_000_003] {
                let t = p.intendedTime(local: k)
                #expect(p.dueCount(at: t) == k + 1, "rate \(rate) k \(k)")
                if t > p.intendedTime(local: k - 1) {
                    #expect(p.dueCount(at: t - 1) == k, "rate \(rate) k \(k)")
                }
            }
        }
    }

    @Test func threadsInterleaveOnOneSchedule() {
        let a = Pacer(start: 0, rate: 1_000, threads: 2, thread: 0)
        let b = Pacer(start: 0, rate: 1_000, threads: 2, thread: 1)
        #expect(a.intendedTime(local: 0) == 0)
        #expect(b.intendedTime(local: 0) == 1_000_000)
        #expect(a.intendedTime(local: 1) == 2_000_000)
        #expect(b.intendedTime(local: 1) == 3_000_000)
        // Together they send exactly what one thread at the full rate would.
        for now: UInt64 in [0, 999_999, 1_000_000, 2_500_000, 999_999_999, 1_000_000_000] {
            #expect(a.dueCount(at: now) + b.dueCount(at: now) == Pacer(start: 0, rate: 1_000).dueCount(at: now))
        }
    }

    @Test func planSharesAndPhases() {
        let plan = DriverPlan(rate: 1_000, threads: 3, thread: 2, warmupNs: 500_000_000, durationNs: 2_000_000_000, capacity: 1)
        #expect(plan.warmupRequests == 500)
        #expect(plan.totalRequests == 2_500)
        let shares = (0..<3).map { DriverPlan(rate: 1_000, threads: 3, thread: $0, capacity: 1).localShare(of: 2_500) }
        #expect(shares.reduce(0, +) == 2_500)
        #expect(shares == [834, 833, 833])
    }
}
