import Foundation
import Testing

/// `--dashboard`'s limits as a user meets them: the viewer past `--dashboard-viewers` refused with the
/// reason, a viewer that never reads leaving the run and the other viewers alone, and bad values refused
/// before any traffic.
@Suite(.serialized) struct DashboardLimitTests {
    /// A raw viewer of /events on 127.0.0.1:`port`; `receiveBuffer` small for one that never reads.
    final class Viewer {
        let fd: Int32
        var received: [UInt8] = []
        var closed = false

        init(port: Int, receiveBuffer: Int32? = nil) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
            var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = in_port_t(UInt16(port).bigEndian)
            a.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard rc == 0 else { close(fd); throw POSIXError(.ECONNREFUSED) }
            let request = Array("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        deinit { close(fd) }

        var text: String { String(decoding: received, as: UTF8.self) }

        /// Reads until `done(text)`, the peer closes, or `seconds` pass; whether `done` held.
        @discardableResult
        func read(for seconds: Double, until done: (String) -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            var chunk = [UInt8](repeating: 0, count: 65536)
            while Date() < deadline && !closed {
                if done(text) { return true }
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n > 0 { received += chunk[0..<n] } else if n == 0 { closed = true }
            }
            return done(text)
        }
    }

    @Test func theNinthViewerIsRefusedAndOneThatNeverReadsHoldsNothingUp() throws {
        let bin = try #require(PushbenchBinary.url)
        let folder = PushbenchBinary.tempDir("pushbench-dashboard")
        defer { try? FileManager.default.removeItem(at: folder) }
        let results = folder.appendingPathComponent("results")
        let run = try DashboardBrowserTests.Child(
            bin, ["run", "--rps", "1000", "--duration", "5s", "--warmup", "1s", "--connections", "2", "--threads", "1", "--quiet",
                  "--dashboard", "127.0.0.1:0", "--out", results.path], in: folder, name: "run")
        defer { run.kill() }
        let port = try DashboardBrowserTests.dashboardPort(run)

        // The first never reads (a 4 kB receive buffer); seven more read.
        let stuck = try Viewer(port: port, receiveBuffer: 4096)
        var viewers: [Viewer] = []
        for _ in 0..<7 {
            let v = try Viewer(port: port)
            #expect(v.read(for: 10) { $0.contains("\r\n\r\n") })
            #expect(v.text.hasPrefix("HTTP/1.1 200 OK\r\n") && v.text.contains("content-type: text/event-stream"))
            viewers.append(v)
        }
        let ninth = try Viewer(port: port)
        ninth.read(for: 10) { _ in false }
        #expect(ninth.closed)
        #expect(ninth.text.hasPrefix("HTTP/1.1 503 "), "\(ninth.text)")
        #expect(ninth.text.hasSuffix("\r\n\r\nthe dashboard serves at most 8 viewers at once (--dashboard-viewers)\n"))

        // The run goes on to its end and its final event whatever the stuck viewer does.
        let reader = viewers[0]
        #expect(reader.read(for: 60) { $0.contains("event: final\n") })
        #expect(reader.text.contains("event: second\nid: 4\n"))
        #expect(run.wait(30), "the run did not end: \(run.stderr)")
        #expect(run.process.terminationStatus == 0, "\(run.stderr)")
        let summary = try PushbenchBinary.summary(results)
        #expect(PushbenchBinary.int(summary, "requests", "sent") == 5000)
        // Its stream ended with the run.
        stuck.read(for: 10) { _ in false }
        #expect(stuck.closed)
    }

    @Test func badValuesAreRefusedBeforeAnyTraffic() throws {
        let folder = PushbenchBinary.tempDir("pushbench-dashboard")
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("results").path
        // A port already taken.
        let taken = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(taken) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(taken, $0, length) } }
        _ = listen(taken, 1)
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(taken, $0, &length) } }
        let port = Int(UInt16(bigEndian: a.sin_port))

        for (args, expected) in [
            (["--dashboard-viewers", "0"], "--dashboard-viewers: "),
            (["--dashboard", "nowhere:80"], "--dashboard: "),
            (["--dashboard", ":99999"], "--dashboard: "),
            (["--dashboard-linger", "soon"], "--dashboard-linger: "),
            (["--dashboard", "127.0.0.1:\(port)"], "--dashboard: listen 127.0.0.1:\(port): bind: "),
            (["--encoder", "zerocopy,copy", "--dashboard", "127.0.0.1:0"], "--dashboard: watches one encoder's run"),
        ] {
            let r = try PushbenchBinary.run(["run", "--rps", "100", "--duration", "1s", "--quiet", "--out", out] + args)
            #expect(r.status == 2, "\(args): \(r.err)")
            let lines = r.err.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains(expected), "\(args): \(r.err)")
            #expect(!FileManager.default.fileExists(atPath: out + "/latest"), "\(args) sent traffic")
        }
    }
}
