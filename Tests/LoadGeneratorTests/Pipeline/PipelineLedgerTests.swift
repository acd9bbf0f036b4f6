import PushPayload
import Testing
@testable import LoadGenerator

/// The pipeline's books without sockets or clocks: each request's answer and pushes, by hand.
@Suite struct PipelineLedgerTests {
    /// 1 request per µs from t0 = 1 s; requests from 10 on are measured.
    func ledger(fanOut: Int = 1, capacity: Int = 1024) -> PipelineLedger {
        PipelineLedger(fanOut: fanOut, capacity: capacity, measuredFrom: 1_000_010_000, firstMeasured: 10) { g in
            1_000_000_000 + UInt64(g) * 1000
        }
    }

    func accept(_ l: PipelineLedger, _ g: Int64, status: UInt16 = 202) {
        l.take(FrontDoorAnswer(index: g, status: status, answeredAt: 1_000_000_000 + UInt64(g) * 1000 + 500))
    }

    func push(_ l: PipelineLedger, _ g: Int64, status: UInt16 = 200, after us: UInt64 = 2000, route: UInt8 = 0) {
        l.take(PushArrival(index: g, arrivedAt: 1_000_000_000 + UInt64(max(g, 0)) * 1000 + us * 1000, route: route, status: status))
    }

    @Test func everyPushOfEveryRequestDelivered() {
        let l = ledger(fanOut: 3)
        for g in Int64(0)..<100 {
            accept(l, g)
            for _ in 0..<3 { push(l, g) }
        }
        l.finish(at: 2_000_000_000)
        // Requests 0 to 9 are the warm-up: matched, kept apart.
        #expect(l.counts.expected == 270 && l.counts.delivered == 270 && l.counts.lost == 0)
        #expect(l.warmup.expected == 30 && l.warmup.delivered == 30 && l.inFlight == 0)
        #expect(l.counts.duplicated == 0 && l.counts.unexpected == 0)
        // Only measured requests' pushes are in the histogram, each 2 ms after its intended time.
        #expect(l.endToEnd.totalCount == 270)
        #expect(abs(l.endToEnd.valueAtPercentile(50) - 2000) <= 2)
    }

    /// What each push turned out to be, as the log's `arrival` column says it.
    @Test func eachPushGetsItsVerdict() {
        let l = ledger(fanOut: 1)
        func take(_ g: Int64, _ status: UInt16 = 200) -> PipelineLedger.Verdict {
            l.take(PushArrival(index: g, arrivedAt: 1_000_000_000 + UInt64(max(g, 0)) * 1000 + 2_000_000, route: 0, status: status))
        }
        accept(l, 20)
        accept(l, 21)
        accept(l, 22, status: 500)
        #expect(take(20) == .delivered)
        #expect(take(20) == .duplicate)
        #expect(take(21, 503) == .refusedByGateway)
        #expect(take(21, 400) == .rejected)
        #expect(take(22) == .refusedRequest)
        #expect(take(PushArrival.noID) == .noID && take(PushArrival.foreignID) == .otherRun)
        let limited = PipelineLedger(fanOut: 1, capacity: 1024, measuredFrom: 0, firstMeasured: 0, indexLimit: 100) { _ in 0 }
        #expect(limited.take(PushArrival(index: 500, arrivedAt: 1, route: 1, status: 200)) == .unknownRequest)
        #expect(PipelineLedger.Verdict.allCases.map(\.name) == ["delivered", "rejected", "duplicate", "refused_by_gateway",
                                                                 "refused_request", "unknown_request", "no_id", "other_run"])
    }

    @Test func aPushBeforeItsAnswerCountsTheSame() {
        let l = ledger()
        push(l, 20)
        #expect(l.counts.delivered == 1 && l.counts.expected == 0)
        accept(l, 20)
        l.finish(at: 2_000_000_000)
        #expect(l.counts.expected == 1 && l.counts.delivered == 1 && l.counts.lost == 0 && l.counts.inFlight == 0)
    }

    @Test func missingPushesAreLostWhenTheRecordCloses() {
        let l = ledger(fanOut: 2)
        for g in Int64(10)..<20 { accept(l, g) }
        push(l, 13)
        #expect(l.counts.inFlight == 19)
        l.finish(at: 2_000_000_000)
        #expect(l.counts.expected == 20 && l.counts.delivered == 1 && l.counts.lost == 19 && l.counts.inFlight == 0)
    }

    @Test func aRecordClosesWhenItsSlotIsNeededAgainAndALatePushIsUnexpected() {
        let l = ledger(capacity: 1024)
        accept(l, 15)
        accept(l, 15 + 1024)  // the same slot, a capacity later: request 15 is closed, its push lost
        #expect(l.counts.lost == 1)
        push(l, 15)
        #expect(l.counts.unknownRequest == 1 && l.counts.delivered == 0)
    }

    @Test func aResendAfterAGatewayRefusalIsARetryNotADuplicate() {
        let l = ledger()
        accept(l, 30)
        push(l, 30, status: 500)
        push(l, 30, status: 429)
        push(l, 30, status: 200)
        l.finish(at: 2_000_000_000)
        #expect(l.counts.retried == 2 && l.counts.refusedByGateway == 2)
        #expect(l.counts.delivered == 1 && l.counts.duplicated == 0 && l.counts.lost == 0)
    }

    @Test func aResendAfterASuccessIsADuplicate() {
        let l = ledger(fanOut: 2)
        accept(l, 30)
        for _ in 0..<3 { push(l, 30) }
        push(l, 30, status: 410)  // a final answer too: the service sent a fourth push
        l.finish(at: 2_000_000_000)
        #expect(l.counts.delivered == 2 && l.counts.duplicated == 2 && l.counts.retried == 0 && l.counts.rejected == 0)
    }

    @Test func frontDoorLatencyIsKeptByStatusForMeasuredRequests() {
        let l = ledger()
        for g in Int64(0)..<30 { accept(l, g, status: g % 3 == 0 ? 503 : 202) }
        // Requests 10 to 29 are measured: 14 answered 202, 6 (12, 15, ... 27) answered 503.
        #expect(l.frontDoorByStatus.keys.sorted() == [202, 503])
        #expect(l.frontDoorByStatus[202]?.totalCount == 14 && l.frontDoorByStatus[503]?.totalCount == 6)
    }

    @Test func aPushRefusedWithA4xxIsDeliveredAndCountedRejected() {
        let l = ledger(fanOut: 2)
        accept(l, 30)
        push(l, 30, status: 410)
        push(l, 30, status: 200)
        l.finish(at: 2_000_000_000)
        #expect(l.counts.delivered == 2 && l.counts.rejected == 1 && l.counts.lost == 0)
    }

    @Test func pushesWithoutAnExpectedRequestAreUnexpected() {
        let l = ledger()
        push(l, PushArrival.noID)
        push(l, PushArrival.foreignID)
        accept(l, 40, status: 503)
        push(l, 40)
        push(l, 41)
        accept(l, 41, status: 400)  // refused after its push arrived: not expected after all
        l.finish(at: 2_000_000_000)
        #expect(l.counts.noID == 1 && l.counts.otherRun == 1 && l.counts.refusedRequest == 2)
        #expect(l.counts.unexpected == 4 && l.counts.expected == 0 && l.counts.delivered == 0 && l.counts.lost == 0)
    }

    @Test func anIndexPastTheRunNamesNoRequestAndClosesNone() {
        let l = PipelineLedger(fanOut: 1, capacity: 1024, measuredFrom: 0, firstMeasured: 0, indexLimit: 2000) { _ in 0 }
        l.take(FrontDoorAnswer(index: 5, status: 202, answeredAt: 1))
        l.take(PushArrival(index: 5 + 1024 * 1000, arrivedAt: 2, route: 0, status: 200))  // the same slot, far past the run
        #expect(l.counts.unknownRequest == 1 && l.counts.lost == 0)
        l.take(PushArrival(index: 5, arrivedAt: 3, route: 0, status: 200))
        l.finish(at: 4)
        #expect(l.counts.delivered == 1 && l.counts.lost == 0)
    }

    @Test func pushesOfAnUnansweredRequestMakeItExpected() {
        let l = ledger(fanOut: 3)
        push(l, 50)  // the front door never answered (cut off), but the service sent a push
        l.finish(at: 2_000_000_000)
        #expect(l.counts.expected == 3 && l.counts.delivered == 1 && l.counts.lost == 2)
    }

    @Test func theTimelineCountsEachSecondAndTheBacklog() {
        let l = PipelineLedger(fanOut: 1, capacity: 4096, measuredFrom: 1_000_000_000, firstMeasured: 0) { g in
            1_000_000_000 + UInt64(g) * 1_000_000
        }
        // 2,000 requests at 1 per ms; the service stalls in the second second: nothing arrives there.
        for g in Int64(0)..<2000 {
            l.take(FrontDoorAnswer(index: g, status: 202, answeredAt: 1_000_000_000 + UInt64(g) * 1_000_000 + 100_000))
            if g < 1000 { l.take(PushArrival(index: g, arrivedAt: 1_000_000_000 + UInt64(g) * 1_000_000 + 200_000, route: 1, status: 200)) }
        }
        for g in Int64(1000)..<2000 {
            l.take(PushArrival(index: g, arrivedAt: 3_000_000_000 + UInt64(g - 1000) * 100_000, route: 0, status: 200))
        }
        l.finish(at: 3_200_000_000)
        let s = l.takeSeconds()
        #expect(s.count == 3)
        #expect(s[0].frontDoor == 1000 && s[0].fcm == 1000 && s[0].backlog == 0)
        #expect(s[1].frontDoor == 1000 && s[1].fcm == 0 && s[1].apns == 0 && s[1].backlog == 1000)
        #expect(s[2].apns == 1000 && s[2].backlog == 0)
        #expect(s[2].p99 > 900_000)  // the stall is in the tail of the second the pushes arrived
        #expect(l.counts.delivered == 2000 && l.counts.lost == 0)
    }
}
