import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The walk-through service (examples/pipeline/service.py: aiohttp, aioapns, firebase-admin, from
/// scripts/setup) under `pushbench pipeline`, with each fault docs/pipeline.md shows: what the page
/// says of each, held as tests. A missing Python package fails the test.
@Suite(.serialized) struct PipelineServiceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static func example(_ name: String) -> String { root.appendingPathComponent("examples/pipeline/\(name)").path }

    /// A port nothing listens on now (bound, read, closed).
    static func freePort() -> Int {
        let (fd, port) = boundSocket()
        close(fd)
        return port
    }

    /// Whether something accepts connections on 127.0.0.1:`port` within 10 s.
    static func waitForListener(_ port: Int) -> Bool {
        for _ in 0..<200 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            let r = withUnsafeMutablePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(fd)
            if r == 0 { return true }
            usleep(50_000)
        }
        return false
    }

    /// A socket listening on a free loopback port, and the port (the caller closes it).
    static func listeningSocket() -> (Int32, Int) {
        let (fd, port) = boundSocket()
        listen(fd, 4)
        return (fd, port)
    }

    private static func boundSocket() -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return (fd, Int(UInt16(bigEndian: addr.sin_port)))
    }

    /// Whether `GET /healthz` on 127.0.0.1:`port` answers 200 within 30 s (the service imports its
    /// libraries first), asked over a plain socket as a health check would.
    static func healthy(_ port: Int, while running: () -> Bool) -> Bool {
        let request = Array("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n".utf8)
        for _ in 0..<300 where running() {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            let connected = withUnsafeMutablePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if connected == 0, send(fd, request, request.count, 0) == request.count {
                var answer = [UInt8](repeating: 0, count: 64)
                let n = recv(fd, &answer, answer.count, 0)
                if n > 0, String(decoding: answer[0..<n], as: UTF8.self).hasPrefix("HTTP/1.1 200") { return true }
            }
            usleep(100_000)
        }
        return false
    }

    /// One service, started for one run (it trusts the CA of the egress it meets first).
    final class Service {
        let process = Process()
        let port = PipelineServiceTests.freePort()
        let log: URL

        init(egress: Int, ca: String, dir: URL, _ faults: [String]) throws {
            log = dir.appendingPathComponent("service.log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", PipelineServiceTests.example("service.py"), "--listen", "127.0.0.1:\(port)",
                                 "--apns", "https://127.0.0.1:\(egress)", "--fcm", "https://127.0.0.1:\(egress)", "--cafile", ca] + faults
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: log)
            try process.run()
            let process = process
            guard PipelineServiceTests.healthy(port, while: { process.isRunning }) else {
                stop()
                throw ServiceError(message: "the service did not start: \(text)")
            }
        }

        struct ServiceError: Error, CustomStringConvertible {
            var message: String
            var description: String { message }
        }

        var text: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

        /// SIGINT, as a user stops it; SIGKILL if it has not exited 5 s later.
        func stop() {
            if process.isRunning { process.interrupt() }
            for _ in 0..<50 where process.isRunning { usleep(100_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    struct Run {
        var status: Int32
        var err: String
        var pipeline: [String: Any]
        /// pipeline.csv's rows, by column name.
        var seconds: [[String: Int]]
        var service: String
        func count(_ key: String) -> Int { pipeline[key] as? Int ?? -1 }
        func endToEnd(_ key: String) -> Int { (pipeline["end_to_end_latency_us"] as? [String: Any])?[key] as? Int ?? -1 }
    }

    /// `pushbench pipeline` at `rps` requests a second against a fresh service with `faults`.
    static func run(_ request: String, requests: Int, rps: Int = 500, faults: [String] = [], _ extra: [String] = []) throws -> Run {
        let dir = PushbenchBinary.tempDir("pushbench-pipeline-service")
        defer { try? FileManager.default.removeItem(at: dir) }
        let egress = freePort()
        let ca = dir.appendingPathComponent("egress-ca.pem").path
        let service = try Service(egress: egress, ca: ca, dir: dir, faults)
        defer { service.stop() }
        let bin = try #require(PushbenchBinary.url, "build the pushbench binary first (swift build --build-tests)")
        let r = try PushbenchBinary.run(["120", bin.path, "pipeline", "--target", "http://127.0.0.1:\(service.port)",
                                         "--request", example(request), "--egress-listen", "127.0.0.1:\(egress)",
                                         "--tls-cert-out", ca, "--rps", "\(rps)", "--requests", "\(requests)", "--drain", "3s",
                                         "--out", dir.path, "--json"] + extra,
                                        executable: URL(fileURLWithPath: "/usr/bin/timeout"))
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any],
                                   "no summary: \(r.status) \(r.err) \(service.text)")
        let pipeline = try #require(summary["pipeline"] as? [String: Any], "\(summary.keys)")
        let runID = try #require(summary["run_id"] as? String)
        let csv = try String(contentsOf: dir.appendingPathComponent(runID).appendingPathComponent("pipeline.csv"), encoding: .utf8)
        let lines = csv.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let seconds = lines.dropFirst().map { Dictionary(uniqueKeysWithValues: zip(lines[0], $0.map { Int($0) ?? -1 })) }
        service.stop()
        return Run(status: r.status, err: r.err, pipeline: pipeline, seconds: Array(seconds), service: service.text)
    }

    /// The books close: every expected push delivered or lost, none left in flight after the drain.
    static func balanced(_ r: Run) -> Bool {
        r.count("expected") == r.count("delivered") + r.count("lost") && r.count("in_flight") == 0
    }

    @Test func aFanOutOfThreeGivesThreePushesPerRequest() throws {
        let r = try Self.run("notify-fanout.http", requests: 1000)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.count("expected") == 3000 && r.count("delivered") == 3000, "\(r.pipeline)")
        #expect(r.count("lost") == 0 && r.count("duplicated") == 0 && r.count("unexpected") == 0, "\(r.pipeline)")
        #expect((r.pipeline["by_route"] as? [String: [String: Int]])?["apns"]?["received"] == 3000, "\(r.pipeline)")
    }

    @Test func theFCMRouteIsMatchedToo() throws {
        let r = try Self.run("notify-fcm.http", requests: 400, rps: 200)
        #expect(r.status == 0, "\(r.err) \(r.service)")
        #expect(r.count("expected") == 400 && r.count("delivered") == 400 && r.count("unexpected") == 0, "\(r.pipeline)")
        #expect((r.pipeline["by_route"] as? [String: [String: Int]])?["fcm"]?["received"] == 400, "\(r.pipeline)")
    }

    @Test func droppingEveryHundredthRequestIsOnePercentLost() throws {
        let r = try Self.run("notify.http", requests: 2000, faults: ["--drop-every", "100"])
        #expect(r.status == 0, "\(r.err)")
        let lost = Double(r.count("lost")) / Double(r.count("expected"))
        #expect(abs(lost - 0.01) <= 0.002, "\(r.pipeline)")
        #expect(r.count("duplicated") == 0 && r.count("unexpected") == 0 && Self.balanced(r), "\(r.pipeline)")
        // The dropped requests stay in the backlog until the drain closes their books.
        #expect((r.seconds.map { $0["backlog"] ?? 0 }.max() ?? 0) >= 15, "\(r.seconds)")
    }

    @Test func retriesAfter500AreRetriesNotDuplicates() throws {
        let fail = "--gateway-arg=--fail=InternalServerError=5%"
        let retrying = try Self.run("notify.http", requests: 2000, faults: ["--retry"], [fail])
        #expect(retrying.status == 0, "\(retrying.err)")
        #expect(retrying.count("retried") > 0 && retrying.count("duplicated") == 0 && retrying.count("unexpected") == 0,
                "\(retrying.pipeline)")
        // A push lost after three 500s in a row is 1 in 8,000 at 5%.
        #expect(retrying.count("lost") <= 2 && Self.balanced(retrying), "\(retrying.pipeline)")
        #expect(retrying.count("refused_by_gateway") == retrying.count("retried") + retrying.count("lost"), "\(retrying.pipeline)")
        // Without --retry, the same answers are lost pushes and nothing is resent.
        let dropping = try Self.run("notify.http", requests: 2000, [fail])
        #expect(dropping.count("retried") == 0 && dropping.count("lost") > 0 && dropping.count("duplicated") == 0, "\(dropping.pipeline)")
        #expect(dropping.count("lost") == dropping.count("refused_by_gateway") && Self.balanced(dropping), "\(dropping.pipeline)")
    }

    @Test func aOneSecondStallShowsInTheBacklogAndTheTail() throws {
        let r = try Self.run("notify.http", requests: 1500, faults: ["--stall-at", "1", "--stall-for", "1"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.count("lost") == 0 && r.count("duplicated") == 0 && Self.balanced(r), "\(r.pipeline)")
        // Half a second's requests and more wait in the service during the stall ...
        let backlog = r.seconds.map { $0["backlog"] ?? 0 }.max() ?? 0
        #expect(backlog >= 100, "\(r.seconds)")
        // ... and the one that came in as it began waited the whole second.
        #expect(r.endToEnd("max") >= 800_000, "\(r.pipeline)")
        #expect(r.service.contains("the stall is over"), "\(r.service)")
    }

    @Test func aServiceThatDiesLeavesLostPushesNotAHang() throws {
        let r = try Self.run("notify.http", requests: 1500, faults: ["--die-after", "500"])
        #expect(r.service.contains("--die-after 500: exiting now"), "\(r.service)")
        // Request 500 was answered and never sent (as may be a few answered while it was being answered);
        // the requests after them found no service, and the run still ended.
        #expect((500...510).contains(r.count("expected")) && r.count("lost") >= 1 && Self.balanced(r), "\(r.pipeline)")
    }
}
