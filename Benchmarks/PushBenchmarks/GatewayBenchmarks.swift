// `pushbench-benchmarks gateway`: the mock gateway's decision cost (ns and allocations per request, the
// state machine alone, with behaviours off and on) and a loopback round trip (client and gateway on one
// loop: requests/s and Swift-side allocations per request). Exit 1 when a zero-allocation path allocates.
// h2load comparisons against nghttpd are scripts/bench-gateway.

import CAllocCounter
import MockGateway
import PushTransport

#if canImport(Glibc)
import Glibc
#endif

private let gatewayBenchUsage = """
    USAGE: pushbench-benchmarks gateway [--requests N] [--loopback-requests N]

    Decision cost of the APNs state machine (valid request → 200; with behaviours) and a loopback
    round trip on one event loop. Exit 1 when a path that must not allocate does (2 on bad options).
    """

func runGatewayBenchmarks(_ arguments: [String]) -> Int32 {
    var requests = 1_000_000
    var loopbackRequests = 200_000
    var i = 0
    while i < arguments.count {
        let a = arguments[i]
        guard i + 1 < arguments.count, let n = Int(arguments[i + 1]), n > 0 else {
            print(a == "--help" ? gatewayBenchUsage : "pushbench-benchmarks gateway: bad option '\(a)'\n\(gatewayBenchUsage)")
            return a == "--help" ? 0 : 2
        }
        switch a {
        case "--requests": requests = n
        case "--loopback-requests": loopbackRequests = n
        default:
            print("pushbench-benchmarks gateway: unknown option '\(a)'\n\(gatewayBenchUsage)")
            return 2
        }
        i += 2
    }

    var failed = false
    print("state machine (one decision per request, \(requests) requests, median of 5 rounds)")
    let cases: [(String, [String], Bool)] = [
        ("valid → 200, behaviours off", [], true),
        ("valid, latency + failures + unregistered + token rate", [
            "--latency", "p50=1ms,p99=5ms", "--fail", "InternalServerError=0.01", "--unregistered", "0.05",
            "--token-rate", "1000000"], true),
    ]
    for (name, flags, mustBeZero) in cases {
        guard let config = try? GatewayConfiguration.parse(flags) else { return 2 }
        let (ns, allocs) = decisionCost(config, requests: requests)
        print("  \(pad(name, 56)) \(fmt(ns, 7)) ns/req  \(fmt(allocs, 6)) allocs/req")
        if mustBeZero && allocs > 0 { failed = true; print("  ^ over budget: 0 allocations per request") }
    }

    print("loopback round trip (client and gateway on one loop, 64 in flight, \(loopbackRequests) requests)")
    guard let (rps, allocs) = loopback(requests: loopbackRequests) else {
        print("  loopback run failed")
        return 1
    }
    print("  \(pad("valid → 200", 56)) \(fmt(rps, 7)) req/s   \(fmt(allocs, 6)) Swift allocs/req (nghttp2's excluded)")
    if allocs >= 0.01 { failed = true; print("  ^ over budget: 0 Swift-side allocations per request") }
    return failed ? 1 : 0
}

private func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
private func fmt(_ v: Double, _ width: Int) -> String {
    let s = v >= 100 ? String(Int(v.rounded())) : String(Double(Int(v * 100)) / 100)
    return String(repeating: " ", count: max(0, width - s.count)) + s
}

private func threadCPUNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// ns and allocations per decision on a request with the usual APNs headers and the default payload.
private func decisionCost(_ config: GatewayConfiguration, requests: Int) -> (Double, Double) {
    let machine = GatewayStateMachine(configuration: config)
    var connection = machine.connectionOpened(now: 1)
    let fields: [(String, String)] = [
        (":method", "POST"), (":path", "/3/device/" + String(repeating: "ab", count: 32)), (":scheme", "http"),
        (":authority", "localhost"), ("apns-topic", "com.example.app"), ("apns-push-type", "alert"),
        ("apns-priority", "10"), ("apns-expiration", "0"),
    ]
    var arena: [UInt8] = []
    var spans: [(Range<Int>, Range<Int>)] = []
    for (n, v) in fields {
        let a = arena.count; arena += Array(n.utf8)
        let b = arena.count; arena += Array(v.utf8)
        spans.append((a..<b, b..<arena.count))
    }
    let bodyStart = arena.count
    arena += Array(#"{"aps":{"alert":{"title":"Portugal vs. Denmark","body":"great match!"},"badge":1},"customKey":"customValue"}"#.utf8)
    return arena.withUnsafeBytes { raw -> (Double, Double) in
        var request = GatewayRequest()
        for (n, v) in spans {
            request.setHeader(name: UnsafeRawBufferPointer(rebasing: raw[n]), value: UnsafeRawBufferPointer(rebasing: raw[v]))
        }
        request.body = UnsafeRawBufferPointer(rebasing: raw[bodyStart...])
        var times: [Double] = []
        var allocs: [Double] = []
        var sink: UInt64 = 0
        for round in 0..<6 {
            pb_alloc_reset()
            let t0 = threadCPUNanos()
            var response = GatewayResponse(status: 200, apnsID: APNsID(random: 0, 0))
            for k in 0..<requests {
                if case .respond = machine.decide(request, connection: &connection, now: UInt64(k), response: &response) {
                    sink &+= UInt64(response.status)
                }
            }
            let t1 = threadCPUNanos()
            let a = pb_alloc_count()
            if round > 0 {
                times.append(Double(t1 - t0) / Double(requests))
                allocs.append(Double(a) / Double(requests))
            }
        }
        if sink == 42 { print("") }
        times.sort()
        return (times[times.count / 2], allocs.min()!)
    }
}

/// Closed-loop client on the gateway's own loop.
private final class LoopbackClient: HTTP2ClientDelegate {
    let block: HTTP2HeaderBlock
    let payload: UnsafeRawBufferPointer
    var connected = false, responses = 0, bad = 0

    init(block: HTTP2HeaderBlock, payload: UnsafeRawBufferPointer) { self.block = block; self.payload = payload }

    func submit(_ c: HTTP2ClientConnection) {
        do {
            try c.submit(block, context: 0) { req in
                req.setValue(0, "/3/device/abababababababababababababababababababababababababababababababab")
                req.borrowBody(payload)
            }
        } catch { bad += 1 }
    }

    func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings) { connected = true }
    func connection(_ connection: HTTP2ClientConnection, didFailToConnect error: TransportError) { bad += 1 }
    func connection(_ connection: HTTP2ClientConnection, didReceive response: HTTP2Response) {
        responses += 1
        if response.status != 200 { bad += 1 }
        submit(connection)
    }
    func connection(_ connection: HTTP2ClientConnection, streamDidFail failure: HTTP2StreamFailure) { bad += 1 }
}

/// Requests per second and Swift-side allocations per request, client and gateway on one loop thread.
private func loopback(requests: Int) -> (Double, Double)? {
    guard let loop = try? EventLoop() else { return nil }
    defer { loop.close() }
    return loopbackRun(loop, requests: requests)
}

private func loopbackRun(_ loop: EventLoop, requests: Int) -> (Double, Double)? {
    guard let config = try? GatewayConfiguration.parse([]),
          let handler = try? GatewayLoopHandler(loop: loop, configuration: config),
          let port = try? handler.listen(host: "127.0.0.1", port: 0),
          let block = try? HTTP2HeaderBlock.request(authority: "localhost", path: nil,
                                                    headers: [("apns-topic", "com.example.app"), ("apns-push-type", "alert")])
    else {
        print("  loopback: could not start the gateway")
        return nil
    }
    let bytes = Array(#"{"aps":{"alert":{"title":"Portugal vs. Denmark","body":"great match!"},"badge":1},"customKey":"customValue"}"#.utf8)
    let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
    defer { payload.deallocate() }
    payload.copyBytes(from: bytes)
    let client = LoopbackClient(block: block, payload: UnsafeRawBufferPointer(payload))
    let connection = HTTP2ClientConnection(loop: loop, delegate: client)
    connection.connect(host: "127.0.0.1", port: port)
    guard loop.run(until: { client.connected }, timeoutNanoseconds: 10_000_000_000) else {
        print("  loopback: could not connect")
        return nil
    }
    for _ in 0..<64 { client.submit(connection) }
    _ = loop.run(until: { client.responses >= 5000 }, timeoutNanoseconds: 30_000_000_000)
    let start = client.responses
    let nghttp2Before = loop.nghttp2Memory.allocations
    pb_alloc_reset()
    let t0 = EventLoop.nowNanoseconds()
    _ = loop.run(until: { client.responses >= start + requests }, timeoutNanoseconds: 120_000_000_000)
    let t1 = EventLoop.nowNanoseconds()
    let total = pb_alloc_count()
    let nghttp2 = loop.nghttp2Memory.allocations &- nghttp2Before
    let done = client.responses - start
    let bad = client.bad
    connection.close() // fails the streams still in flight; not counted
    _ = loop.run(until: { handler.connectionsOpen == 0 }, timeoutNanoseconds: 5_000_000_000)
    handler.close()
    guard bad == 0, done > 0 else {
        print("  loopback: \(bad) failed or non-200 responses, \(done) done")
        return nil
    }
    return (Double(done) / (Double(t1 - t0) / 1e9), Double(total &- min(total, nghttp2)) / Double(done))
}
