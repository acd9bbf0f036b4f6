@testable import PushTransport
import Testing
@testable import MockGateway

/// The gateway loop driven by a PushTransport client over an in-memory pair: one thread, no socket,
/// so what happens between the transport and the state machine is seen without the kernel.
@Suite struct GatewayInMemoryTests {
    final class Client: HTTP2ClientDelegate {
        var connected = false
        var closed = false
        var ids: [UInt64: String] = [:]
        var statuses: [Int] = []
        var goAways = 0
        var failures = 0
        func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings) { connected = true }
        func connection(_ connection: HTTP2ClientConnection, didReceive response: HTTP2Response) {
            statuses.append(response.status)
            ids[response.context] = response.headers.first(named: "apns-id")?.pbString
        }
        func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway goAway: HTTP2GoAway) { goAways += 1 }
        func connection(_ connection: HTTP2ClientConnection, streamDidFail failure: HTTP2StreamFailure) { failures += 1 }
        func connectionDidClose(_ connection: HTTP2ClientConnection, error: TransportError) { closed = true }
    }

    static let body = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

    static func apnsID(_ k: Int) -> String {
        let digits = String(k)
        return "00000000-0000-4000-8000-" + String(repeating: "0", count: 12 - digits.count) + digits
    }

    /// Responses held back by `--latency` (the loop's deadline heap) each reach their own stream, and a
    /// graceful shutdown started while they wait lets every one of them out before the connection closes.
    @Test func delayedResponsesReachTheirStreamsAndShutdownWaitsForThem() throws {
        let loop = try EventLoop()
        let gateway = try GatewayLoopHandler(loop: loop, configuration: try GatewayConfiguration.parse(["--latency", "1ms-20ms"]))
        let (clientEnd, gatewayEnd) = InMemoryTransport.pair(loop: loop)
        gateway.accept(gatewayEnd)
        let d = Client()
        let connection = HTTP2ClientConnection(loop: loop, delegate: d)
        connection.connect(over: clientEnd)
        #expect(loop.run(until: { d.connected }, timeoutNanoseconds: 10_000_000_000))
        let block = try HTTP2HeaderBlock.request(authority: "localhost", path: "/3/device/" + validToken,
                                                 headers: [("apns-topic", "com.example.app")], perRequestHeaders: ["apns-id"])
        let n = 200
        try Self.body.withUnsafeBytes { body in
            for k in 0..<n {
                try connection.submit(block, context: UInt64(k)) { req in
                    req.setValue(0, Self.apnsID(k))
                    req.copyBody(body)
                }
            }
            #expect(loop.run(until: { gateway.stats().requests == UInt64(n) }, timeoutNanoseconds: 10_000_000_000))
            var done = false
            gateway.shutdownGracefully { done = true }
            #expect(loop.run(until: { done && d.closed }, timeoutNanoseconds: 10_000_000_000))
        }
        #expect(d.statuses.count == n && d.statuses.allSatisfy { $0 == 200 })
        #expect(d.failures == 0 && d.goAways == 1)
        for k in 0..<n { #expect(d.ids[UInt64(k)] == Self.apnsID(k)) }
        gateway.close()
    }
}
