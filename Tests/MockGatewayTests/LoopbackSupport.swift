import CAllocCounter
import Foundation
@testable import MockGateway
@testable import PushTransport

/// Output of a child process run by a test.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
    var timedOut: Bool
}

/// Runs `executable` with `arguments`, killing it after `timeout` seconds (generous: the machine is shared).
func runProcess(_ executable: String, _ arguments: [String], timeout: Double = 60) throws -> ProcessResult {
    let p = try startProcess(executable, arguments)
    return p.finish(timeout: timeout)
}

/// A started child process with its pipes.
final class Child: @unchecked Sendable {
    // @unchecked: used from the test's thread only; the timeout closure only calls terminate().
    let process = Process()
    let out = Pipe(), err = Pipe()
    private let lock = NSLock()
    private var outData = Data(), errData = Data()
    private let group = DispatchGroup()

    func start() throws {
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Drain both pipes while the child runs so a chatty child never blocks on a full pipe. Each reader
        // is a thread of its own, not a block on Dispatch's global queue: a reader blocks in read(2) for the
        // child's whole life, and with many children across the parallel suite the queue's threads can all
        // be taken, leaving a new child's output unread.
        group.enter()
        Thread.detachNewThread {
            // read(2) directly: FileHandle.availableData traps on EINTR.
            let fd = self.out.fileHandleForReading.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, 4096) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                self.lock.withLock { self.outData.append(contentsOf: buffer[0..<n]) }
            }
            self.group.leave()
        }
        group.enter()
        Thread.detachNewThread {
            let fd = self.err.fileHandleForReading.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, 4096) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                self.lock.withLock { self.errData.append(contentsOf: buffer[0..<n]) }
            }
            self.group.leave()
        }
    }

    /// Standard output so far.
    func peekStdout() -> String { lock.withLock { String(decoding: outData, as: UTF8.self) } }

    func finish(timeout: Double) -> ProcessResult {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread { self.process.waitUntilExit(); done.signal() }
        var timedOut = false
        if done.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            process.terminate()
            _ = done.wait(timeout: .now() + 5)
        }
        _ = group.wait(timeout: .now() + 5)
        return lock.withLock {
            ProcessResult(status: process.isRunning ? -1 : process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                          stderr: String(decoding: errData, as: UTF8.self), timedOut: timedOut)
        }
    }
}

func startProcess(_ executable: String, _ arguments: [String]) throws -> Child {
    let c = Child()
    c.process.executableURL = URL(fileURLWithPath: executable)
    c.process.arguments = arguments
    try c.start()
    return c
}

/// The built `pushbench` (from `swift build --build-tests`), debug first.
var pushbenchBinary: String? {
    for dir in [".build/debug", ".build/release"] {
        let path = packageRoot.appendingPathComponent(dir).appendingPathComponent("pushbench").path
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

/// Finds a program on PATH.
func which(_ name: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
/// Writes a test script to the temporary folder and returns its path. It is named by a hash of its
/// text rather than the process id, so every test run reuses one file instead of leaving a new one.
func temporaryScript(_ name: String, _ source: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in source.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    let path = NSTemporaryDirectory() + "pushbench-\(name)-\(String(hash, radix: 16)).py"
    if (try? String(contentsOfFile: path, encoding: .utf8)) != source {
        try! source.write(toFile: path, atomically: true, encoding: .utf8)
    }
    return path
}
/// Path of the probe script.
let probeScript = temporaryScript("h2probe", probeSource)
let validToken = String(repeating: "ab", count: 32)

/// One stream as the probe saw it.
struct ProbeStream {
    var status: Int?
    var headers: [(String, String)]
    var dataFrames: Int
    var body: String
    var endedOnHeaders: Bool
    var reset: Int?
    /// Names the server sent as never-indexed HPACK literals.
    var neverIndexed: [String] = []
    func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
    func headerCount(_ name: String) -> Int { headers.filter { $0.0 == name }.count }
}

/// What the probe saw on one connection.
struct ProbeResult {
    var streams: [ProbeStream] // in stream-id order
    var goaway: (errorCode: Int, lastStreamID: Int, debug: String)?
    var settings: [(Int, Int)]
    var closed: Bool
    var pending: Int
    /// The exception that ended the probe early, if any.
    var error: String?
}

/// A request for the probe: pseudo-headers first; `path` nil leaves `:path` out.
func probeRequest(method: String = "POST", path: String = "/3/device/" + validToken, authority: Bool = true,
                  headers: [(String, String)] = [("apns-topic", "com.example.app")],
                  body: String = #"{"aps":{"alert":"hi"}}"#) -> [String: Any] {
    var h: [[String]] = [[":method", method], [":scheme", "http"], [":path", path]]
    if authority { h.append([":authority", "localhost"]) }
    for (n, v) in headers { h.append([n, v]) }
    return ["headers": h, "body": body]
}

/// Sends `requests` on one connection with the python h2 probe and returns what came back.
func probe(port: Int, _ requests: [[String: Any]], sequential: Bool = false, linger: Double = 0.3,
           timeout: Double = 20) throws -> ProbeResult {
    let spec: [String: Any] = ["requests": requests, "sequential": sequential, "linger": linger, "timeout": timeout]
    let json = String(decoding: try JSONSerialization.data(withJSONObject: spec), as: UTF8.self)
    let r = try runProcess(which("python3") ?? "/usr/bin/python3", [probeScript, String(port), json], timeout: timeout + 30)
    guard r.status == 0, let data = r.stdout.data(using: .utf8),
          let o = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
        throw ProbeError(message: "probe failed (\(r.status)): \(r.stderr)")
    }
    let raw = o["streams"] as! [String: [String: Any]]
    let streams = raw.keys.compactMap(Int.init).sorted().map { id -> ProbeStream in
        let s = raw[String(id)]!
        return ProbeStream(status: s["status"] as? Int,
                           headers: (s["headers"] as! [[String]]).map { ($0[0], $0[1]) },
                           dataFrames: s["data_frames"] as! Int, body: s["body"] as! String,
                           endedOnHeaders: s["ended_on_headers"] as! Bool, reset: s["reset"] as? Int,
                           neverIndexed: s["never_indexed"] as? [String] ?? [])
    }
    var goaway: (Int, Int, String)?
    if let g = o["goaway"] as? [String: Any] {
        goaway = (g["error_code"] as! Int, g["last_stream_id"] as! Int, g["debug"] as! String)
    }
    return ProbeResult(streams: streams, goaway: goaway,
                       settings: (o["settings"] as! [[Int]]).map { ($0[0], $0[1]) },
                       closed: o["closed"] as! Bool, pending: (o["pending"] as! [Any]).count,
                       error: o["error"] as? String)
}

struct ProbeError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Starts an embedded gateway with `flags`, runs `body`, stops it (also when `body` throws).
func withGateway<R>(_ flags: [String] = [], _ body: (EmbeddedGateway) throws -> R) throws -> R {
    let gateway = try EmbeddedGateway.start(try GatewayConfiguration.parse(flags))
    defer { gateway.stop() }
    return try body(gateway)
}

/// Closed-loop client on the same loop as the gateway: every response submits the next request to `path`.
final class Pump: HTTP2ClientDelegate {
    let block: HTTP2HeaderBlock
    let payload: UnsafeRawBufferPointer
    let path: StaticString
    var connected = false
    var responses = 0
    var non200 = 0
    var failures = 0

    init(block: HTTP2HeaderBlock, payload: UnsafeRawBufferPointer, path: StaticString) {
        self.block = block
        self.path = path
        self.payload = payload
    }

    func submit(_ c: HTTP2ClientConnection) {
        do {
            try c.submit(block, context: 0) { req in
                req.setValue(0, path)
                req.borrowBody(payload)
            }
        } catch {
            failures += 1
        }
    }

    /// Swift-side allocations per request (what reached malloc minus nghttp2's own) over `rounds` windows
    /// of `perRound` responses on `loop`, the lowest window: the loop's own occasional allocations (its
    /// tick timer) land in some windows, a per-request allocation in every one.
    func swiftAllocationsPerRequest(on loop: EventLoop, rounds: Int = 4, perRound: Int = 2000) -> Double {
        allocationsPerRequest(on: loop, rounds: rounds, perRound: perRound).swift
    }

    /// The same, with OpenSSL's own allocations (counted apart by the interposer) also left out of the
    /// Swift side and reported beside the `SSL_write` calls of the same window.
    func allocationsPerRequest(on loop: EventLoop, rounds: Int = 4, perRound: Int = 2000)
        -> (swift: Double, openSSL: Double, sslWrites: Double) {
        var best = (swift: Double.infinity, openSSL: 0.0, sslWrites: 0.0)
        for _ in 0..<rounds {
            let target = responses + perRound
            let nghttp2Before = loop.nghttp2Memory.allocations
            let sslBefore = pb_openssl_alloc_count()
            let writesBefore = loop.tlsBuffers.sslWrites
            pb_alloc_reset()
            _ = loop.run(until: { self.responses >= target }, timeoutNanoseconds: 60_000_000_000)
            let total = pb_alloc_count()
            let outside = (loop.nghttp2Memory.allocations &- nghttp2Before) &+ (pb_openssl_alloc_count() &- sslBefore)
            let done = Double(max(responses - (target - perRound), 1))
            let swift = Double(total &- min(total, outside)) / done
            if swift < best.swift {
                best = (swift, Double(pb_openssl_alloc_count() &- sslBefore) / done, Double(loop.tlsBuffers.sslWrites - writesBefore) / done)
            }
        }
        return best
    }

    func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings) { connected = true }
    func connection(_ connection: HTTP2ClientConnection, didFailToConnect error: TransportError) { failures += 1 }
    func connection(_ connection: HTTP2ClientConnection, didReceive response: HTTP2Response) {
        responses += 1
        if response.status != 200 { non200 += 1 }
        submit(connection)
    }
    func connection(_ connection: HTTP2ClientConnection, streamDidFail failure: HTTP2StreamFailure) { failures += 1 }
}

/// `GET path` over HTTP/1.1 to a numeric IPv4 `host:port`, in this process (no child to spawn, which a
/// busy machine can take seconds to do): the response's text, or nil on any failure or after `timeout`.
func httpGet(_ address: String, _ path: String, timeout: Int = 2) -> String? {
    let parts = address.split(separator: ":")
    guard parts.count == 2, let port = UInt16(parts[1]) else { return nil }
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var tv = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    var sa = sockaddr_in()
    sa.sin_family = sa_family_t(AF_INET)
    sa.sin_port = port.bigEndian
    guard inet_pton(AF_INET, String(parts[0]), &sa.sin_addr) == 1 else { return nil }
    let connected = withUnsafePointer(to: &sa) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return nil }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: \(address)\r\nConnection: close\r\n\r\n".utf8)
    guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else { return nil }
    var data = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        data += buffer[0..<n]
    }
    return data.isEmpty ? nil : String(decoding: data, as: UTF8.self)
}
