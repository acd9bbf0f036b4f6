import Dispatch
import Foundation
@testable import PushTransport
import Synchronization
import Testing

/// A peer program a test needs is not installed (scripts/setup installs every one).
struct MissingPeer: Error, CustomStringConvertible {
    var name: String
    var description: String { "\(name) is not installed; scripts/setup installs it" }
}

/// Interoperability with real HTTP/2 peers: nghttpd (server), h2load and curl (clients). A missing
/// peer fails the test: passing without the peer would say nothing about interoperability.
@Suite struct RealPeerTests {
    /// The path of peer program `name`.
    static func peer(_ name: String) throws -> String {
        for dir in ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/bin"] where FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") {
            return "\(dir)/\(name)"
        }
        throw MissingPeer(name: name)
    }

    @Test func aMissingPeerFailsInsteadOfSkipping() throws {
        #expect(throws: MissingPeer.self) { try Self.peer("pushbench-no-such-peer") }
        #expect(try Self.peer("curl").hasSuffix("/curl"))
    }

    /// Runs a process to completion (bounded by `timeout`), returning (status, stdout).
    static func run(_ path: String, _ args: [String], timeout: Double = 120) throws -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        // Output goes to a file: a Pipe read can die on EINTR inside Foundation.
        let outURL = FileManager.default.temporaryDirectory.appendingPathComponent("pb-out-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outURL) }
        let out = try FileHandle(forWritingTo: outURL)
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(20_000) }
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        try? out.close()
        let data = (try? Data(contentsOf: outURL)) ?? Data()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A free TCP port on 127.0.0.1 (bound and released; a race with other processes is unlikely in tests).
    static func freePort() throws -> Int {
        let loop = try EventLoop()
        let s = HTTP2Server(loop: loop, delegate: nil)
        let port = try s.listen(host: "127.0.0.1", port: 0)
        s.close()
        loop.close()
        return port
    }

    /// Our server on its own thread and loop; answers 200 with a JSON body and an `x-body-length` header.
    final class BackgroundServer: Sendable {
        let port: Int
        private let handle: EventLoopHandle
        private let done = DispatchSemaphore(value: 0)

        /// A server on a free loopback port, over TLS when `tls` is given; HTTP/1.1 too with `servesHTTP1`.
        init(tls: TLSServerContext? = nil, servesHTTP1: Bool = false) throws {
            let ready = DispatchSemaphore(value: 0)
            let info = Mutex<(Int, EventLoopHandle?)>((0, nil))
            let done = self.done
            let thread = Thread { [done] in
                do {
                    let loop = try EventLoop()
                    do {
                        var config = HTTP2ServerConfiguration()
                        config.tls = tls
                        config.servesHTTP1 = servesHTTP1
                        let server = try TestServer(loop: loop, configuration: config)
                        info.withLock { $0 = (server.port, loop.handle) }
                        ready.signal()
                        loop.run()
                        withExtendedLifetime(server) {}
                    }
                    loop.close()
                } catch {
                    ready.signal()
                }
                done.signal()
            }
            thread.start()
            ready.wait()
            let (p, h) = info.withLock { $0 }
            guard let h else { throw TransportError(kind: .closedLocally, code: 0, function: "BackgroundServer") }
            port = p
            handle = h
        }

        func stop() {
            handle.stop()
            _ = done.wait(timeout: .now() + 30)
        }
    }

    @Test func ourClientAgainstNghttpd() throws {
        let nghttpd = try Self.peer("nghttpd")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pb-nghttpd-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let content = Array(repeating: Array("pushbench file\n".utf8), count: 100).flatMap { $0 }
        try Data(content).write(to: dir.appendingPathComponent("hello.txt"))
        let port = try Self.freePort()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: nghttpd)
        p.arguments = ["--no-tls", "-d", dir.path, "--address=127.0.0.1", String(port)]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        // nghttpd does not exit on SIGTERM while serving; SIGKILL is the bounded way to stop it.
        defer { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }

        let loop = try EventLoop()
        var d = TestClient()
        var client: HTTP2ClientConnection?
        // nghttpd needs a moment to bind: retry the connect for a bounded time.
        for _ in 0..<100 {
            d = TestClient()
            client = connectClient(loop, port: port, d)
            if d.connected { break }
            usleep(50_000)
        }
        guard let client, d.connected else {
            Issue.record("could not connect to nghttpd on port \(port): \(String(describing: d.connectError))")
            return
        }
        let block = try HTTP2HeaderBlock.request(authority: "127.0.0.1:\(port)", path: "/hello.txt")
        let body = Array(repeating: UInt8(ascii: "x"), count: 100_000)
        var total = 0
        for k in 0..<50 {
            try client.submit(block, context: UInt64(k)) { req in
                if k % 2 == 0 { body.withUnsafeBytes { req.body.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<4096])) }; req.setBodyLength(4096) }
                else { body.withUnsafeBytes { req.copyBody($0) } }
            }
            total += 1
        }
        #expect(loop.run(until: { d.responses + d.failures.count == total }, timeoutNanoseconds: 30 * seconds))
        #expect(d.statuses[200] == total)
        #expect(d.failures.isEmpty)
        #expect(d.lastBody == content)
        client.close()
    }

    @Test func h2loadAgainstOurServer() throws {
        let h2load = try Self.peer("h2load")
        let server = try BackgroundServer()
        defer { server.stop() }
        let bodyFile = FileManager.default.temporaryDirectory.appendingPathComponent("pb-h2load-\(getpid()).json")
        try Data("{\"aps\":{\"alert\":\"hello\"}}".utf8).write(to: bodyFile)
        defer { try? FileManager.default.removeItem(at: bodyFile) }
        let (status, out) = try Self.run(h2load, ["-n", "5000", "-c", "4", "-m", "20", "-t", "1", "-d", bodyFile.path,
                                                 "http://127.0.0.1:\(server.port)/3/device/abc"])
        #expect(status == 0)
        #expect(out.contains("5000 total, 5000 started, 5000 done, 5000 succeeded, 0 failed, 0 errored"), "h2load said: \(out)")
        #expect(out.contains("status codes: 5000 2xx"), "h2load said: \(out)")
    }

    @Test func curlAgainstOurServer() throws {
        let curl = try Self.peer("curl")
        let server = try BackgroundServer()
        defer { server.stop() }
        let (status, out) = try Self.run(curl, ["-sS", "--http2-prior-knowledge", "-m", "20", "-d", "{\"a\":1}",
                                               "-H", "content-type: application/json", "-D", "-",
                                               "http://127.0.0.1:\(server.port)/v1/projects/p/messages:send"])
        #expect(status == 0, "curl said: \(out)")
        #expect(out.hasPrefix("HTTP/2 200"), "curl said: \(out)")
        #expect(out.contains("x-body-length: 7"), "curl said: \(out)")
        #expect(out.hasSuffix("{\"ok\":true}"), "curl said: \(out)")
    }
}
