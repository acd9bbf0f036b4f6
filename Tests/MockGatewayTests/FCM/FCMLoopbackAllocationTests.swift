@testable import PushTransport
import Testing
@testable import MockGateway

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
        let pump = Pump(block: block, payload: UnsafeRawBufferPointer(payload), path: "/v1/projects/pushbench/messages:send")
        let client = HTTP2ClientConnection(loop: loop, delegate: pump)
        client.connect(host: "127.0.0.1", port: port)
        #expect(loop.run(until: { pump.connected }, timeoutNanoseconds: 20_000_000_000))

        for _ in 0..<32 { pump.submit(client) }
        #expect(loop.run(until: { pump.responses >= 3000 }, timeoutNanoseconds: 60_000_000_000))

        let best = pump.swiftAllocationsPerRequest(on: loop)
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
