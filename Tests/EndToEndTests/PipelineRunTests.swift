import Foundation
import PushMetrics
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `pushbench pipeline` as a user runs it: bad input refused before any traffic, and a pass-through
/// relay (nghttpx, h2 to h2 over TLS) as the service, whose every push must be matched.
@Suite(.serialized) struct PipelineRunTests {
    static func write(_ text: String, _ dir: URL, _ name: String) -> String {
        let url = dir.appendingPathComponent(name)
        try? text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    static let apnsRequest = """
        POST /3/device/abababababababababababababababababababababababababababababababab HTTP/1.1
        apns-topic: com.example.app
        apns-push-type: alert

        {"aps":{"alert":{"title":"Score","body":"1-0"}},"pipeline_id":"{{pipeline_id}}"}
        """

    @Test func badInputIsOneLineAndExit2BeforeAnyTraffic() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let noID = Self.write("POST /notify\ncontent-type: application/json\n\n{\"tokens\":{{tokens:1}}}\n", dir, "noid.http")
        let badTemplate = Self.write("POST /notify\n\n{\"id\":\"{{pipeline_id}}\",\n\"x\":{{nope}}}\n", dir, "bad.http")
        let good = Self.write(Self.apnsRequest, dir, "good.http")
        // Nothing listens at the target: every one of these must fail on its input before trying it.
        let target = "http://127.0.0.1:\(PipelineServiceTests.freePort())"
        let base = ["pipeline", "--target", target, "--egress-listen", "127.0.0.1:\(PipelineServiceTests.freePort())", "--out", dir.path,
                    "--duration", "1s"]
        let cases: [([String], String)] = [
            (["--request", noID], "has no {{pipeline_id}} in its body"),
            (["--request", dir.appendingPathComponent("missing.http").path], "missing.http"),
            (["--request", badTemplate], "bad.http:4:"),
            (["--request", good, "--rps", "max"], "needs a rate"),
            (["--request", good, "--h2c", "--http1"], "--http1"),
        ]
        for (args, expected) in cases {
            let r = try PushbenchBinary.run(base + args)
            #expect(r.status == 2, "\(args): \(r.err)")
            #expect(r.err.contains(expected), "\(args): \(r.err)")
            #expect(r.err.split(separator: "\n").count == 1, "one line: \(r.err)")
        }
        let missingEgress = try PushbenchBinary.run(["pipeline", "--target", target, "--request", good, "--out", dir.path])
        #expect(missingEgress.status == 2 && missingEgress.err.contains("--egress-listen"))
        // --no-correlation accepts a request without an id.
        let uncorrelated = try PushbenchBinary.run(base + ["--request", noID, "--no-correlation"])
        #expect(uncorrelated.status == 3, "the target is down, and that is the next thing found: \(uncorrelated.err)")
    }

    @Test func anEgressAddressInUseIsExit2() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let good = Self.write(Self.apnsRequest, dir, "good.http")
        let (fd, port) = PipelineServiceTests.listeningSocket()
        defer { close(fd) }
        let r = try PushbenchBinary.run(["pipeline", "--target", "http://127.0.0.1:\(PipelineServiceTests.freePort())", "--request", good,
                                         "--egress-listen", "127.0.0.1:\(port)", "--out", dir.path, "--duration", "1s"])
        #expect(r.status == 2, "\(r.err)")
        #expect(r.err.contains("--egress-listen") && r.err.contains("in use"), "\(r.err)")
    }

    /// nghttpx as the service: a pure relay, h2 over TLS on both sides. 100,000 requests, each one push:
    /// nothing lost, duplicated or unexpected, and since the relay answers only after the egress did,
    /// each push arrives before its front-door answer: the end-to-end percentiles lie below the
    /// front door's.
    @Test func aPassThroughRelayLosesNothing() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let egress = PipelineServiceTests.freePort()
        let relay = try PassThroughRelay(egress: egress, dir: dir, tlsFront: true, tlsBack: true)
        defer { relay.stop() }
        let front = relay.port, cert = try #require(relay.cert)
        let request = Self.write(Self.apnsRequest, dir, "apns.http")
        let r = try PushbenchBinary.run(["pipeline", "--target", "https://127.0.0.1:\(front)", "--cacert", cert, "--request", request,
                                         "--egress-listen", "127.0.0.1:\(egress)", "--rps", "10000", "--requests", "100000",
                                         "--connections", "4", "--out", dir.path, "--quiet"])
        #expect(r.status == 0, "\(r.out)\n\(r.err)")
        let s = try PushbenchBinary.summary(dir)
        let p = s["pipeline"] as? [String: Any]
        #expect(PushbenchBinary.int(p, "expected") == 100_000, "\(p ?? [:])")
        #expect(PushbenchBinary.int(p, "delivered") == 100_000)
        #expect(PushbenchBinary.int(p, "lost") == 0 && PushbenchBinary.int(p, "duplicated") == 0 && PushbenchBinary.int(p, "unexpected") == 0)
        #expect(PushbenchBinary.int(p, "by_route", "apns", "received") == 100_000)
        for q in ["p50", "p90", "p99", "max"] {
            let e2e = PushbenchBinary.int(p, "end_to_end_latency_us", q), door = PushbenchBinary.int(s, "latency_us", q)
            #expect(e2e > 0 && e2e <= door, "\(q): end to end \(e2e) µs, front door \(door) µs")
        }
        let folder = dir.appendingPathComponent("latest")
        for file in ["e2e_latency.hgrm", "e2e_latency.hlog", "pipeline.csv"] {
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent(file).path), "\(file)")
        }
    }

    /// `--log` on a pipeline run: one file with a line per request and a line per push that reached the
    /// egress, each exactly once, every push joined to its request by the pipeline id.
    @Test func theLogHasEveryRequestAndEveryPushOnce() throws {
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let egress = PipelineServiceTests.freePort()
        let relay = try PassThroughRelay(egress: egress, dir: dir, tlsFront: false, tlsBack: false)
        defer { relay.stop() }
        let request = Self.write(Self.apnsRequest, dir, "apns.http")
        let log = dir.appendingPathComponent("pipeline-log.csv").path
        // The request's token (in its path) is the third of the run's tokens: the pushes' lines name it by that index.
        let tokens = Self.write([String(repeating: "cd", count: 32), String(repeating: "ef", count: 32),
                                 String(repeating: "AB", count: 32)].joined(separator: "\n") + "\n", dir, "tokens.txt")
        let r = try PushbenchBinary.run(["pipeline", "--target", "http://127.0.0.1:\(relay.port)", "--h2c", "--request", request,
                                         "--egress-listen", "127.0.0.1:\(egress)", "--egress-h2c", "--rps", "2000", "--requests", "10000",
                                         "--tokens", tokens, "--log", log, "--out", dir.path, "--quiet"])
        #expect(r.status == 0, "\(r.out)\n\(r.err)")
        let s = try PushbenchBinary.summary(dir)
        let p = s["pipeline"] as? [String: Any]
        #expect(PushbenchBinary.int(p, "delivered") == 10_000, "\(p ?? [:])")
        let rows = try RequestLogRunTests.rows(log)
        let requests = rows.filter { $0["kind"] == "request" }, arrivals = rows.filter { $0["kind"] == "arrival" }
        #expect(requests.count == 10_000 && arrivals.count == 10_000 && rows.count == 20_000)
        #expect(PushbenchBinary.int(s, "request_log", "written") == 20_000 && PushbenchBinary.int(s, "request_log", "arrivals") == 10_000)
        #expect(Set(requests.map { $0["seq"]! }).count == 10_000 && Set(arrivals.map { $0["seq"]! }).count == 10_000)
        let prefix = try #require(p?["id_prefix"] as? String)
        let byID = Dictionary(uniqueKeysWithValues: requests.map { ($0["pipeline_id"]!, $0) })
        #expect(byID.count == 10_000 && byID.keys.allSatisfy { $0.hasPrefix(prefix) })
        for a in arrivals {
            guard let req = byID[a["pipeline_id"]!] else {
                Issue.record("a push of no logged request: \(a)")
                break
            }
            #expect(a["seq"] == req["seq"] && a["intended_us"] == req["intended_us"])
            #expect(a["route"] == "apns" && a["status"] == "200" && a["arrival"] == "delivered" && a["phase"] == "measured")
            #expect(a["token"] == "2", "\(a)")
            // The push left the relay after the request reached it, and the latency is end to end.
            #expect(Int(a["answered_us"]!)! >= Int(req["sent_us"]!)!, "\(a) \(req)")
            #expect(abs(Int(a["latency_us"]!)! - (Int(a["answered_us"]!)! - Int(a["intended_us"]!)!)) <= 1)
        }
        // The pushes' latencies are the end-to-end histogram's.
        let h = HdrHistogram.latencyMicroseconds()
        for a in arrivals { h.record(Int64(a["latency_us"]!)!) }
        let p99 = Int64(PushbenchBinary.int(p, "end_to_end_latency_us", "p99"))
        #expect(abs(h.valueAtPercentile(99) - p99) <= max(1, p99 / 1000), "log p99 \(h.valueAtPercentile(99)) µs, summary \(p99) µs")
        // report --slowest ranks the requests only.
        let report = try PushbenchBinary.run(["report", dir.appendingPathComponent("latest").path, "--slowest", "5"])
        #expect(report.status == 0 && report.out.split(separator: "\n").count == 7, "\(report.out)\(report.err)")
    }

    /// A gateway started apart (`pushbench gateway --correlate-prefix`) as the egress, given to the run
    /// with `--egress-url`, behind nghttpx as an h2c relay: every push matched, none lost. A gateway
    /// that does not match is refused before any traffic.
    @Test func aGatewayStartedApartServesAsTheEgress() throws {
        let bin = try #require(PushbenchBinary.url, "build the pushbench binary first (swift build --build-tests)")
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let egress = PipelineServiceTests.freePort(), plain = PipelineServiceTests.freePort()
        var gateways: [Process] = []
        defer { for g in gateways { kill(g.processIdentifier, SIGKILL); g.waitUntilExit() } }
        for (port, extra) in [(egress, ["--correlate-prefix", "pb-1234-"]), (plain, [])] {
            let g = Process()
            g.executableURL = bin
            g.arguments = ["gateway", "--listen", "127.0.0.1:\(port)"] + extra
            g.standardOutput = FileHandle.nullDevice
            g.standardError = FileHandle.nullDevice
            try g.run()
            gateways.append(g)
            #expect(PipelineServiceTests.waitForListener(port), "the gateway did not listen on \(port)")
        }
        let relay = try PassThroughRelay(egress: egress, dir: dir, tlsFront: false, tlsBack: false)
        defer { relay.stop() }
        let front = relay.port
        let request = Self.write(Self.apnsRequest, dir, "apns.http")
        let base = ["pipeline", "--target", "http://127.0.0.1:\(front)", "--h2c", "--request", request, "--out", dir.path]
        let r = try PushbenchBinary.run(base + ["--egress-url", "http://127.0.0.1:\(egress)", "--rps", "2000", "--requests", "10000", "--quiet"])
        #expect(r.status == 0, "\(r.out)\n\(r.err)")
        let p = try PushbenchBinary.summary(dir)["pipeline"] as? [String: Any]
        #expect(PushbenchBinary.int(p, "expected") == 10_000 && PushbenchBinary.int(p, "delivered") == 10_000, "\(p ?? [:])")
        #expect(PushbenchBinary.int(p, "lost") == 0 && PushbenchBinary.int(p, "unexpected") == 0)
        #expect((p?["id_prefix"] as? String) == "pb-1234-")
        #expect(PushbenchBinary.int(p, "end_to_end_latency_us", "count") == 10_000)

        let notMatching = try PushbenchBinary.run(base + ["--egress-url", "http://127.0.0.1:\(plain)", "--rps", "100", "--duration", "1s"])
        #expect(notMatching.status == 2 && notMatching.err.contains("--correlate-prefix"), "\(notMatching.err)")
        let both = try PushbenchBinary.run(base + ["--egress-url", "http://127.0.0.1:\(egress)", "--egress-listen", "127.0.0.1:\(plain)"])
        #expect(both.status == 2 && both.err.contains("--egress-listen"), "\(both.err)")
    }
}
