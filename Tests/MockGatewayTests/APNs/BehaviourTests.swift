import Testing
@testable import MockGateway

@Suite struct BehaviourTests {
    @Test func unregisteredTokensAreTheSameEveryRunAndAnswered410WithATimestamp() throws {
        var a = try Harness(["--unregistered", "0.25", "--seed", "1"])
        var b = try Harness(["--unregistered", "0.25", "--seed", "99"])
        var gone: [Int] = []
        for i in 0..<2000 {
            let request = TestRequest(path: "/3/device/" + token(i))
            let ra = a.send(request).response!, rb = b.send(request).response!
            #expect(ra.status == rb.status && ra.timestampMillis == rb.timestampMillis)
            if ra.status == 410 {
                gone.append(i)
                #expect(ra.reason == .unregistered)
                // Milliseconds, at or before the gateway started (1_700_000_000_000 in the harness), within 30 days.
                let ts = try #require(ra.timestampMillis)
                #expect(ts <= 1_700_000_000_000 && ts > 1_700_000_000_000 - 30 * 86_400_000)
            } else {
                #expect(ra.status == 200 && ra.timestampMillis == nil)
            }
            #expect(a.machine.configuration.isUnregistered(token: token(i)) == (ra.status == 410))
            // Case does not change the verdict.
            #expect(a.machine.configuration.isUnregistered(token: token(i).uppercased()) == (ra.status == 410))
        }
        #expect(gone.count > 400 && gone.count < 600, "\(gone.count) of 2000 at 25%")
        // Asking again gives the same answer and the same timestamp.
        let again = a.send(TestRequest(path: "/3/device/" + token(gone[0]))).response!
        #expect(again.status == 410)
    }

    @Test func injectedFailuresFollowTheirRatesAndTheSeed() throws {
        let flags = ["--fail", "InternalServerError=0.1", "--fail", "ServiceUnavailable=5%", "--seed", "7"]
        var a = try Harness(flags), b = try Harness(flags), c = try Harness(flags.dropLast(2) + ["--seed", "8"])
        var seqA: [UInt16] = [], seqB: [UInt16] = [], seqC: [UInt16] = []
        for _ in 0..<10_000 {
            seqA.append(a.send(TestRequest()).response!.status)
            seqB.append(b.send(TestRequest()).response!.status)
            seqC.append(c.send(TestRequest()).response!.status)
        }
        #expect(seqA == seqB)
        #expect(seqA != seqC)
        let s = a.stats
        #expect((850...1150).contains(s.byStatus[500] ?? 0), "\(s.byStatus)")
        #expect((400...600).contains(s.byStatus[503] ?? 0), "\(s.byStatus)")
        #expect(s.byReason["InternalServerError"] == s.byStatus[500])
        #expect(s.byReason["ServiceUnavailable"] == s.byStatus[503])
        #expect(s.byStatus[200]! + s.byStatus[500]! + s.byStatus[503]! == 10_000)
    }

    @Test func injectedFailuresApplyOnlyToValidRequests() throws {
        var h = try Harness(["--fail", "InternalServerError=1"])
        #expect(h.status(TestRequest()) == (500, "InternalServerError"))
        #expect(h.status(TestRequest(headers: [])) == (400, "MissingTopic"))
    }

    /// An injected 410 (or ExpiredToken) carries the wall-clock time of its request, taken from the
    /// request's monotonic time and the machine's clock anchor: the same inputs give the same answer,
    /// whenever the test runs.
    @Test func injected410IsStampedWithTheRequestTimeNotTheWallClock() throws {
        for reason in ["Unregistered", "ExpiredToken"] {
            var a = try Harness(["--fail", "\(reason)=1"]), b = try Harness(["--fail", "\(reason)=1"])
            a.now = 6_000_000_000                // 5 s after the anchor (1 s monotonic = 1_700_000_000_000 ms)
            b.now = 6_000_000_000
            let ra = a.send(TestRequest()).response!, rb = b.send(TestRequest()).response!
            #expect(ra.status == 410 && ra.reason?.rawValue == reason)
            #expect(ra.timestampMillis == 1_700_000_005_000, "\(reason): \(String(describing: ra.timestampMillis))")
            #expect(rb.timestampMillis == ra.timestampMillis)
            a.now = 6_250_000_000
            #expect(a.send(TestRequest()).response!.timestampMillis == 1_700_000_005_250)
        }
    }

    @Test func perTokenRateLimitAnswers429AndRefills() throws {
        var h = try Harness(["--token-rate", "2"])
        let one = TestRequest(path: "/3/device/" + token(1)), two = TestRequest(path: "/3/device/" + token(2))
        #expect(h.status(one).0 == 200)
        #expect(h.status(one).0 == 200)
        #expect(h.status(one) == (429, "TooManyRequests"))
        #expect(h.status(two).0 == 200) // other tokens have their own bucket
        h.now += 500_000_000 // half a second refills one request
        #expect(h.status(one).0 == 200)
        #expect(h.status(one) == (429, "TooManyRequests"))
        h.now += 10_000_000_000 // the bucket never holds more than the burst
        #expect(h.status(one).0 == 200)
        #expect(h.status(one).0 == 200)
        #expect(h.status(one).0 == 429)
    }

    @Test func burstIsConfigurable() throws {
        var h = try Harness(["--token-rate", "1/5"])
        for _ in 0..<5 { #expect(h.status(TestRequest()).0 == 200) }
        #expect(h.status(TestRequest()).0 == 429)
    }

    @Test func fixedUniformAndPercentileLatencies() throws {
        var fixed = try Harness(["--latency", "2ms"])
        let answer = fixed.send(TestRequest())
        if case .respondLater(let d) = answer.decision { #expect(d == 2_000_000 && answer.written.status == 200) } else { Issue.record("no delay") }

        var uniform = try Harness(["--latency", "1ms-3ms"])
        var sum = 0.0
        for _ in 0..<2000 {
            guard case .respondLater(let d) = uniform.send(TestRequest()).decision else { Issue.record("no delay"); return }
            #expect(d >= 1_000_000 && d <= 3_000_000)
            sum += Double(d)
        }
        #expect(abs(sum / 2000 - 2_000_000) < 100_000)

        var pct = try Harness(["--latency", "p0=1ms,p50=2ms,p90=10ms,p100=20ms"])
        var samples: [UInt64] = []
        for _ in 0..<10_000 {
            guard case .respondLater(let d) = pct.send(TestRequest()).decision else { Issue.record("no delay"); return }
            samples.append(d)
        }
        samples.sort()
        #expect(samples.first! >= 1_000_000 && samples.last! <= 20_000_000)
        #expect(abs(Double(samples[5000]) - 2_000_000) < 200_000, "p50 \(samples[5000])")
        #expect(abs(Double(samples[9000]) - 10_000_000) < 600_000, "p90 \(samples[9000])")
    }

    @Test func latencyAppliesToErrorsToo() throws {
        var h = try Harness(["--latency", "1ms"])
        let answer = h.send(TestRequest(headers: []))
        guard case .respondLater = answer.decision else { Issue.record("no delay"); return }
        let r = answer.written
        #expect(r.reason == .missingTopic)
    }

    @Test func goawayAfterNStreamsComesWithTheNthResponseOnce() throws {
        var h = try Harness(["--goaway-after-streams", "3", "--goaway-reason", "IdleTimeout"])
        #expect(h.send(TestRequest()).response!.goaway == nil)
        #expect(h.send(TestRequest()).response!.goaway == nil)
        let third = h.send(TestRequest()).response!
        #expect(third.status == 200 && third.goaway == .idleTimeout)
        #expect(h.send(TestRequest()).response!.goaway == nil)
        #expect(h.stats.goaways == 1)
    }

    @Test func timedGoawayIsDueAfterTheDeadline() throws {
        var h = try Harness(["--goaway-after", "2s"])
        #expect(h.connection.goawayDeadline == h.now + 2_000_000_000)
        #expect(h.machine.goawayDue(connection: &h.connection, now: h.now + 1_000_000_000) == nil)
        #expect(h.machine.goawayDue(connection: &h.connection, now: h.now + 2_000_000_000) == .shutdown)
        #expect(h.machine.goawayDue(connection: &h.connection, now: h.now + 3_000_000_000) == nil)
        // A request arriving after the deadline on a connection whose timer has not fired carries it.
        var late = try Harness(["--goaway-after", "1s"])
        late.now += 1_500_000_000
        #expect(late.send(TestRequest()).response!.goaway == .shutdown)
    }

    @Test func dropsAfterNStreamsAndByRate() throws {
        var h = try Harness(["--drop-after-streams", "2"])
        #expect(h.send(TestRequest()).response != nil)
        #expect(h.send(TestRequest()).decision == .drop)
        #expect(h.stats.drops == 1)
        var r = try Harness(["--drop-rate", "0.1"])
        var drops = 0
        for _ in 0..<5000 where r.send(TestRequest()).decision == .drop { drops += 1 }
        #expect(drops > 350 && drops < 650)
    }

    @Test func maxConcurrentStreamsDropsToOneAfterARejectionAndComesBack() throws {
        var h = try Harness(["--streams-drop-on-error", "--max-streams", "500"])
        #expect(h.connection.advertisedMaxStreams == 500)
        #expect(h.send(TestRequest()).response!.maxConcurrentStreams == nil)
        let rejected = h.send(TestRequest(headers: [])).response!
        #expect(rejected.status == 400 && rejected.maxConcurrentStreams == 1)
        #expect(h.send(TestRequest(headers: [])).response!.maxConcurrentStreams == nil) // already 1
        let accepted = h.send(TestRequest()).response!
        #expect(accepted.status == 200 && accepted.maxConcurrentStreams == 500)
        #expect(h.send(TestRequest()).response!.maxConcurrentStreams == nil)
    }

    @Test func loopsDrawDifferentStreamsFromOneSeed() throws {
        let config = try GatewayConfiguration.parse(["--fail", "InternalServerError=0.5"])
        var a = Harness(config, loop: 0), b = Harness(config, loop: 1)
        var sa: [UInt16] = [], sb: [UInt16] = []
        for _ in 0..<64 { sa.append(a.send(TestRequest()).response!.status); sb.append(b.send(TestRequest()).response!.status) }
        #expect(sa != sb)
    }
}
