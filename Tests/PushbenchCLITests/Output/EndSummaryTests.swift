import Foundation
@testable import LoadGenerator
@testable import PushMetrics
import Testing
@testable import PushbenchCLI

/// The end summary tells the story of a run: what failed and why, the connections, whether the rate was
/// kept, and what the latency leaves out. Built from a record and a result, without sockets.
@Suite struct EndSummaryTests {
    /// A 10 s open-loop run at `rate` that sent `sent` requests and got `completed` answers.
    func run(rate: Int?, sent: Int, completed: Int) -> (RunRecord, LoadResult) {
        var r = LoadResult(measuredStart: Date(timeIntervalSince1970: 1_764_000_000))
        r.measuredSeconds = 10
        r.measured.sent = sent
        r.measured.completed = completed
        r.measured.succeeded = completed
        r.measured.byStatus[200] = completed
        r.measured.unfinished = sent - completed
        var record = RunRecord(label: "t", startedAt: r.measuredStart, config: RunConfig(rps: rate))
        record.measuredSeconds = 10
        record.counts = RunExecution.counts(r.measured)
        for _ in 0..<completed { record.latency.record(800) }
        record.rate = r.rateOutcome(targetRPS: rate.map(Double.init))
        return (record, r)
    }

    func lines(_ record: RunRecord, _ r: LoadResult) -> [String] {
        RunExecution.summaryLines(record, result: r, folder: "results/x", warmupSeconds: 0, tokenChurn: false)
    }

    @Test func failuresAreBrokenDownByStatusAndReasonAndTransportErrorsByCause() {
        var (record, r) = run(rate: 100, sent: 1000, completed: 1000)
        r.measured.succeeded = 867
        r.measured.failed = 133
        r.measured.byStatus[200] = 867
        r.measured.byStatus[400] = 100
        r.measured.byStatus[500] = 33
        r.measured.byReason[Reasons.names.firstIndex(of: "BadDeviceToken")!] = 100
        r.measured.byReason[Reasons.names.firstIndex(of: "InternalServerError")!] = 33
        r.measured.transportErrors = 4
        r.measured.transportErrorsByCause[TransportErrorCause.connectionLost.rawValue] = 3
        r.measured.transportErrorsByCause[TransportErrorCause.resetInternalError.rawValue] = 1
        record.counts = RunExecution.counts(r.measured)
        let text = lines(record, r).joined(separator: "\n")
        #expect(text.contains("  failed     by status 400: 100, 500: 33   by reason BadDeviceToken 100, InternalServerError 33"), "\(text)")
        #expect(text.contains("  transport  connection lost 3, reset internal error 1"), "\(text)")
        #expect(text.contains("  connections opened 0  lost 0  goaways 0  connect failures 0"), "\(text)")
    }

    @Test func theTopFiveReasonsAreShownAndTheRestCounted() {
        let counts = (1...7).map { ("R\($0)", $0) }
        #expect(RunExecution.top(counts) == "R7 7, R6 6, R5 5, R4 4, R3 3, and 2 more")
    }

    @Test func aDeadTargetIsPlainConnectionsLostRequestsNeverSentAndWhatLatencyLeavesOut() {
        var (record, r) = run(rate: 1000, sent: 3000, completed: 2900)
        r.measured.unfinished = 0
        r.measured.transportErrors = 100
        r.measured.transportErrorsByCause[TransportErrorCause.connectionLost.rawValue] = 100
        r.measured.notSent = 7000
        r.stats.connections.opened = 8
        r.stats.connections.lost = 8
        r.stats.connections.connectFailures = 40
        record.counts = RunExecution.counts(r.measured)
        record.rate = r.rateOutcome(targetRPS: 1000)
        let text = lines(record, r).joined(separator: "\n")
        #expect(text.contains("  connections opened 8  lost 8  goaways 0  connect failures 40"), "\(text)")
        #expect(text.contains("and 7000 due but never sent"), "\(text)")
        #expect(text.contains("not in these figures: 7100 measured requests never answered"), "\(text)")
        #expect(text.contains("NOT KEPT: sent 300.0 rps"), "\(text)")
        #expect(record.rate?.shortfall == .target)
        let warnings = RunExecution.warnings(record, result: r)
        #expect(warnings.count == 1)
        #expect(warnings.first?.hasPrefix("the rate was not kept: sent 300.0 of 1000 rps, answered 290.0, 7000 due requests never sent:"
                                          + " the target did not keep up (8 connections lost, 40 connect failures") == true, "\(warnings)")
    }

    /// Reconnects refused because the target's certificate stopped verifying (a gateway restarted with a
    /// new CA) are blamed on the certificate, with the CAs the run trusts, not on a target that went away.
    @Test func aCertificateThatNoLongerVerifiesIsNamedInsteadOfADeadTarget() {
        var (record, r) = run(rate: 1000, sent: 3000, completed: 2900)
        r.measured.unfinished = 0
        r.measured.transportErrors = 100
        r.measured.notSent = 7000
        r.stats.connections.opened = 8
        r.stats.connections.lost = 8
        r.stats.connections.connectFailures = 40
        r.stats.connections.certificateFailures = 38
        r.stats.connections.certificateProblem = "the certificate of 127.0.0.1:8443 no longer verifies (certificate verify failed:"
            + " unable to get local issuer certificate) against the CAs the run trusts: those in ca.pem (--cacert)"
        record.rate = r.rateOutcome(targetRPS: 1000)
        let warnings = RunExecution.warnings(record, result: r)
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.hasSuffix(": 38 of 40 connect failures: the certificate of 127.0.0.1:8443 no longer verifies"
                                          + " (certificate verify failed: unable to get local issuer certificate) against the CAs"
                                          + " the run trusts: those in ca.pem (--cacert) (8 connections lost, 100 cut off, 0 unanswered)") == true,
                "\(warnings)")
        #expect(warnings.first?.contains("did not keep up") == false)
        // A run that kept its rate still hears of it, on a line of its own.
        var (kept, k) = run(rate: 100, sent: 1000, completed: 1000)
        k.stats.connections.connectFailures = 2
        k.stats.connections.certificateFailures = 2
        k.stats.connections.certificateProblem = "the certificate of x no longer verifies"
        kept.rate = k.rateOutcome(targetRPS: 100)
        #expect(RunExecution.warnings(kept, result: k) == ["2 of 2 connect failures: the certificate of x no longer verifies"])
    }

    @Test func theRateVerdictNamesWhatHeldItBack() {
        // Kept: the whole schedule went out and was answered.
        #expect(run(rate: 100, sent: 1000, completed: 1000).1.rateOutcome(targetRPS: 100) == RateOutcome(sentRPS: 100, shortfall: nil))
        // The sender fell behind with streams free.
        var (_, sender) = run(rate: 400_000, sent: 2_465_970, completed: 2_465_970)
        #expect(sender.rateOutcome(targetRPS: 400_000)?.shortfall == .sender)
        // ... with every stream busy.
        sender.stats.blocked = 12
        #expect(sender.rateOutcome(targetRPS: 400_000)?.shortfall == .streams)
        // Sent on time, answered far slower.
        let (_, slow) = run(rate: 100, sent: 1000, completed: 500)
        #expect(slow.rateOutcome(targetRPS: 100)?.shortfall == .target)
        // Closed loop, or stopped on purpose: no verdict.
        #expect(run(rate: nil, sent: 1000, completed: 1000).1.rateOutcome(targetRPS: nil) == nil)
        var stopped = run(rate: 100, sent: 10, completed: 10).1
        stopped.interrupted = true
        #expect(stopped.rateOutcome(targetRPS: 100) == nil)
    }

    @Test func theRateVerdictIsInSummaryJSON() throws {
        var (record, r) = run(rate: 400_000, sent: 2_465_970, completed: 2_465_970)
        r.stats.blocked = 3
        record.rate = r.rateOutcome(targetRPS: 400_000)
        let json = ResultsWriter.summaryJSON(record, runID: "x")
        #expect(json.value(atPath: "throughput.rate_kept") == .bool(false))
        #expect(json.value(atPath: "throughput.rate_shortfall") == .string("streams"))
        #expect(json.value(atPath: "throughput.sent_rps")?.number == 246_597)
        let kept = run(rate: 100, sent: 1000, completed: 1000).0
        #expect(ResultsWriter.summaryJSON(kept, runID: "x").value(atPath: "throughput.rate_kept") == .bool(true))
        #expect(ResultsWriter.summaryJSON(kept, runID: "x").value(atPath: "throughput.rate_shortfall") == nil)
    }

    @Test func aRunThatMeasuredNothingSaysWhyAndExitsFour() {
        let (record, r) = run(rate: 100, sent: 0, completed: 0)
        var oversize = r
        oversize.measured.oversizeNotSent = 200
        #expect(RunExecution.measuredNothing(record, result: oversize))
        #expect(RunExecution.warnings(record, result: oversize).first == "no request was sent in the measured time: every payload was over the size limit")
        let (silentRecord, silent) = run(rate: 100, sent: 1000, completed: 0)
        #expect(RunExecution.warnings(silentRecord, result: silent).first
                == "none of the 1000 requests sent was answered (0 cut off, 1000 unfinished): the target did not respond")
        #expect(RunExecution.closing(warnings: [], nothingMeasured: true, destination: ResultsDestination(root: URL(fileURLWithPath: "/tmp")))
                == RunExecution.measuredNothingStatus)
    }
}

/// The progress line: errors per second beside the count, no false 0 ms, and a sender behind its rate.
@Suite struct ProgressLineTests {
    @Test func errorsPerSecondStandBesideTheCount() {
        var s = LiveSnapshot()
        s.errors = 133
        s.lastSecondCompleted = 10
        #expect(ProgressDisplay.format(s, elapsed: 3, rps: 1000, errorsPerSecond: 44).contains("errors 133 (+44/s)"))
    }

    /// Beside the cumulative count, a line shows the errors since the previous line, per second.
    @Test func errorsPerSecondAreTheDeltaSinceThePreviousLine() {
        var display = ProgressDisplay(quiet: false, json: false)
        var s = LiveSnapshot()
        s.errors = 3
        #expect(display.nextLine(s, elapsed: 1.0).hasSuffix("errors 3 (+3/s)"))
        s.errors = 10
        #expect(display.nextLine(s, elapsed: 2.0).hasSuffix("errors 10 (+7/s)"))
        s.errors = 10
        #expect(display.nextLine(s, elapsed: 3.0).hasSuffix("errors 10 (+0/s)"))
        // A late tick: 8 more errors over 2 s is 4 per second.
        s.errors = 18
        #expect(display.nextLine(s, elapsed: 5.0).hasSuffix("errors 18 (+4/s)"))
    }

    @Test func aSecondWithNoAnswerShowsNoPercentileRatherThanZero() {
        var s = LiveSnapshot()
        s.sent = 500
        s.lastSecondCompleted = 0
        let line = ProgressDisplay.format(s, elapsed: 1, rps: 500)
        #expect(line.contains("p50 -  p99 -"), "\(line)")
        #expect(!line.contains("0.00 ms"))
    }

    @Test func aSenderBehindItsRateIsMarked() {
        var s = LiveSnapshot()
        s.backlog = 5_000
        #expect(ProgressDisplay.behind(s, targetRPS: 400_000))
        #expect(ProgressDisplay.format(s, elapsed: 2, rps: 246_597, behind: true).hasSuffix("BEHIND the rate"))
        s.backlog = 3
        #expect(!ProgressDisplay.behind(s, targetRPS: 50_000))
        #expect(!ProgressDisplay.behind(s, targetRPS: nil))
    }
}

/// What `--help` shows a newcomer.
@Suite struct HelpTests {
    @Test func theOverviewMentionsVersionAndTheRunHelpItsPlaceholdersAndPacing() {
        #expect(PushbenchMain.overview.contains("--version"))
        #expect(RunCommand.help.contains("{{text}}"))
        #expect(RunCommand.help.contains("--pace-quantum"))
        #expect(RunCommand.help.contains("4 the run completed but not one measured request was answered"))
    }

    @Test func reportAndMergeSayHowTheyDraw() {
        #expect(ReportCommand.usage.contains("one series per comparable") && ReportCommand.usage.contains("log"))
        #expect(MergeCommand.usage.contains("warning"))
    }
}
