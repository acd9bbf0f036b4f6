import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `pushbench pipeline --slo` and `--log` through a pass-through relay (nghttpx) as the service: the
/// pipeline metrics judged, exit 6 on the one set to fail, a log line per front-door request.
@Suite(.serialized) struct PipelineObjectiveTests {
    /// A port nothing listens on now (bound, read, closed).
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
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

    static let apnsRequest = """
        POST /3/device/abababababababababababababababababababababababababababababababab HTTP/1.1
        apns-topic: com.example.app
        apns-push-type: alert

        {"aps":{"alert":{"title":"Score","body":"1-0"}},"pipeline_id":"{{pipeline_id}}"}
        """

    @Test func pipelineObjectivesAndLog() throws {
        let nghttpx = try #require(["/usr/sbin/nghttpx", "/usr/bin/nghttpx"].first { FileManager.default.isExecutableFile(atPath: $0) },
                                   "nghttpx is missing (scripts/setup installs nghttp2-proxy)")
        let dir = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = dir.appendingPathComponent("relay-key.pem").path, cert = dir.appendingPathComponent("relay-cert.pem").path
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=localhost",
                             "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert, "-days", "1"]
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        #expect(openssl.terminationStatus == 0)
        let egress = Self.freePort(), front = Self.freePort()
        let relay = Process()
        relay.executableURL = URL(fileURLWithPath: nghttpx)
        // --conf=/dev/null: a system nghttpx.conf (Debian ships one with errorlog-syslog) must not apply.
        relay.arguments = ["--conf=/dev/null", "-f127.0.0.1,\(front)", "-b127.0.0.1,\(egress);;proto=h2;tls", "--insecure", "--no-ocsp", "--workers=1",
                           "--backend-connections-per-host=2", "--errorlog-file=/dev/null", key, cert]
        relay.standardOutput = FileHandle.nullDevice
        relay.standardError = FileHandle.nullDevice
        try relay.run()
        // Children start with SIGTERM blocked (Foundation), so only SIGKILL ends nghttpx for sure.
        defer { kill(relay.processIdentifier, SIGKILL); relay.waitUntilExit() }
        #expect(Self.waitForListener(front), "nghttpx did not listen")
        let request = dir.appendingPathComponent("apns.http").path
        try Self.apnsRequest.write(toFile: request, atomically: true, encoding: .utf8)
        let log = dir.appendingPathComponent("front-door.csv").path
        let junit = dir.appendingPathComponent("junit.xml").path
        let r = try PushbenchBinary.run(["pipeline", "--target", "https://127.0.0.1:\(front)", "--cacert", cert, "--request", request,
                                         "--egress-listen", "127.0.0.1:\(egress)", "--rps", "2000", "--requests", "4000",
                                         "--connections", "2", "--out", dir.path, "--quiet",
                                         "--slo", "lost_rate<=0", "--slo", "duplicate_rate<=0", "--slo", "e2e_p99<10s",
                                         "--slo", "e2e_p50<1us", "--slo", "p99<10s", "--log", log, "--junit", junit])
        #expect(r.status == 6, "e2e_p50<1us cannot hold: \(r.out)\n\(r.err)")
        let s = try PushbenchBinary.summary(dir)
        let o = try #require(s["objectives"] as? [String: Any])
        let results = try #require(o["results"] as? [[String: Any]])
        let byName = Dictionary(uniqueKeysWithValues: results.map { ($0["objective"] as? String ?? "", $0) })
        for (name, held) in [("lost_rate<=0", true), ("duplicate_rate<=0", true), ("e2e_p99<10s", true), ("e2e_p50<1us", false), ("p99<10s", true)] {
            #expect(byName[name]?["passed"] as? Bool == held, "\(name): \(byName[name] ?? [:])")
        }
        #expect(byName["lost_rate<=0"]?["measured"] as? Double == 0)
        #expect((byName["e2e_p50<1us"]?["measured"] as? Double ?? 0) >= 1)
        #expect(r.out.contains("FAIL  e2e_p50<1us"))
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 4_001, "a header and a line per front-door request")
        #expect(PushbenchBinary.int(s, "request_log", "written") == 4_000)
        #expect(try String(contentsOfFile: junit, encoding: .utf8).contains("<testcase name=\"e2e_p50&lt;1us\""))
    }
}
