import Foundation
import Testing

/// `pushbench gateway` as a user runs it: the built binary (from `swift build --build-tests`).
@Suite(.serialized) struct GatewayCommandTests {
    var binary: String? { pushbenchBinary }

    @Test(arguments: [
        (["--threads", "0"], "pushbench gateway: --threads: 0 is out of range (1...64) (see 'pushbench gateway --help')"),
        (["--latency", "soon"], "pushbench gateway: --latency: 'soon' is not a latency (e.g. 2ms, 1ms-5ms, p50=1ms,p99=10ms) (see 'pushbench gateway --help')"),
        (["--fail", "Nope=1"], "pushbench gateway: --fail: 'Nope' is not an APNs reason (e.g. InternalServerError) (see 'pushbench gateway --help')"),
        (["--bogus"], "pushbench gateway: unknown option '--bogus' (see 'pushbench gateway --help')"),
    ])
    func badFlagExits2WithOneLineNamingIt(_ c: ([String], String)) throws {
        let bin = try #require(binary, "build pushbench first (swift build --build-tests)")
        let r = try runProcess(bin, ["gateway"] + c.0, timeout: 30)
        #expect(r.status == 2)
        #expect(r.stderr == c.1 + "\n")
        #expect(r.stdout.isEmpty)
    }

    @Test func malformedScenarioExits2NamingFileAndField() throws {
        let bin = try #require(binary, "build pushbench first (swift build --build-tests)")
        let path = NSTemporaryDirectory() + "pushbench-bad-scenario-\(getpid()).json"
        try #"{"latency": {"uniform_ms": [5, 1]}}"#.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try runProcess(bin, ["gateway", "--scenario", path], timeout: 30)
        #expect(r.status == 2)
        #expect(r.stderr.hasPrefix("pushbench gateway: scenario \(path): field 'latency.uniform_ms': the minimum is above the maximum"))
        #expect(r.stderr.split(separator: "\n").count == 1)
    }

    @Test func badTokenTopicsFileExits2NamingFileAndLine() throws {
        let bin = try #require(binary, "build pushbench first (swift build --build-tests)")
        let file = try temporaryFile("cli-topics.txt", "\(validToken) com.example.app\n\(validToken)\n")
        defer { file.remove() }
        let r = try runProcess(bin, ["gateway", "--token-topics", file.path], timeout: 30)
        #expect(r.status == 2)
        #expect(r.stderr.hasPrefix("pushbench gateway: --token-topics: \(file.path):2: token has no topic"))
        #expect(r.stderr.split(separator: "\n").count == 1)
    }

    @Test func sigtermStopsGracefullyPrintsFinalStatsAndExits0() throws {
        let bin = try #require(binary, "build pushbench first (swift build --build-tests)")
        let child = try startProcess(bin, ["gateway", "--listen", "127.0.0.1:0", "--threads", "2"])
        // The first line names the bound port.
        var port = 0
        let deadline = Date().addingTimeInterval(30)
        var seen = ""
        while port == 0 && Date() < deadline {
            usleep(50_000)
            seen = child.peekStdout()
            if let r = seen.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                port = Int(seen[r].split(separator: ":").last!) ?? 0
            }
        }
        #expect(port > 0, "no listening line: \(seen)")
        if port > 0 {
            let r = try probe(port: port, [probeRequest(), probeRequest(headers: [])])
            #expect(r.streams.map(\.status) == [200, 400])
        }
        kill(child.process.processIdentifier, SIGTERM)
        let out = child.finish(timeout: 30)
        #expect(!out.timedOut)
        #expect(out.status == 0)
        let last = out.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix(#"{"requests":2,"by_status":{"200":1,"400":1},"by_reason":{"MissingTopic":1}"#), "\(out.stdout)")
        #expect(last.contains(#""connections_open":0"#))
    }
}
