import CAllocCounter
import PushTransport
import Testing
@testable import MockGateway

/// Closed-loop client on the same loop as the gateway: every response submits the next request.
private final class Pump: HTTP2ClientDelegate {
    let block: HTTP2HeaderBlock
    let payload: UnsafeRawBufferPointer
    let path: StaticString = "/3/device/abababababababababababababababababababababababababababababababab"
    var connected = false
    var responses = 0
    var non200 = 0
    var failures = 0

    init(block: HTTP2HeaderBlock, payload: UnsafeRawBufferPointer) {
        self.block = block
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

    func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings) { connected = true }
    func connection(_ connection: HTTP2ClientConnection, didFailToConnect error: TransportError) { failures += 1 }
    func connection(_ connection: HTTP2ClientConnection, didReceive response: HTTP2Response) {
        responses += 1
        if response.status != 200 { non200 += 1 }
        submit(connection)
    }
    func connection(_ connection: HTTP2ClientConnection, streamDidFail failure: HTTP2StreamFailure) { failures += 1 }
}

@Suite(.serialized) struct LoopbackAllocationTests {
    /// Valid request → 200 over a real socket: the gateway (and the transport's client) allocate nothing on the
    /// Swift side per request once warm; what remains is nghttp2's own (counted apart by the loop's allocator).
    @Test func validRequestsOverLoopbackAllocateNothingOnTheSwiftSide() throws {
        let loop = try EventLoop()
        try measure(loop: loop)
        loop.close()
    }

    func measure(loop: EventLoop) throws {
        let config = try GatewayConfiguration.parse([])
        let counters = GatewayCounters()
        let gateway = GatewayLoop(loop: loop, machine: GatewayStateMachine(configuration: config, counters: counters),
                                  allCounters: [counters])
        let server = HTTP2Server(loop: loop, delegate: gateway)
        gateway.server = server
        let port = try server.listen(host: "127.0.0.1", port: 0)

        let payloadBytes = Array(#"{"aps":{"alert":{"title":"Portugal vs. Denmark","body":"great match!"},"badge":1},"customKey":"customValue"}"#.utf8)
        let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: payloadBytes.count, alignment: 1)
        defer { payload.deallocate() }
        payload.copyBytes(from: payloadBytes)
        let block = try HTTP2HeaderBlock.request(authority: "localhost", path: nil,
                                                 headers: [("apns-topic", "com.example.app"), ("apns-push-type", "alert")])
        let pump = Pump(block: block, payload: UnsafeRawBufferPointer(payload))
        let client = HTTP2ClientConnection(loop: loop, delegate: pump)
        client.connect(host: "127.0.0.1", port: port)
        #expect(loop.run(until: { pump.connected }, timeoutNanoseconds: 20_000_000_000))

        for _ in 0..<32 { pump.submit(client) }
        let warm = 3000
        #expect(loop.run(until: { pump.responses >= warm }, timeoutNanoseconds: 60_000_000_000))

        let perRound = 2000
        var best = Double.infinity
        for _ in 0..<4 {
            let target = pump.responses + perRound
            let nghttp2Before = loop.nghttp2Memory.allocations
            pb_alloc_reset()
            _ = loop.run(until: { pump.responses >= target }, timeoutNanoseconds: 60_000_000_000)
            let total = pb_alloc_count()
            let nghttp2 = loop.nghttp2Memory.allocations &- nghttp2Before
            let done = pump.responses - (target - perRound)
            best = min(best, Double(total &- min(total, nghttp2)) / Double(max(done, 1)))
        }
        #expect(pump.non200 == 0 && pump.failures == 0)
        // A handful of allocations per round come from `run(until:)` itself (its tick timer), not per request.
        #expect(best < 0.01, "Swift-side allocations per request over loopback: \(best)")

        client.close()
        _ = loop.run(until: { server.connectionsOpen == 0 }, timeoutNanoseconds: 10_000_000_000)
        gateway.server = nil
        withExtendedLifetime(server) {}
    }
}
