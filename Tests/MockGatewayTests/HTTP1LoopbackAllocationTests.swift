import CAllocCounter
@testable import PushTransport
import Testing
@testable import MockGateway

/// FCM over HTTP/1.1 with the gateway and pushbench's HTTP/1.1 client on one loop: once warm, neither side
/// allocates on the Swift side per request (parse, decision, answer, the client's request and response).
@Suite(.serialized) struct HTTP1LoopbackAllocationTests {
    final class Pump1: HTTP1ClientDelegate {
        let head: HTTP1RequestHead
        let payload: [UInt8]
        var connected = false
        var responses = 0
        var non200 = 0
        var failures = 0

        init(head: HTTP1RequestHead, payload: [UInt8]) {
            self.head = head
            self.payload = payload
        }

        func submit(_ c: HTTP1ClientConnection) {
            do {
                try c.submit(head, context: 0) { out in
                    payload.withUnsafeBytes { out.copyMemory(from: $0) }
                    return payload.count
                }
            } catch {
                failures += 1
            }
        }

        func connectionDidConnect(_ connection: HTTP1ClientConnection) { connected = true }
        func connection(_ connection: HTTP1ClientConnection, didFailToConnect error: TransportError) { failures += 1 }
        func connection(_ connection: HTTP1ClientConnection, didReceive response: HTTP1Response) {
            responses += 1
            if response.status != 200 { non200 += 1 }
            submit(connection)
        }
        func connection(_ connection: HTTP1ClientConnection, requestDidFail context: UInt64, error: TransportError) { failures += 1 }
        func connectionDidClose(_ connection: HTTP1ClientConnection, error: TransportError) {}
    }

    @Test func fcmOverHTTP1AllocatesNothingOnEitherSide() throws {
        let loop = try EventLoop()
        let counters = GatewayCounters()
        let gateway = GatewayLoop(loop: loop, machine: GatewayStateMachine(configuration: GatewayConfiguration(), counters: counters),
                                  allCounters: [counters])
        let server = HTTP2Server(loop: loop, configuration: GatewayLoop.serverConfiguration(GatewayConfiguration(), reusePort: false, connectionCap: nil),
                                 delegate: gateway)
        gateway.server = server
        let port = try server.listen(host: "127.0.0.1", port: 0)

        let head = try HTTP1RequestHead(path: "/v1/projects/pushbench/messages:send", host: "127.0.0.1",
                                        headers: [("Content-Type", "application/json"), ("Authorization", "Bearer test")])
        let pump = Pump1(head: head, payload: Array(fcmSeedMessage.replacingOccurrences(of: "TOKEN", with: "fcm-token-1").utf8))
        var clients: [HTTP1ClientConnection] = []
        for _ in 0..<4 {
            let c = HTTP1ClientConnection(loop: loop, delegate: pump)
            c.connect(host: "127.0.0.1", port: port)
            clients.append(c)
        }
        #expect(loop.run(until: { clients.allSatisfy(\.isIdle) }, timeoutNanoseconds: 20_000_000_000))
        for c in clients { pump.submit(c) }
        #expect(loop.run(until: { pump.responses >= 3000 }, timeoutNanoseconds: 60_000_000_000))

        var best = Double.infinity
        for _ in 0..<4 {
            let target = pump.responses + 2000
            pb_alloc_reset()
            _ = loop.run(until: { pump.responses >= target }, timeoutNanoseconds: 60_000_000_000)
            best = min(best, Double(pb_alloc_count()) / 2000)
        }
        #expect(pump.non200 == 0 && pump.failures == 0)
        #expect(counters.fcm.value(FCMCounters.accepted) >= UInt64(pump.responses))
        #expect(best < 0.01, "Swift-side allocations per FCM request over HTTP/1.1: \(best)")

        for c in clients { c.delegate = nil; c.close() }
        _ = loop.run(until: { server.connectionsOpen == 0 }, timeoutNanoseconds: 10_000_000_000)
        gateway.server = nil
        withExtendedLifetime(server) {}
        loop.close()
    }
}
