import Testing
@testable import LoadGenerator

/// The capacity search's decisions, driven by made-up targets instead of runs: where it ends and why.
@Suite struct CapacitySearchTests {
    static let p99Under5ms = CapacityObjective(metric: .latency(percentile: 99), limit: 5_000, description: "p99<5ms")

    /// A step at `rate` against a target whose p99 is `p99(rate)` µs, failing `errors(rate)` of requests.
    static func step(_ rate: Int, p99: Int64, errors: Double = 0, sender: String? = nil) -> CapacityStep {
        CapacityStep(rate: rate, achievedRPS: Double(rate), p50: p99 / 4, p99: p99, p999: p99 * 2,
                     latencyAt: [99: p99], errorRate: errors, senderLimit: sender)
    }

    /// Runs a search to its end against `target`; returns the answer and the rates it tried.
    static func run(_ search: inout CapacitySearch, _ target: (Int) -> CapacityStep) -> (CapacitySearch.Answer, [Int]) {
        var tried: [Int] = []
        while let rate = search.nextRate {
            tried.append(rate)
            search.record(target(rate))
        }
        return (search.answer!, tried)
    }

    /// A target whose p99 stays at 1 ms until `knee`, then climbs steeply.
    static func kneeAt(_ knee: Int) -> (Int) -> CapacityStep {
        { rate in step(rate, p99: rate <= knee ? 1_000 : 1_000 + Int64(rate - knee) * 10) }
    }

    /// A target that answers at most 37,600 rps, with a p99 that stays under a loose objective: the steps
    /// above what it takes fall short of their rate, and those are not held, whatever the latency.
    @Test func aRateTheTargetDidNotTakeIsNotHeldUnderALooseObjective() {
        let loose = CapacityObjective(metric: .latency(percentile: 99), limit: 1_000_000, description: "p99<1s")
        var search = CapacitySearch(min: 10_000, max: 100_000, resolution: 0.02, objectives: [loose])
        let (answer, tried) = Self.run(&search) { rate in
            var s = Self.step(rate, p99: rate <= 37_600 ? 900 : 560_000)
            if rate > 37_600 {
                s.achievedRPS = 37_600
                s.rateNotKept = "the target answered 37,600 rps"
            }
            return s
        }
        let rate = try! #require(answer.rate)
        #expect(rate <= 37_600 && Double(37_600 - rate) <= 0.02 * 37_600, "\(rate) after \(tried)")
        guard case .rate(let why) = answer.limit else { Issue.record("\(answer.limit)"); return }
        #expect(why.hasSuffix("rps was not kept: the target answered 37,600 rps"), "\(why)")
        #expect(CapacitySearch.sentence(answer, objectives: search.objectives, min: 10_000, max: 100_000)
            .contains("stopped by the target's throughput"))
        #expect(CapacityVerdict.rate("x").name == "rate")
    }

    /// At low rates a driver thread wakes once per request, which keeps it busy most of the time
    /// without falling behind: a step that met every objective with its sender busy held (the sender's
    /// delay is inside the latency it met), and only a step that missed one is the sender's.
    @Test func aBusySenderThatMetTheObjectivesHeld() {
        var search = CapacitySearch(min: 10_000, max: 1_000_000, resolution: 0.02, objectives: [Self.p99Under5ms])
        let (answer, tried) = Self.run(&search) { rate in
            // Busy at every rate; the objective holds up to 60k, beyond that the p99 is the sender's.
            Self.step(rate, p99: rate <= 60_000 ? 900 : 9_000, sender: "its driver thread was busy 91% of the time")
        }
        let rate = try! #require(answer.rate)
        #expect(rate >= 58_800 && rate <= 60_000, "\(rate) after \(tried)")
        guard case .sender(let why) = answer.limit else { Issue.record("\(answer.limit)"); return }
        #expect(why.contains("busy 91%"))
        #expect(search.verdict(Self.step(17_187, p99: 545, sender: "its driver thread was busy 91% of the time")) == .held)
        var notKept = Self.step(20_000, p99: 545)
        notKept.rateNotKept = "it sent 18,000 rps with streams free"
        notKept.rateNotKeptBySender = true
        #expect(search.verdict(notKept).name == "sender", "a rate the sender did not send fails whatever the latency")
    }

    /// Host steal spoils a step's p99 without saying anything about the target: such a step is run again
    /// and the search goes on from the rerun; a miss that persists on every try counts as the
    /// objective's, with the steal named (the target may be slow as well).
    @Test func aStepSpoiledByHostStealIsRunAgain() {
        let steal = "the host stole 230 ms of CPU time in 7.0 s"
        // The target holds p99 < 5 ms up to 137,500; the first try of 64,000 lost time to the host.
        var search = CapacitySearch(min: 1_000, max: 1_000_000, resolution: 0.02, objectives: [Self.p99Under5ms])
        var noisy = 1
        let (answer, tried) = Self.run(&search) { rate in
            var s = Self.kneeAt(137_500)(rate)
            if rate == 64_000 && noisy > 0 {
                noisy -= 1
                s = Self.step(rate, p99: 9_000)
                s.machineLimit = steal
            }
            return s
        }
        #expect(tried.filter { $0 == 64_000 }.count == 2, "\(tried)")
        #expect(tried.contains(128_000), "the rerun held, so the probe went on up")
        let rate = try! #require(answer.rate)
        #expect(rate < 137_900 && Double(137_900 - rate) <= 0.02 * Double(rate))
        guard case .objective = answer.limit else { Issue.record("\(answer.limit)"); return }
        #expect(search.steps.contains { $0.verdict.name == "machine" && $0.verdict.why.hasSuffix(steal) })

        // Steal on a step that met the objective, or with no objective missed: it held.
        var quiet = Self.step(50_000, p99: 900)
        quiet.machineLimit = steal
        #expect(search.verdict(quiet) == .held)
        // Errors are not the host's doing.
        var failing = Self.step(50_000, p99: 900, errors: 0.5)
        failing.machineLimit = steal
        #expect(search.verdict(failing).name == "errors")

        // A machine noisy at every try of 20,000: two reruns, then the miss counts, the steal named.
        var always = CapacitySearch(min: 10_000, max: 1_000_000, resolution: 0.02, objectives: [Self.p99Under5ms])
        let (noisyAnswer, noisyTried) = Self.run(&always) { rate in
            var s = Self.step(rate, p99: rate >= 20_000 ? 9_000 : 900)
            if rate >= 20_000 { s.machineLimit = steal }
            return s
        }
        #expect(noisyTried.prefix(4) == [10_000, 20_000, 20_000, 20_000], "\(noisyTried)")
        #expect(always.steps.prefix(4).map(\.verdict.name) == ["held", "machine", "machine", "objective"])
        guard case .objective(let why) = noisyAnswer.limit else { Issue.record("\(noisyAnswer.limit)"); return }
        #expect(why.contains("p99<5ms did not hold") && why.hasSuffix(steal))
        #expect(noisyAnswer.rate.map { $0 >= 10_000 && $0 < 20_000 } == true, "\(String(describing: noisyAnswer.rate))")
    }

    /// A latency miss above a rate that held is run again before it bounds the search: one stall at a
    /// rate the target takes does not lower the answer; a miss that repeats counts; a miss at the lowest
    /// rate (nothing held below it) is not rerun.
    @Test func aLatencyMissAboveAHeldRateIsRunAgainBeforeItCounts() {
        var search = CapacitySearch(min: 1_000, max: 1_000_000, resolution: 0.02, objectives: [Self.p99Under5ms])
        var stalls = 1
        let (answer, tried) = Self.run(&search) { rate in
            if rate == 64_000 && stalls > 0 {
                stalls -= 1
                return Self.step(rate, p99: 9_000)   // one stall at a rate the target takes
            }
            return Self.kneeAt(137_500)(rate)
        }
        #expect(tried.filter { $0 == 64_000 }.count == 2, "\(tried)")
        #expect(tried.contains(128_000), "the rerun held, so the probe went on up: \(tried)")
        let rate = try! #require(answer.rate)
        #expect(rate < 137_900 && Double(137_900 - rate) <= 0.02 * Double(rate), "\(rate) after \(tried)")
        // Every failing rate above the answer was tried twice before it counted.
        for failing in Set(search.steps.filter { $0.verdict.name == "objective" }.map(\.step.rate)) {
            #expect(tried.filter { $0 == failing }.count >= 2, "\(failing) in \(tried)")
        }

        // Nothing holds: the lowest rate's miss is not rerun.
        var slow = CapacitySearch(min: 1_000, max: 8_000, resolution: 0.02, objectives: [Self.p99Under5ms])
        let (none, slowTried) = Self.run(&slow) { Self.step($0, p99: 9_000) }
        #expect(none.rate == nil)
        #expect(slowTried == [1_000])
    }

    @Test func hostStealOfOnePercentOfAStepMarksIt() {
        #expect(CapacityStep.machineLimit(stealSeconds: 0.05, elapsedSeconds: 7) == nil)
        #expect(CapacityStep.machineLimit(stealSeconds: 0.069, elapsedSeconds: 7) == nil)
        #expect(CapacityStep.machineLimit(stealSeconds: 0.07, elapsedSeconds: 7) == "the host stole 70 ms of CPU time in 7.0 s")
        #expect(CapacityStep.machineLimit(stealSeconds: 0.42, elapsedSeconds: 7) != nil)
        #expect(CapacityStep.machineLimit(stealSeconds: 1, elapsedSeconds: 0) == nil)
        // A short step: one or a few 10 ms ticks of steal are not enough, 50 ms is.
        #expect(CapacityStep.machineLimit(stealSeconds: 0.04, elapsedSeconds: 0.3) == nil)
        #expect(CapacityStep.machineLimit(stealSeconds: 0.05, elapsedSeconds: 0.3) != nil)
    }

    @Test func aMonotoneCurveEndsWithinTheResolutionBelowItsKnee() {
        // p99 crosses 5 ms at 137,900 rps: 137,500 + 400 × 10 µs.
        var search = CapacitySearch(min: 1_000, max: 1_000_000, resolution: 0.02, objectives: [Self.p99Under5ms])
        let (answer, tried) = Self.run(&search, Self.kneeAt(137_500))
        let rate = try! #require(answer.rate)
        #expect(rate < 137_900 && Double(137_900 - rate) <= 0.02 * Double(rate), "\(rate)")
        #expect(Array(tried.prefix(9)) == [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000], "doubling up")
        #expect(tried.last == rate, "the answer is rerun to confirm it")
        #expect(answer.limitRate! > rate && Double(answer.limitRate! - rate) <= 0.02 * Double(rate))
        guard case .objective(let why) = answer.limit else { Issue.record("\(answer.limit)"); return }
        #expect(why.hasPrefix("p99<5ms did not hold at "))
        // 9 doublings, ~9 halvings, the confirming rerun, and each miss above a held rate run twice.
        #expect(tried.count <= 26, "\(tried)")
        let line = CapacitySearch.sentence(answer, objectives: search.objectives, min: 1_000, max: 1_000_000)
        #expect(line.hasPrefix("capacity: \(CapacitySearch.grouped(rate)) rps with p99<5ms, error_rate<1%; stopped by the objective: "))
    }

    @Test func aNoisyCurveIsNotTakenOnOneLuckyStep() {
        // Near the knee the target sometimes passes a rate it cannot hold: 150k held once, then failed.
        var seen: [Int: Int] = [:]
        let target: (Int) -> CapacityStep = { rate in
            seen[rate, default: 0] += 1
            if rate >= 150_000 && rate < 160_000 && seen[rate] == 1 { return Self.step(rate, p99: 1_000) }   // lucky once
            return Self.kneeAt(140_000)(rate)
        }
        var search = CapacitySearch(min: 10_000, max: 1_000_000, resolution: 0.02, objectives: [Self.p99Under5ms])
        let (answer, tried) = Self.run(&search, target)
        let rate = try! #require(answer.rate)
        #expect(rate <= 140_400 && rate >= 140_400 - 3_000, "\(rate) after \(tried)")
        // Every rate it answers with held in its last two samples.
        let last = search.steps.filter { $0.step.rate == rate }.suffix(2)
        #expect(last.count == 2 && last.allSatisfy { $0.verdict == .held })
    }

    @Test func anObjectiveThatNeverHoldsEndsAtTheFirstStep() {
        var search = CapacitySearch(min: 1_000, max: 1_000_000, objectives: [Self.p99Under5ms])
        let (answer, tried) = Self.run(&search) { Self.step($0, p99: 9_000) }
        #expect(tried == [1_000])
        #expect(answer.rate == nil)
        #expect(answer.limitRate == 1_000)
        #expect(CapacitySearch.sentence(answer, objectives: search.objectives, min: 1_000, max: 1_000_000)
                == "capacity: below --min 1,000 rps: p99<5ms did not hold at 1,000 rps: p99 was 9 ms")
    }

    @Test func anObjectiveThatAlwaysHoldsEndsAtMax() {
        var search = CapacitySearch(min: 1_000, max: 50_000, objectives: [Self.p99Under5ms])
        let (answer, tried) = Self.run(&search) { Self.step($0, p99: 500) }
        #expect(tried == [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 50_000])
        #expect(answer.rate == 50_000 && answer.limit == .held && answer.limitRate == nil)
        #expect(CapacitySearch.sentence(answer, objectives: search.objectives, min: 1_000, max: 50_000).contains("--max 50,000 rps held"))
    }

    @Test func errorsStopItWhenLatencyWouldNot() {
        // Fast answers, but above 30k the target refuses 5% of requests: the default 1% error objective.
        var search = CapacitySearch(min: 1_000, max: 1_000_000, objectives: [Self.p99Under5ms])
        let (answer, _) = Self.run(&search) { Self.step($0, p99: 800, errors: $0 > 30_000 ? 0.05 : 0) }
        #expect(answer.rate! <= 30_000 && answer.rate! >= 29_400)
        guard case .errors(let why) = answer.limit else { Issue.record("\(answer.limit)"); return }
        #expect(why.contains("error_rate<1% did not hold") && why.contains("5% of requests failed"), "\(why)")
        // An error objective of the user's own replaces the default.
        let lenient = CapacityObjective(metric: .errorRate, limit: 0.1, description: "error_rate<10%")
        var tolerant = CapacitySearch(min: 1_000, max: 64_000, objectives: [Self.p99Under5ms, lenient])
        #expect(Self.run(&tolerant) { Self.step($0, p99: 800, errors: $0 > 30_000 ? 0.05 : 0) }.0.rate == 64_000)
    }

    @Test func aSenderThatFallsBehindIsNeverTheTargetsCapacity() {
        // The target would hold 500k; the sender cannot send more than 90k.
        var search = CapacitySearch(min: 10_000, max: 1_000_000, objectives: [Self.p99Under5ms])
        let (answer, _) = Self.run(&search) { rate in
            rate > 90_000 ? Self.step(rate, p99: 30_000, sender: "its driver thread was busy 98% of the time") : Self.step(rate, p99: 900)
        }
        #expect(answer.rate! <= 90_000 && answer.rate! >= 88_000)
        guard case .sender = answer.limit else { Issue.record("\(answer.limit)"); return }
        let line = CapacitySearch.sentence(answer, objectives: search.objectives, min: 10_000, max: 1_000_000)
        #expect(line.contains("stopped by the sender, not the target"), "\(line)")
        #expect(line.contains("the target's capacity was not reached"))
    }

    @Test func theSendersOwnFiguresSayWhenItFellBehind() {
        #expect(CapacityStep.senderLimit(rate: 100_000, threads: 1, cpuSeconds: 11.4, elapsedSeconds: 12,
                                         maxBacklog: 10, blocked: 0) == "its driver thread was busy 95% of the time")
        // 10 ms of the rate waiting with streams free: the sender's lag, not the target's.
        #expect(CapacityStep.senderLimit(rate: 100_000, threads: 1, cpuSeconds: 6, elapsedSeconds: 12,
                                         maxBacklog: 1_200, blocked: 0) == "up to 1,200 due requests waited with streams free")
        // The same backlog while requests found every stream busy: the target held them.
        #expect(CapacityStep.senderLimit(rate: 100_000, threads: 1, cpuSeconds: 6, elapsedSeconds: 12,
                                         maxBacklog: 1_200, blocked: 35) == nil)
        #expect(CapacityStep.senderLimit(rate: 100_000, threads: 2, cpuSeconds: 6, elapsedSeconds: 12,
                                         maxBacklog: 40, blocked: 0) == nil)
    }
}
