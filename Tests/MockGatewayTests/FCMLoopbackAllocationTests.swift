import CAllocCounter
import PushTransport
import Testing
@testable import MockGateway

/// Closed-loop FCM client on the gateway's own loop: every response submits the next send.
private final class FCMPump: HTTP2ClientDelegate {
    let block: HTTP2HeaderBlock
    let payload: UnsafeRawBufferPointer
    let path: StaticString = "/v1/projects/pushbench/messages:send"
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

@Suite(.serialized) struct FCMLoopbackAllocationTests {
    /// The seeds' FCM message → 200 with a `name` body over a real socket: nothing allocated on the Swift side per
    /// request once warm (parse, Apple payload, APNs checks, body rendering and the copy into the stream's slot).
    @Test func fcmSendsOverLoopbackAllocateNothingOnTheSwiftSide() throws {
        let loop = try EventLoop()
        let config = try GatewayConfiguration.parse(["--topic-subscribers", "10"])
        let counters = GatewayCounters()
        let gateway = GatewayLoop(loop: loop, machine: GatewayStateMachine(configuration: config, counters: counters),
                                  allCounters: [counters])
        let server = HTTP2Server(loop: loop, delegate: gateway)
        gateway.server = server
        let port = try server.listen(host: "127.0.0.1", port: 0)

        let payloadBytes = Array(fcmSeedMessage.replacingOccurrences(of: "TOKEN", with: "fcm-token-1").utf8)
        let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: payloadBytes.count, alignment: 1)
        defer { payload.deallocate() }
        payload.copyBytes(from: payloadBytes)
        let block = try HTTP2HeaderBlock.request(authority: "localhost", path: nil,
                                                 headers: [("authorization", "Bearer test"), ("content-type", "application/json")])
        let pump = FCMPump(block: block, payload: UnsafeRawBufferPointer(payload))
        let client = HTTP2ClientConnection(loop: loop, delegate: pump)
        client.connect(host: "127.0.0.1", port: port)
        #expect(loop.run(until: { pump.connected }, timeoutNanoseconds: 20_000_000_000))

        for _ in 0..<32 { pump.submit(client) }
        #expect(loop.run(until: { pump.responses >= 3000 }, timeoutNanoseconds: 60_000_000_000))

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
        #expect(counters.fcm.value(FCMCounters.accepted) >= UInt64(pump.responses))
        #expect(best < 0.01, "Swift-side allocations per FCM request over loopback: \(best)")

        client.close()
        _ = loop.run(until: { server.connectionsOpen == 0 }, timeoutNanoseconds: 10_000_000_000)
        gateway.server = nil
        withExtendedLifetime(server) {}
        loop.close()
    }
}
