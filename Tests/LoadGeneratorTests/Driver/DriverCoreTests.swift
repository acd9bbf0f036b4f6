import Testing
@testable import PushMetrics
@testable import LoadGenerator

@Suite struct DriverCoreTests {
    private func make(rate: Int?, streams: Int, warmupMs: UInt64 = 0, durationMs: UInt64 = 1_000, retries: Int = 0,
                      requests: Int? = nil, drainMs: UInt64 = 5_000) -> (DriverCore, FakePort, ManualClock) {
        let clock = ManualClock(1_000_000_000)
        let plan = DriverPlan(rate: rate, warmupNs: warmupMs * 1_000_000, durationNs: durationMs * 1_000_000,
                              requests: requests, retries: retries, drainTimeoutNs: drainMs * 1_000_000, capacity: streams)
        let core = DriverCore(plan: plan, clock: clock, recorder: Recorder())
        let port = FakePort(streams: streams)
        core.attach(port)
        return (core, port, clock)
    }

    @Test func aClosedLoopSendsNothingBeforeT0SoNoWarmUpIsCountedWithoutOne() {
        // The threads learn t0 ahead of it. Without a warm-up, the first batch must not go out early and
        // be counted as one: `--rps max --warmup 0s` warms up nothing, `--requests N` sends exactly N.
        let (core, port, clock) = make(rate: nil, streams: 8, requests: 20)
        core.begin(at: clock.time + 2_000_000)
        #expect(core.pump() == nil)
        #expect(port.started.isEmpty)
        clock.advance(2_000_000)
        core.pump()
        while core.tick() != .finish {
            while !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
            core.pump()
            clock.advance(100_000)
        }
        core.finish()
        #expect(core.recorder.warmup.sent == 0)
        #expect(core.recorder.measured.sent == 20 && core.recorder.measured.completed == 20)
    }

    @Test func sendsOnScheduleAndArmsTheNextIntendedTime() {
        let (core, port, clock) = make(rate: 1_000, streams: 10)
        let t0 = clock.time
        core.begin(at: t0)
        #expect(core.pump() == t0 + 1_000_000)
        #expect(port.started == [0])
        clock.advance(2_500_000)   // requests 1 and 2 became due
        #expect(core.pump() == t0 + 3_000_000)
        #expect(port.started == [0, 1, 2])
    }

    @Test func aBatchSharesOneSendTimeAndAResponseIsTimedWhenItWasRead() {
        let (core, port, clock) = make(rate: 1_000, streams: 10)
        let t0 = clock.time
        core.begin(at: t0)
        core.pump()
        clock.advance(3_200_000)            // requests 1, 2, 3 are due: one batch
        core.pump()
        #expect(port.started == [0, 1, 2, 3])
        #expect(port.sentAt == [t0, t0 + 3_200_000, t0 + 3_200_000, t0 + 3_200_000])
        // Request 1 (intended t0 + 1 ms) was read at t0 + 4 ms; the core runs later, at t0 + 9 ms.
        _ = port.takeOldest()
        clock.advance(5_800_000)
        core.responded(slot: port.takeOldest(), status: 200, reason: 0, at: t0 + 4_000_000)
        let h = core.recorder.latency, s = core.recorder.serviceTime
        #expect(h.totalCount == 1 && h.max == h.highestEquivalentValue(3_000))   // 4 ms - 1 ms
        #expect(s.totalCount == 1 && s.max == s.highestEquivalentValue(800))     // 4 ms - 3.2 ms
    }

    @Test func aResponseStampedBeforeItsSendCountsAsZeroNotAWrappedValue() {
        let (core, port, clock) = make(rate: 1_000, streams: 10)
        core.begin(at: clock.time)
        core.pump()
        core.responded(slot: port.takeOldest(), status: 200, reason: 0, at: clock.time - 5)
        #expect(core.recorder.latency.totalCount == 1 && core.recorder.latency.max == 0)
        #expect(core.recorder.serviceTime.max == 0)
    }

    @Test func stalledStreamsBuildABacklogAndLatencyCountsFromTheIntendedTime() {
        // One stream, 1000 rps; the first response takes 10 ms (a stall), the next ones 100 µs.
        let (core, port, clock) = make(rate: 1_000, streams: 1, durationMs: 20)
        let t0 = clock.time
        core.begin(at: t0)
        core.pump()
        clock.advance(10_000_000)
        core.pump()
        #expect(core.backlog == 10)           // requests 1...10 are due, none could go
        #expect(core.stats.maxBacklog == 10)
        core.responded(slot: port.takeOldest(), status: 200, reason: 0)
        core.pump()                           // request 1 goes out at 10 ms, intended at 1 ms
        #expect(port.started == [0, 1])
        clock.advance(100_000)
        core.responded(slot: port.takeOldest(), status: 200, reason: 0)
        let h = core.recorder.latency
        let s = core.recorder.serviceTime
        #expect(h.totalCount == 2)
        #expect(h.max == h.highestEquivalentValue(10_000))          // request 0: 10 ms
        #expect(h.min == h.lowestEquivalentValue(9_100))            // request 1: 10.1 ms - 1 ms
        #expect(s.min == s.lowestEquivalentValue(100))              // ... but only 100 µs of service
        #expect(s.max == s.highestEquivalentValue(10_000))
        // Drain the rest; every due request is sent exactly once and answered.
        while core.tick() != .finish {
            clock.advance(100_000)
            core.pump()
            if !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
        }
        core.finish()
        #expect(port.started == Array(0..<20))
        let m = core.recorder.measured
        #expect(m.sent == 20 && m.completed == 20 && m.succeeded == 20)
        #expect(m.check())
        // Backlogged requests were charged for their wait: p99 is the stall, not the 100 µs service time.
        #expect(h.valueAtPercentile(99) >= 9_000)
        #expect(s.valueAtPercentile(50) <= 200)
    }

    @Test func closedLoopKeepsEveryStreamBusy() {
        let (core, port, clock) = make(rate: nil, streams: 4, durationMs: 10)
        core.begin(at: clock.time)
        #expect(core.pump() == nil)
        #expect(port.inFlight.count == 4)
        clock.advance(50_000)
        core.responded(slot: port.takeOldest(), status: 200, reason: 0)
        core.pump()
        #expect(port.inFlight.count == 4)
        #expect(port.started == [0, 1, 2, 3, 4])
        clock.advance(20_000_000)
        #expect(core.tick() != .finish)          // schedule over, 4 still in flight
        core.pump()
        #expect(port.started.count == 5)
        while !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
        #expect(core.tick() == .finish)
        core.finish()
        #expect(core.recorder.measured.sent == 5 && core.recorder.measured.check())
        // Closed loop has no schedule to be late for: latency equals service time.
        #expect(core.recorder.latency.max == core.recorder.serviceTime.max)
    }

    @Test func accountingHoldsWithFailuresRetriesOversizeAndInterruption() {
        let (core, port, clock) = make(rate: 10_000, streams: 8, warmupMs: 2, durationMs: 10, retries: 1)
        port.oversize = [5, 17]
        core.begin(at: clock.time)
        var step = 0
        let t0 = clock.time
        while core.tick() != .finish && step < 153 {
            step += 1
            clock.advance(37_000)
            core.pump()
            if step >= 150 { continue }   // interrupted: whatever is in flight now stays unanswered
            // Answer a few, fail some (connection cut), leave others hanging.
            if step % 3 == 0, !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
            if step % 5 == 0, !port.inFlight.isEmpty {
                core.responded(slot: port.takeOldest(), status: 410, reason: Reasons.index(of: "Unregistered"))
            }
            if step % 7 == 0, !port.inFlight.isEmpty { core.failed(slot: port.takeOldest(), cause: .connectionLost) }
            if step == 149 { core.stop() }
        }
        core.finish()
        let w = core.recorder.warmup, m = core.recorder.measured
        #expect(w.check() && m.check())
        // Interrupted at step 150 of 37 µs: everything due by then was sent, skipped as oversize, or is counted
        // as not sent; nothing vanished.
        let due = Int((clock.time - t0) / 100_000) + 1
        #expect(w.sent + m.sent + w.notSent + m.notSent + w.oversizeNotSent + m.oversizeNotSent == due)
        #expect(m.notSent > 0)
        #expect(w.oversizeNotSent + m.oversizeNotSent == 2)
        #expect(w.byReason[Reasons.payloadTooLarge] + m.byReason[Reasons.payloadTooLarge] == 2)
        #expect(m.byStatus[410] > 0 && m.byReason[Reasons.index(of: "Unregistered")] == m.byStatus[410])
        #expect(m.retries > 0)
        #expect(w.unfinished + m.unfinished > 0)
        #expect(w.sent > 0)
        #expect(core.recorder.latency.totalCount == Int64(m.completed))
    }

    @Test func retryKeepsTheIntendedTime() {
        let (core, port, clock) = make(rate: 1_000, streams: 2, durationMs: 1, retries: 2)
        let t0 = clock.time
        core.begin(at: t0)
        core.pump()
        clock.advance(5_000_000)
        core.failed(slot: port.takeOldest(), cause: .connectionLost)
        core.pump()
        #expect(port.started == [0, 0])
        clock.advance(1_000_000)
        core.responded(slot: port.takeOldest(), status: 200, reason: 0)
        #expect(core.recorder.latency.max == core.recorder.latency.highestEquivalentValue(6_000))
        #expect(core.recorder.measured.retries == 1 && core.recorder.measured.sent == 1)
    }

    // MARK: Resends and refusals

    @Test func aResendAnsweredOversizeEndsAsTheFailureThatCutItOffAndHoldsNoSlot() {
        let (core, port, clock) = make(rate: 1_000, streams: 2, durationMs: 1, retries: 1)
        core.begin(at: clock.time)
        core.pump()
        #expect(port.started == [0])
        // Pruning moved the resend to a longer token: its payload is now over the limit.
        port.oversize = [0]
        core.failed(slot: port.takeOldest(), cause: .connectionLost)
        core.pump()
        let m = core.recorder.measured
        #expect(core.inFlight == 0)
        #expect(m.retries == 0, "no resend went out")
        #expect(m.transportErrors == 1 && m.transportErrorsByCause[TransportErrorCause.connectionLost.rawValue] == 1)
        #expect(m.oversizeNotSent == 0)
        // Nothing is left to wait for: the run ends at once instead of at the drain deadline.
        clock.advance(1_000_000)
        #expect(core.tick() == .finish)
        core.finish()
        #expect(core.recorder.measured.unfinished == 0 && core.recorder.measured.check())
    }

    @Test func aRefusedSubmissionIsATransportErrorByCauseAndTheScheduleGoesOn() {
        let (core, port, clock) = make(rate: 1_000, streams: 4, durationMs: 5, retries: 2)
        port.refused = [2: .submitFailed, 3: .encodeFailed]
        core.begin(at: clock.time)
        clock.advance(4_000_000)
        core.pump()
        // Not back-pressure: the requests after the refused ones went out in the same pump.
        #expect(port.started == [0, 1, 4])
        let m = core.recorder.measured
        #expect(m.sent == 5 && m.transportErrors == 2 && m.retries == 0)
        #expect(m.transportErrorsByCause[TransportErrorCause.submitFailed.rawValue] == 1)
        #expect(m.transportErrorsByCause[TransportErrorCause.encodeFailed.rawValue] == 1)
        #expect(m.transportErrorCauseCounts == ["submit_failed": 1, "encode_failed": 1])
        while !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
        #expect(core.tick() == .finish)
        core.finish()
        #expect(core.recorder.measured.check())
    }

    /// `--retry` resends what the server cannot have acted on (refused, above a GOAWAY, connection lost)
    /// and never a stream reset otherwise: INTERNAL_ERROR may follow a delivered push.
    @Test func onlyRequestsTheServerDidNotActOnAreResent() {
        let (core, port, clock) = make(rate: 1_000, streams: 8, durationMs: 5, retries: 3)
        core.begin(at: clock.time)
        clock.advance(4_000_000)
        core.pump()
        #expect(port.started == [0, 1, 2, 3, 4])
        for cause in [TransportErrorCause.reset(code: 0x2), .refused, .goAway, .connectionLost, .reset(code: 0x8)] {
            core.failed(slot: port.takeOldest(), cause: cause)
        }
        core.pump()
        let m = core.recorder.measured
        #expect(port.started == [0, 1, 2, 3, 4, 1, 2, 3])
        #expect(m.retries == 3)
        #expect(m.transportErrorCauseCounts == ["reset_internal_error": 1, "reset_cancel": 1])
        while !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
        clock.advance(1_000_000)
        #expect(core.tick() == .finish)
        core.finish()
        #expect(core.recorder.measured.check())
    }

    /// A request above a GOAWAY's last stream id was not processed: it is resent on another connection
    /// without `--retry`, up to `goAwayResends` times, and only then counted as a transport error.
    @Test func aRequestRefusedByAGoAwayIsResentWithoutRetry() {
        let (core, port, clock) = make(rate: 1_000, streams: 4, durationMs: 2, retries: 0)
        core.begin(at: clock.time)
        clock.advance(1_000_000)
        core.pump()
        #expect(port.started == [0, 1])
        core.failed(slot: port.takeOldest(), cause: .goAway)
        core.failed(slot: port.takeOldest(), cause: .connectionLost)
        core.pump()
        var m = core.recorder.measured
        #expect(m.retries == 1 && m.transportErrorCauseCounts == ["connection_lost": 1])
        for _ in 0..<DriverCore.goAwayResends {
            core.failed(slot: port.takeOldest(), cause: .goAway)
            core.pump()
        }
        m = core.recorder.measured
        #expect(m.retries == DriverCore.goAwayResends)
        #expect(m.transportErrorCauseCounts == ["connection_lost": 1, "goaway": 1])
        while !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
        clock.advance(2_000_000)
        core.pump()
        while !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
        clock.advance(1_000_000)
        #expect(core.tick() == .finish)
        core.finish()
        #expect(core.recorder.measured.check())
    }

    @Test func aResetCodeNamesItsCause() {
        #expect(TransportErrorCause.reset(code: 0x2) == .resetInternalError)
        #expect(TransportErrorCause.reset(code: 0x7) == .refused)
        #expect(TransportErrorCause.reset(code: 0xd) == .resetHTTP11Required)
        #expect(TransportErrorCause.reset(code: 0xe) == .resetOther)
        #expect(TransportErrorCause.reset(code: .max) == .resetOther)
        #expect(Set(TransportErrorCause.allCases.map(\.name)).count == TransportErrorCause.allCases.count)
    }

    @Test func aResendTheTransportRefusesIsCountedOnceAndNotAsAResend() {
        let (core, port, clock) = make(rate: 1_000, streams: 2, durationMs: 1, retries: 3)
        core.begin(at: clock.time)
        core.pump()
        port.refused = [0: .submitFailed]
        core.failed(slot: port.takeOldest(), cause: .refused)
        core.pump()
        let m = core.recorder.measured
        #expect(core.inFlight == 0 && m.retries == 0)
        #expect(m.transportErrors == 1 && m.transportErrorsByCause[TransportErrorCause.submitFailed.rawValue] == 1)
        #expect(m.check())
    }

    @Test func aClosedLoopGoesOnPastRefusedSubmissionsToItsRequestCount() {
        let (core, port, clock) = make(rate: nil, streams: 2, requests: 6)
        port.refused = [0: .submitFailed, 1: .submitFailed, 2: .submitFailed]
        core.begin(at: clock.time)
        core.pump()
        #expect(port.started == [3, 4])
        while !port.inFlight.isEmpty {
            core.responded(slot: port.takeOldest(), status: 200, reason: 0)
            core.pump()
        }
        #expect(port.started == [3, 4, 5])
        #expect(core.tick() == .finish)
        core.finish()
        let m = core.recorder.measured
        #expect(m.sent == 6 && m.completed == 3 && m.transportErrors == 3 && m.check())
    }

    // MARK: Drain and stop

    @Test func afterTheScheduleTheRunWaitsTheDrainTimeoutForAnswersThenEnds() {
        let (core, port, clock) = make(rate: 1_000, streams: 4, durationMs: 3, drainMs: 50)
        core.begin(at: clock.time)
        clock.advance(1_000_000)
        core.pump()
        #expect(core.generating && core.tick() == .run)
        clock.advance(1_000_000)
        #expect(core.pump() == nil && !core.generating)
        // The schedule is over: the pacing timer stops, once; one answer comes, one never does.
        #expect(core.tick() == .stopPacing)
        #expect(core.drainDeadlineNs == clock.time + 50_000_000)
        core.responded(slot: port.takeOldest(), status: 200, reason: 0)
        clock.advance(49_000_000)
        #expect(core.tick() == .run)
        clock.advance(1_000_000)
        #expect(core.tick() == .finish)
        core.finish()
        let m = core.recorder.measured
        #expect(m.sent == 3 && m.completed == 1 && m.unfinished == 2 && m.check())
    }

    @Test func withNothingInFlightTheRunEndsWithTheSchedule() {
        let (core, port, clock) = make(rate: 1_000, streams: 4, durationMs: 2)
        core.begin(at: clock.time)
        clock.advance(1_000_000)
        core.pump()
        while !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
        #expect(core.tick() == .finish)
    }

    @Test func aStopSendsNothingMoreAndWaitsAtMostASecondForAnswers() {
        let (core, port, clock) = make(rate: 1_000, streams: 4, durationMs: 1_000, retries: 1)
        core.begin(at: clock.time)
        clock.advance(2_000_000)
        core.pump()
        core.failed(slot: port.takeOldest(), cause: .connectionLost)   // would be resent, but the run stops
        core.stop()
        let stoppedAt = clock.time
        #expect(core.drainDeadlineNs == stoppedAt + DriverPlan.stopDrainNs)
        clock.advance(5_000_000)
        #expect(core.pump() == nil)
        #expect(port.started == [0, 1, 2])
        #expect(core.tick() == .run)
        clock.time = stoppedAt + DriverPlan.stopDrainNs
        #expect(core.tick() == .finish)
        core.finish()
        let m = core.recorder.measured
        // Everything due by the end that was not sent is counted so: the schedule's 1000 requests add up.
        #expect(m.unfinished == 2 && m.transportErrors == 1 && m.notSent == 997 && m.retries == 0)
        #expect(m.sent + m.notSent == 1_000 && m.check())
    }

    @Test func aStopDuringTheDrainShortensItButNeverLengthensIt() {
        for (drainMs, stopAfterMs, shortened) in [(5_000 as UInt64, 100 as UInt64, true), (300, 200, false)] {
            let (core, port, clock) = make(rate: 1_000, streams: 4, durationMs: 1, drainMs: drainMs)
            core.begin(at: clock.time)
            core.pump()
            #expect(core.tick() == .stopPacing)
            let deadline = clock.time + drainMs * 1_000_000
            #expect(core.drainDeadlineNs == deadline)
            clock.advance(stopAfterMs * 1_000_000)
            core.stop()
            #expect(core.drainDeadlineNs == (shortened ? clock.time + DriverPlan.stopDrainNs : deadline))
            #expect(port.inFlight.count == 1)
        }
    }

    @Test func anOverloadedTargetsBacklogIsCutOffTheDrainTimeoutAfterTheLastIntendedTime() {
        // One stream that is never answered: requests 1...9 wait in the backlog.
        let (core, port, clock) = make(rate: 1_000, streams: 1, durationMs: 10, drainMs: 20)
        let t0 = clock.time
        core.begin(at: t0)
        var last = TickAction.run
        while clock.time <= t0 + 9_000_000 + 20_000_000 {
            core.pump()
            last = core.tick()
            #expect(last == .run, "at \((clock.time - t0) / 1_000_000) ms")
            clock.advance(1_000_000)
        }
        #expect(core.tick() == .finish)
        core.finish()
        let m = core.recorder.measured
        #expect(port.started == [0])
        #expect(m.sent == 1 && m.unfinished == 1 && m.notSent == 9 && m.check())
    }

    @Test func aClosedLoopEndsGeneratingAtItsTimeLimitOnATick() {
        let (core, port, clock) = make(rate: nil, streams: 2, durationMs: 10)
        core.begin(at: clock.time)
        core.pump()
        #expect(core.tick() == .run)
        clock.advance(10_000_000)
        #expect(core.tick() == .stopPacing && !core.generating)
        while !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
        #expect(core.tick() == .finish)
    }
}

@Suite struct PathIndexingTests {
    @Test func pathIsIndexedOnlyWhenEveryTokensPathFitsHalfTheTable() {
        let apnsPath = "/3/device/".utf8.count + 64   // 74 bytes: 111 per HPACK entry
        #expect(APNsRequestBuilder.indexesPath(tokens: 1, pathLength: apnsPath))
        #expect(APNsRequestBuilder.indexesPath(tokens: 18, pathLength: apnsPath))    // 1998 bytes
        #expect(!APNsRequestBuilder.indexesPath(tokens: 19, pathLength: apnsPath))   // 2109 bytes
        #expect(!APNsRequestBuilder.indexesPath(tokens: 1000, pathLength: apnsPath))
    }
}
