import Foundation
import Testing

/// A target that dies in the middle of a run, and a gateway told where to listen the way people write it.
@Suite(.serialized) struct DyingTargetTests {
    var binary: String? { pushbenchBinary }

    /// Waits for `pattern` in the child's standard output; returns the match.
    func waitFor(_ child: Child, _ pattern: String, timeout: Double = 30) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let seen = child.peekStdout()
            if let r = seen.range(of: pattern, options: .regularExpression) { return String(seen[r]) }
            usleep(20_000)
        }
        return nil
    }

    /// The top-level `requests` of a /stats response (its HTTP/1.1 text), or 0.
    static func requestsAnswered(_ response: String?) -> Int {
        guard let response, let body = response.range(of: "\r\n\r\n").map({ response[$0.upperBound...] }),
              let json = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else { return 0 }
        return json["requests"] as? Int ?? 0
    }

    @Test func aTargetThatDiesMidRunLooksDeadInTheSummary() throws {
        let bin = try #require(binary, "build pushbench first (swift build --build-tests)")
        let gateway = try startProcess(bin, ["gateway", "--listen", "127.0.0.1:0"])
        let address = try #require(waitFor(gateway, #"127\.0\.0\.1:\d+"#), "no listening line: \(gateway.peekStdout())")
        let out = NSTemporaryDirectory() + "pushbench-dying-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let run = try startProcess(bin, ["--target", "http://\(address)", "--rps", "200", "--duration", "10s", "--warmup", "0s",
                                         "--out", out])
        // The target dies once it has answered requests of the run, as its own /stats says (the top-level
        // count: this test's own GETs count under "http1"), read in this
        // process: on a busy machine the child's progress lines, and a curl spawned to ask, reached this
        // test seconds late, after the run had ended.
        var answered = false
        let deadline = Date().addingTimeInterval(30)
        while !answered && Date() < deadline {
            answered = Self.requestsAnswered(httpGet(address, "/stats")) > 0
            if !answered { usleep(20_000) }
        }
        #expect(answered, "the gateway answered nothing of the run: \(run.peekStdout())")
        kill(gateway.process.processIdentifier, SIGKILL)
        #expect(run.process.isRunning, "the run ended before its target was killed: \(run.peekStdout())")
        _ = gateway.finish(timeout: 10)
        let r = run.finish(timeout: 60)
        #expect(r.status == 0, "it completed, with what it measured: \(r.stdout)\(r.stderr)")
        #expect(r.stdout.range(of: #"connections opened \d+  lost [1-9]"#, options: .regularExpression) != nil, "\(r.stdout)")
        #expect(r.stdout.range(of: #"connect failures [1-9]"#, options: .regularExpression) != nil, "\(r.stdout)")
        #expect(r.stdout.contains("due but never sent"), "\(r.stdout)")
        #expect(r.stdout.contains("not in these figures: "), "\(r.stdout)")
        #expect(r.stderr.contains("WARNING: the rate was not kept") && r.stderr.contains("the target did not keep up"), "\(r.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: out + "/latest/summary.json"))
        let s = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let throughput = try #require(s["throughput"] as? [String: Any])
        #expect(throughput["rate_kept"] as? Bool == false && throughput["rate_shortfall"] as? String == "target")
        let accounting = try #require(s["accounting"] as? [String: Any])
        #expect((accounting["not_sent"] as? Int ?? 0) > 0 && (accounting["not_in_latency"] as? Int ?? 0) > 0)
    }

    /// A --tls target restarted with a new CA: the run's reconnects fail to verify its certificate, and
    /// the warning says so, naming the CA file the run trusts, instead of blaming a target that went away.
    @Test func aTargetRestartedWithANewCAIsBlamedOnItsCertificate() throws {
        let bin = try #require(binary, "build pushbench first (swift build --build-tests)")
        let dir = NSTemporaryDirectory() + "pushbench-newca-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try startProcess(bin, ["gateway", "--listen", "127.0.0.1:0", "--tls", "--tls-cert-out", dir + "/old.pem"])
        let address = try #require(waitFor(first, #"127\.0\.0\.1:\d+"#), "no listening line: \(first.peekStdout())")
        let run = try startProcess(bin, ["--target", "https://\(address)", "--cacert", dir + "/old.pem", "--rps", "200",
                                         "--duration", "6s", "--warmup", "0s", "--out", dir + "/out"])
        usleep(1_500_000)
        kill(first.process.processIdentifier, SIGKILL)
        _ = first.finish(timeout: 10)
        let second = try startProcess(bin, ["gateway", "--listen", address, "--tls", "--tls-cert-out", dir + "/new.pem"])
        #expect(waitFor(second, "listening on") != nil, "\(second.peekStdout())")
        let r = run.finish(timeout: 60)
        kill(second.process.processIdentifier, SIGTERM)
        _ = second.finish(timeout: 30)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("connect failures: the certificate of 127.0.0.1:"), "\(r.stderr)")
        #expect(r.stderr.contains("no longer verifies (certificate verify failed: "), "\(r.stderr)")
        #expect(r.stderr.contains("against the CAs the run trusts: those in \(dir)/old.pem (--cacert)"), "\(r.stderr)")
        #expect(!r.stderr.contains("the target did not keep up") && !r.stderr.contains("went away"), "\(r.stderr)")
    }

    @Test func theGatewayListensOnAHostNameAndABarePort() throws {
        let bin = try #require(binary, "build pushbench first (swift build --build-tests)")
        let named = try startProcess(bin, ["gateway", "--listen", "localhost:0"])
        let address = waitFor(named, #"listening on 127\.0\.0\.1:\d+"#)
        #expect(address != nil, "\(named.peekStdout())")
        // The same port again: in use, a bad --listen, exit 2 in one line.
        if let port = address?.split(separator: ":").last {
            let busy = try runProcess(bin, ["gateway", "--listen", ":\(port)"], timeout: 30)
            #expect(busy.status == 2, "\(busy.stderr)")
            #expect(busy.stderr.hasPrefix("pushbench gateway: --listen: cannot listen 127.0.0.1:\(port): "), "\(busy.stderr)")
        }
        kill(named.process.processIdentifier, SIGTERM)
        _ = named.finish(timeout: 30)
        // An address of no interface of this host (TEST-NET-1): one line naming it, no warning before it.
        let elsewhere = try runProcess(bin, ["gateway", "--listen", "192.0.2.1:8443"], timeout: 30)
        #expect(elsewhere.status == 2, "\(elsewhere.stderr)")
        #expect(elsewhere.stderr == "pushbench gateway: --listen: cannot listen 192.0.2.1:8443: no interface of this host has the"
                + " address 192.0.2.1 (uv_tcp_bind: address not available (-99))\n", "\(elsewhere.stderr)")
        let unknown = try runProcess(bin, ["gateway", "--listen", "no-such-host.invalid:0"], timeout: 60)
        #expect(unknown.status == 2)
        #expect(unknown.stderr.hasPrefix("pushbench gateway: --listen: 'no-such-host.invalid:0': cannot resolve 'no-such-host.invalid'"),
                "\(unknown.stderr)")
    }
}
