import Foundation
import Testing

@Suite(.serialized) struct FCMRunTests {
    @Test func fcmRunAsANewUserTypesIt() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--protocol", "fcm", "--rps", "2000", "--duration", "2s", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        let latest = out.appendingPathComponent("latest")
        for file in ["summary.json", "latency.hgrm", "latency.hlog", "service_time.hlog", "timeline.csv", "report.svg", "report.html"] {
            #expect(FileManager.default.fileExists(atPath: latest.appendingPathComponent(file).path), "\(file)")
        }
        // No --capture: no capture.json.
        #expect(!FileManager.default.fileExists(atPath: latest.appendingPathComponent("capture.json").path))
        let s = try PushbenchBinary.summary(out)
        let sent = PushbenchBinary.int(s, "requests", "sent")
        #expect(sent == 4000)
        #expect((s["requests"] as? [String: Any])?["by_status"] as? [String: Int] == ["200": 4000])
        // The default 2 s warm-up: sent and answered, kept out of `requests`.
        #expect(PushbenchBinary.int(s, "warmup", "sent") == 4000)
        #expect((s["warmup"] as? [String: Any])?["by_status"] as? [String: Int] == ["200": 4000])
        #expect(PushbenchBinary.accountingHolds(s))
        // The gateway counts the whole run.
        let fcm = try #require((s["gateway"] as? [String: Any])?["fcm"] as? [String: Any], "gateway.fcm missing")
        #expect(PushbenchBinary.int(fcm, "requests") == 8000)
        #expect(PushbenchBinary.int(fcm, "messages_accepted") == 8000)
        #expect(PushbenchBinary.int(fcm, "device_deliveries") == 8000)
        #expect(PushbenchBinary.int(fcm, "validate_only") == 0 && PushbenchBinary.int(fcm, "topic_messages") == 0)
        #expect(fcm["by_code"] as? [String: Int] == [:])
        let rec = try #require(s["reconciliation"] as? [String: Any])
        #expect(rec["consistent"] as? Bool == true)
        #expect(rec["fcm_consistent"] as? Bool == true)
        #expect(PushbenchBinary.int(rec, "fcm_messages_accepted") == PushbenchBinary.int(rec, "client_ok"))
        #expect((s["config"] as? [String: Any])?["protocol"] as? String == "fcm")
        // No churn asked: no pruning keys.
        #expect(s["pruned_tokens"] == nil)
    }

    @Test func apnsRunHasNoFCMSection() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--requests", "200", "--rps", "1000", "--out", out.path, "--quiet"])
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        let gateway = try #require(s["gateway"] as? [String: Any])
        #expect(gateway["fcm"] == nil)
        #expect((s["reconciliation"] as? [String: Any])?["fcm_consistent"] == nil)
    }

    @Test func fcmErrorCodesReachByReasonAndMatchTheGateway() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--protocol", "fcm", "--rps", "2000", "--requests", "2000", "--out", out.path, "--quiet",
                                         "--gateway-arg=--fcm-fail=QUOTA_EXCEEDED=0.1", "--gateway-arg=--fcm-fail=UNREGISTERED=0.05"])
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        let byReason = PushbenchBinary.byReasonWholeRun(s)
        let byStatus = ((s["requests"] as? [String: Any])?["by_status"] as? [String: Int] ?? [:])
            .merging((s["warmup"] as? [String: Any])?["by_status"] as? [String: Int] ?? [:], uniquingKeysWith: +)
        let byCode = ((s["gateway"] as? [String: Any])?["fcm"] as? [String: Any])?["by_code"] as? [String: Int] ?? [:]
        #expect((byReason["QUOTA_EXCEEDED"] ?? 0) > 0 && (byReason["UNREGISTERED"] ?? 0) > 0, "\(byReason)")
        #expect(byReason["QUOTA_EXCEEDED"] == byCode["QUOTA_EXCEEDED"] && byReason["QUOTA_EXCEEDED"] == byStatus["429"])
        #expect(byReason["UNREGISTERED"] == byCode["UNREGISTERED"] && byReason["UNREGISTERED"] == byStatus["404"])
        #expect((s["reconciliation"] as? [String: Any])?["fcm_consistent"] as? Bool == true)
        // Injected UNREGISTERED answers are random, not per token: without --token-churn nothing is pruned.
        #expect(s["pruned_tokens"] == nil)
        #expect(PushbenchBinary.int(s, "requests", "sent") == 2000)
    }

    @Test func captureWritesTheApplePushesToCaptureJSON() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--protocol", "fcm", "--rps", "1000", "--requests", "300", "--capture", "7",
                                         "--out", out.path, "--quiet"])
        #expect(r.status == 0, "\(r.err)")
        let data = try Data(contentsOf: out.appendingPathComponent("latest/capture.json"))
        let entries = try #require(try JSONSerialization.jsonObject(with: data) as? [Any])
        #expect(entries.count == 7)
        for entry in entries {
            let push = try #require(entry as? [String: Any])
            let payload = try #require(push["payload"] as? [String: Any])
            #expect(payload["aps"] is [String: Any])
            let headers = try #require(push["headers"] as? [String: String])
            #expect(headers["apns-topic"] == "com.example.pushbench" && headers["apns-push-type"] == "alert")
            #expect((push["target"] as? String)?.hasPrefix("token:") == true)
        }
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.int(s["gateway"], "fcm", "captured") == 7)
    }

    @Test func fcmTokenFilesAreAcceptedAndBadOnesNamedByLine() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let good = dir.appendingPathComponent("fcm-tokens.txt")
        let long = "bk3RNwTe3H0:CI2k_HHwgIpoDKCIZvvDMExUdFQ3P1" + String(repeating: "aZ09_-", count: 35)
        try Data("# FCM registration tokens\n\(long)\n  dX9f-Q:APA91b.Example_token  \n\nshort\n".utf8).write(to: good)
        let r = try PushbenchBinary.run(["--protocol", "fcm", "--tokens", good.path, "--rps", "1000", "--requests", "90",
                                         "--capture", "3", "--out", dir.path, "--quiet"])
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(dir)
        #expect((s["requests"] as? [String: Any])?["by_status"] as? [String: Int] == ["200": 90])
        let captured = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: dir.appendingPathComponent("latest/capture.json"))) as? [[String: Any]])
        let targets = Set(captured.compactMap { $0["target"] as? String })
        #expect(targets == ["token:\(long)", "token:dX9f-Q:APA91b.Example_token", "token:short"])

        // The same file is not APNs tokens: exit 2 naming the line, with a hint.
        let apns = try PushbenchBinary.run(["--tokens", good.path, "--requests", "10", "--out", dir.path, "--quiet"])
        #expect(apns.status == 2)
        #expect(apns.err.contains("fcm-tokens.txt:2:") && apns.err.contains("--protocol fcm"), "\(apns.err)")

        let bad = dir.appendingPathComponent("bad.txt")
        try Data("good_token:1\nbad token/2\n".utf8).write(to: bad)
        let b = try PushbenchBinary.run(["--protocol", "fcm", "--tokens", bad.path, "--requests", "10", "--out", dir.path, "--quiet"])
        #expect(b.status == 2)
        #expect(b.err.contains("bad.txt:2:") && b.err.contains("FCM registration token") && b.err.contains("' '"), "\(b.err)")
    }
}
