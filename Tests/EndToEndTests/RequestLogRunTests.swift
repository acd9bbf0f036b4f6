import Foundation
@testable import PushMetrics
import Testing

/// `--log FILE` and `report --slowest` on real runs against the embedded gateway: every request logged
/// exactly once, the log's latencies the histograms', the sample and the floor, a full disk, bad input.
@Suite(.serialized) struct RequestLogRunTests {
    /// The log's rows by column name.
    static func rows(_ path: String) throws -> [[String: String]] {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        let header = try #require(lines.first).split(separator: ",").map(String.init)
        return lines.dropFirst().map { line in
            let f = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            return Dictionary(uniqueKeysWithValues: zip(header, f))
        }
    }

    @Test func everyRequestOfATenThousandRequestRunIsLoggedOnce() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let log = out.appendingPathComponent("requests.csv").path
        let r = try PushbenchBinary.run(["run", "--requests", "10000", "--rps", "10000", "--gateway-arg=--latency=1ms-3ms",
                                         "--gateway-arg=--fail=BadDeviceToken=0.01", "--quiet", "--log", log, "--out", out.appendingPathComponent("r").path])
        #expect(r.status == 0, "\(r.err)")
        let s = try PushbenchBinary.summary(out.appendingPathComponent("r"))
        let rows = try Self.rows(log)
        #expect(rows.count == 10_000)
        #expect(Set(rows.compactMap { Int($0["seq"] ?? "") }) == Set(0..<10_000), "each sequence number exactly once")
        #expect(PushbenchBinary.int(s, "request_log", "written") == 10_000)
        #expect(PushbenchBinary.int(s, "request_log", "dropped") == 0)
        #expect((s["request_log"] as? [String: Any])?["path"] as? String == log)
        // The log's corrected latencies are the histogram's values: the same p99 within its precision.
        let h = HdrHistogram.latencyMicroseconds()
        for row in rows { h.record(Int64(row["latency_us"]!)!) }
        let p99 = Int64(PushbenchBinary.int(s, "latency_us", "p99"))
        #expect(abs(h.valueAtPercentile(99) - p99) <= max(1, p99 / 1000), "log p99 \(h.valueAtPercentile(99)) µs, summary \(p99) µs")
        #expect(rows.allSatisfy { Int($0["latency_us"]!)! >= 1_000 }, "the gateway's 1 ms is in every latency")
        #expect(rows.allSatisfy { (1...8).contains(Int($0["connection"]!)!) && Int($0["stream"]!)! % 2 == 1 })
        // Times are µs from t0, each truncated: the differences agree within 1 µs.
        #expect(rows.allSatisfy { abs(Int($0["late_us"]!)! - (Int($0["sent_us"]!)! - Int($0["intended_us"]!)!)) <= 1 })
        #expect(rows.allSatisfy { abs(Int($0["latency_us"]!)! - (Int($0["answered_us"]!)! - Int($0["intended_us"]!)!)) <= 1 })
        #expect(rows.allSatisfy { $0["push_id"]!.count == 36 && $0["request_bytes"] != "0" })
        let failed = rows.filter { $0["status"] == "400" }
        #expect(failed.count == PushbenchBinary.int(s, "requests", "failed"))
        #expect(failed.allSatisfy { $0["reason"] == "BadDeviceToken" && $0["response_bytes"] != "0" })

        // report --slowest: the slowest rows first, with connection, stream and lateness.
        let report = try PushbenchBinary.run(["report", out.appendingPathComponent("r/latest").path, "--slowest", "3"])
        #expect(report.status == 0, "\(report.err)")
        let lines = report.out.split(separator: "\n")
        #expect(lines.count == 5)
        #expect(lines[1].hasPrefix("seq  latency ms  late ms  service ms  sent at s  thread  conn  stream  status  reason"))
        let slowest = try #require(rows.max { Int($0["latency_us"]!)! < Int($1["latency_us"]!)! })
        let top = lines[2].split(separator: " ", omittingEmptySubsequences: true)
        #expect(top[0] == Substring(slowest["seq"]!))
        #expect(top[1] == Substring(String(format: "%.3f", Double(slowest["latency_us"]!)! / 1000)))
        #expect(top[6] == Substring(slowest["connection"]!) && top[7] == Substring(slowest["stream"]!))
    }

    /// An FCM run's log carries the message id each answer named, which `report --slowest` shows.
    @Test func anFCMRunLogsTheMessageIDOfEachAnswer() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let log = out.appendingPathComponent("fcm.csv").path
        let r = try PushbenchBinary.run(["run", "--protocol", "fcm", "--requests", "2000", "--rps", "4000", "--quiet",
                                         "--gateway-arg=--fcm-fail=UNAVAILABLE=0.05", "--log", log, "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        let rows = try Self.rows(log)
        #expect(rows.count == 2_000)
        let ok = rows.filter { $0["status"] == "200" }, failed = rows.filter { $0["status"] != "200" }
        #expect(ok.count > 1_800 && failed.count > 20, "\(ok.count) answered 200, \(failed.count) not")
        // The gateway's ids: "0:", a counter, "%", 16 hex digits; each its own.
        #expect(ok.allSatisfy { $0["push_id"]!.wholeMatch(of: /0:\d+%[0-9a-f]{16}/) != nil }, "\(ok.first ?? [:])")
        #expect(Set(ok.map { $0["push_id"]! }).count == ok.count)
        #expect(failed.allSatisfy { $0["push_id"] == "" && $0["reason"] == "UNAVAILABLE" })
        let report = try PushbenchBinary.run(["report", out.appendingPathComponent("latest").path, "--slowest", "2000"])
        #expect(report.status == 0, "\(report.err)")
        #expect(report.out.split(separator: "\n")[1].hasSuffix("push id"), "\(report.out.prefix(400))")
        #expect(ok.allSatisfy { report.out.contains($0["push_id"]!) })
    }

    @Test func aSampleKeepsItsFractionAndTheFloorItsLatency() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let sample = out.appendingPathComponent("sample.csv").path
        let r = try PushbenchBinary.run(["run", "--requests", "10000", "--rps", "10000", "--quiet", "--log", sample, "--log-sample", "10%",
                                         "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        let n = try Self.rows(sample).count
        #expect(n >= 900 && n <= 1_100, "\(n) of 10,000 at 10%")
        let slow = out.appendingPathComponent("slow.csv").path
        let s = try PushbenchBinary.run(["run", "--requests", "4000", "--rps", "4000", "--quiet", "--gateway-arg=--latency=1ms-3ms",
                                         "--log", slow, "--log-slower-than", "2ms", "--out", out.path])
        #expect(s.status == 0, "\(s.err)")
        let rows = try Self.rows(slow)
        #expect(rows.count > 0 && rows.count < 4_000)
        #expect(rows.allSatisfy { Int($0["latency_us"]!)! >= 2_000 })
    }

    /// A log on a full disk (/dev/full) stops with a warning; the run goes on and its results are whole.
    @Test func aFullDiskStopsTheLogNotTheRun() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["run", "--requests", "2000", "--rps", "4000", "--quiet", "--log", "/dev/full", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.contains("pushbench run: WARNING: --log /dev/full stopped after 0 records: No space left on device; the run went on"), "\(r.err)")
        let s = try PushbenchBinary.summary(out)
        #expect(PushbenchBinary.int(s, "requests", "completed") == 2_000)
        #expect((s["request_log"] as? [String: Any])?["stopped"] as? String == "No space left on device")
        let report = try PushbenchBinary.run(["report", out.appendingPathComponent("latest").path, "--slowest", "3"])
        #expect(report.status == 2)
    }

    @Test func badLogOptionsAreRefusedBeforeAnyTraffic() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        for (args, message) in [
            (["run", "--log-sample", "10%"], "pushbench run: --log-sample: only applies with --log FILE"),
            (["run", "--log", "x.csv", "--log-sample", "0"], "--log-sample: '0' logs nothing"),
            (["run", "--log", "x.csv", "--log-sample", "150%"], "--log-sample: '150%' is not a fraction"),
            (["run", "--log", "/nonexistent-dir/x.csv", "--requests", "10"], "pushbench run: --log: /nonexistent-dir/x.csv: No such file or directory"),
            (["report", "--history", "--slowest", "3"], "--slowest: reads one run's --log, not --history"),
        ] {
            let r = try PushbenchBinary.run(args + (args[0] == "run" ? ["--out", out.path] : []))
            #expect(r.status == 2, "\(args): \(r.err)")
            #expect(r.err.contains(message), "\(args): \(r.err)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty, "no traffic, no folder")
        // A run without a log has nothing to show.
        let plain = try PushbenchBinary.run(["run", "--requests", "100", "--rps", "1000", "--quiet", "--out", out.path])
        #expect(plain.status == 0)
        let report = try PushbenchBinary.run(["report", out.appendingPathComponent("latest").path, "--slowest", "3"])
        #expect(report.status == 2 && report.err.contains("the run kept no request log (run it with --log FILE)"), "\(report.err)")
    }
}
