import Foundation
import Testing

/// `--start-at` as an agent runs it: a time already past is refused (exit 2, naming it) unless
/// `--start-late-ok`, which keeps the global schedule and counts the missed requests late; a start that
/// passes while the connections are still coming up is refused too; summary.json `start` records how the
/// agent's first send met t0.
@Suite(.serialized) struct StartAtRunTests {
    /// Unix seconds with milliseconds, `offset` seconds from now, and the same instant in ns.
    private static func startAt(_ offset: Double) -> (text: String, ns: Int64) {
        let ms = Int64(((Date().timeIntervalSince1970 + offset) * 1000).rounded())
        return ("\(ms / 1000).\(String(format: "%03d", ms % 1000))", ms * 1_000_000)
    }

    @Test func aStartAlreadyPastIsRefusedNamingTheTime() throws {
        let r = try PushbenchBinary.run(["run", "--target", "http://127.0.0.1:9", "--rps", "100", "--duration", "1s",
                                         "--start-at", "2026-01-02T03:04:05.5Z"])
        #expect(r.status == 2, "\(r.err)")
        #expect(r.err.contains("--start-at: 2026-01-02T03:04:05.5Z is "), "\(r.err)")
        #expect(r.err.contains("s in the past (give a time ahead, or --start-late-ok"), "\(r.err)")
        #expect(!r.err.contains("127.0.0.1:9"), "refused before any connection: \(r.err)")
    }

    @Test func startLateOKKeepsTheScheduleAndCountsTheMissedRequestsLate() throws {
        let gateway = try LoopbackGatewayProcess()
        defer { gateway.stop() }
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        // t0 one second ago: at 200/s, the first 200-odd requests are already due when the agent is ready.
        let start = Self.startAt(-1)
        let r = try PushbenchBinary.run(["run", "--target", gateway.url, "--rps", "200", "--duration", "2s", "--connections", "1",
                                         "--start-at", start.text, "--start-late-ok", "--warmup", "0s", "--out", out.path, "--quiet"])
        #expect(r.status == 0, "\(r.out)\n\(r.err)")
        let s = try PushbenchBinary.summary(out)
        // t0 is the instant given, not moved to when the agent was ready.
        let t0 = (s["start"] as? [String: Any])?["t0_unix_ns"] as? Int
        #expect(t0.map(Int64.init) == start.ns, "\(String(describing: s["start"]))")
        #expect((s["start"] as? [String: Any])?["late_ok"] as? Bool == true)
        // The whole schedule went out, the missed part at once.
        #expect(PushbenchBinary.int(s, "requests", "sent") == 400)
        #expect(PushbenchBinary.accountingHolds(s))
        // Request 0 was due at t0 and went out at least a second late; the corrected latency counts that.
        let firstLate = PushbenchBinary.int(s, "start", "first_send_late_us")
        #expect(firstLate >= 1_000_000, "\(String(describing: s["start"]))")
        #expect(PushbenchBinary.int(s, "start", "first_send_after_t0_us") >= 1_000_000)
        #expect(PushbenchBinary.int(s, "latency_us", "max") >= firstLate - 1_000)
        // A quarter of the requests (g < 100) were due more than half a second before the first send:
        // had t0 been shifted to the ready time, every latency would be a loopback answer's.
        #expect(PushbenchBinary.int(s, "latency_us", "p50") >= 100_000 || PushbenchBinary.int(s, "latency_us", "p90") >= 500_000,
                "\(String(describing: s["latency_us"]))")
        #expect(PushbenchBinary.int(s, "service_time_us", "p90") < 500_000, "service time is not the lateness")
    }

    @Test func anAgentOnTimeRecordsItsFirstSendAgainstT0() throws {
        let gateway = try LoopbackGatewayProcess()
        defer { gateway.stop() }
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let start = Self.startAt(1.5)
        let r = try PushbenchBinary.run(["run", "--target", gateway.url, "--rps", "200", "--duration", "1s", "--connections", "1",
                                         "--segment", "1/2", "--start-at", start.text, "--warmup", "0s", "--out", out.path, "--quiet"])
        #expect(r.status == 0, "\(r.out)\n\(r.err)")
        let s = try PushbenchBinary.summary(out)
        let startBlock = s["start"] as? [String: Any] ?? [:]
        #expect((startBlock["t0_unix_ns"] as? Int).map(Int64.init) == start.ns)
        #expect(startBlock["start_at"] as? Bool == true && startBlock["late_ok"] as? Bool == false)
        // Segment 1 of 2 starts with global request 1, due 5 ms after t0.
        let late = try #require(startBlock["first_send_late_us"] as? Int, "\(startBlock)")
        let after = try #require(startBlock["first_send_after_t0_us"] as? Int, "\(startBlock)")
        #expect(late >= 0 && abs(after - late - 5_000) <= 1, "\(startBlock)")
        #expect(PushbenchBinary.int(s, "requests", "sent") == 100)
    }

    @Test func aStartThatPassesWhileConnectingIsRefused() throws {
        // A target that accepts at once but sends its SETTINGS only 2.5 s later (inside the 3 s connect bound):
        // the agent is not ready until after a start 1.2 s ahead.
        let script = """
        import socket, sys, threading, time
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0)); s.listen(16); s.settimeout(30)
        print(s.getsockname()[1], flush=True)
        def serve(c):
            time.sleep(2.5)
            try:
                c.sendall(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
                while c.recv(65536): pass
            except OSError: pass
        while True:
            try: c, _ = s.accept()
            except OSError: sys.exit(0)
            threading.Thread(target=serve, args=(c,), daemon=True).start()
        """
        let slow = Process()
        slow.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        slow.arguments = ["-c", script]
        let pipe = Pipe()
        slow.standardOutput = pipe
        try slow.run()
        defer { slow.terminate(); slow.waitUntilExit() }
        var line = ""
        while !line.contains("\n") {
            let data = pipe.fileHandleForReading.availableData
            if data.isEmpty { break }
            line += String(decoding: data, as: UTF8.self)
        }
        let port = try #require(Int(line.trimmingCharacters(in: .whitespacesAndNewlines)), "the slow target named no port: \(line)")
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let start = Self.startAt(1.2)
        let r = try PushbenchBinary.run(["run", "--target", "http://127.0.0.1:\(port)", "--rps", "100", "--duration", "1s",
                                         "--connections", "1", "--start-at", start.text, "--out", out.path, "--quiet"])
        #expect(r.status == 2, "\(r.out)\n\(r.err)")
        #expect(r.err.contains("--start-at: the start time passed "), "\(r.err)")
        #expect(r.err.contains("ms ago, before every connection was up (give a later time, or --start-late-ok"), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("latest").path), "no run folder")
    }
}
