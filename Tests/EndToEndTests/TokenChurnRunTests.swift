import Foundation
import Testing

/// `--token-churn`: the embedded gateway invalidates tokens over time; the client prunes every token
/// answered as gone and sends to it no more.
@Suite(.serialized) struct TokenChurnRunTests {
    /// 500 tokens at 500 rps: each token comes up once a second. After a token churns, a client that kept
    /// sending to it would be refused once a second for the rest of the run; a pruning client is refused
    /// exactly once per token. One connection with one stream makes that exact whatever the timing: the
    /// next request goes out only after the refusal before it was read and its token pruned. (With many
    /// streams, requests already in flight to a token when its first refusal arrives are refused too, and
    /// how many there are depends on the machine's speed.)
    @Test(arguments: ["apns", "fcm"])
    func churnedTokensArePrunedAndNotSentToAgain(proto: String) throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        // No warm-up: the churn arithmetic below is for a 3 s run.
        let r = try PushbenchBinary.run(["--protocol", proto, "--tokens", "500", "--rps", "500", "--duration", "3s", "--warmup", "0s",
                                         "--connections", "1", "--streams", "1", "--token-churn", "0.2/s", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("pruned"), "\(r.out)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.accountingHolds(s))
        let pruned = PushbenchBinary.int(s, "pruned_tokens")
        #expect(pruned > 50, "pruned \(pruned)")  // 0.2/s × 3 s ≈ 45% of 500 churn during the run
        #expect(s["tokens_exhausted"] as? Bool == false)
        let byReason = PushbenchBinary.byReasonWholeRun(s)
        let gone = proto == "fcm" ? (byReason["UNREGISTERED"] ?? 0) : (byReason["Unregistered"] ?? 0)
        let fcm = try #require((s["gateway"] as? [String: Any])?["fcm"] as? [String: Any], "gateway.fcm missing")
        // The gateway refused exactly the requests the client saw refused, and found as many distinct
        // churned tokens as the client pruned (one driver thread, one gateway loop).
        #expect(PushbenchBinary.int(fcm, "churn_refusals") == gone)
        #expect(PushbenchBinary.int(fcm, "churned_tokens") == pruned)
        // One refusal per pruned token: none was sent to again.
        #expect(gone == pruned, "gone answers \(gone), pruned \(pruned)")
        #expect(PushbenchBinary.int(s, "requests", "sent") == 1500)
        #expect((s["reconciliation"] as? [String: Any])?["consistent"] as? Bool == true)
        if proto == "fcm" { #expect((s["reconciliation"] as? [String: Any])?["fcm_consistent"] as? Bool == true) }
    }

    /// 20 tokens, all churned within a second: the run stops early and cleanly, says so, and keeps its results.
    @Test(arguments: ["apns", "fcm"])
    func whenEveryTokenIsGoneTheRunStopsAndStillWritesResults(proto: String) throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        // No warm-up: every token would be gone before the measured phase began.
        let r = try PushbenchBinary.run(["--protocol", proto, "--tokens", "20", "--rps", "1000", "--duration", "10s",
                                         "--warmup", "0s", "--token-churn", "1/s", "--out", out.path, "--quiet"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.contains("every token was answered as gone"), "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.int(s, "pruned_tokens") == 20)
        #expect(s["tokens_exhausted"] as? Bool == true)
        #expect(s["interrupted"] as? Bool == false)
        #expect(PushbenchBinary.accountingHolds(s))
        let sent = PushbenchBinary.int(s, "requests", "sent")
        #expect(sent > 0 && sent < 5000, "sent \(sent)")  // stopped after ~1-2 s of a 10 s schedule
        #expect(PushbenchBinary.int(s, "accounting", "not_sent") >= 0)
        for file in ["latency.hgrm", "latency.hlog", "timeline.csv", "report.svg"] {
            #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("latest/\(file)").path), "\(file)")
        }
    }
}
