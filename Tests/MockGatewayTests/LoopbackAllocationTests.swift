import CAllocCounter
import Foundation
@testable import PushTransport
import Testing
@testable import MockGateway
@testable import PushPayload

@Suite(.serialized) struct LoopbackAllocationTests {
    /// Valid request → 200 over a real socket: the gateway (and the transport's client) allocate nothing on the
    /// Swift side per request once warm; what remains is nghttp2's own (counted apart by the loop's allocator).
    @Test func validRequestsOverLoopbackAllocateNothingOnTheSwiftSide() throws {
        let loop = try EventLoop()
        try measure(loop: loop)
        loop.close()
    }

    /// The same with provider-token authentication on: the token in force is recognised from the
    /// connection's cache, so checking it allocates nothing either.
    @Test func authenticatedRequestsOverLoopbackAllocateNothingOnTheSwiftSide() throws {
        let loop = try EventLoop()
        let token = AuthFixture.token(iat: "\(Int64(Date().timeIntervalSince1970))")
        try measure(loop: loop, config: AuthFixture.configuration(AuthFixture.tokenAuth()), headers: [("authorization", "bearer " + token)])
        loop.close()
    }

    /// Over TLS, with provider tokens: the gateway and the client also decrypt and encrypt every batch;
    /// OpenSSL's own allocations (its record writer's bookkeeping per SSL_write) are counted apart.
    @Test func authenticatedRequestsOverTLSAllocateNothingOnTheSwiftSide() throws {
        let loop = try EventLoop()
        let token = AuthFixture.token(iat: "\(Int64(Date().timeIntervalSince1970))")
        try measure(loop: loop, config: AuthFixture.configuration(AuthFixture.tokenAuth()), headers: [("authorization", "bearer " + token)],
                    tls: true)
        loop.close()
    }

    /// A pipeline run's egress: every push is scanned for its correlation id and queued for the run, which
    /// allocates nothing either; the arrivals carry the request's index.
    /// With a JSON pointer (`--correlate /pipeline_id`) the body is parsed on a tape the loop keeps.
    @Test(arguments: [CorrelationSource.anywhere, CorrelationSource.pointer("/pipeline_id")!])
    func correlatedPushesAllocateNothingOnTheSwiftSide(source: CorrelationSource) throws {
        let loop = try EventLoop()
        var config = GatewayConfiguration()
        let correlator = PushCorrelator(prefix: Array("pb-7f3a-".utf8), source: source, loops: 1, capacity: 1 << 20)
        config.correlator = correlator
        try measure(loop: loop, config: config,
                    payload: #"{"aps":{"alert":{"title":"Portugal vs. Denmark","body":"great match!"}},"pipeline_id":"pb-7f3a-000000123"}"#)
        loop.close()
        var matched = 0, other = 0
        // The token fingerprinted from the path too.
        let token = PushTokenHash.of(String(repeating: "ab", count: 32))
        correlator.drain { if $0.index == 123 && $0.status == 200 && $0.token == token { matched += 1 } else { other += 1 } }
        #expect(matched > 3000 && other == 0 && correlator.refused == 0)
    }

    func measure(loop: EventLoop, config: GatewayConfiguration = GatewayConfiguration(), headers: [(String, String)] = [],
                 tls: Bool = false,
                 payload text: String = #"{"aps":{"alert":{"title":"Portugal vs. Denmark","body":"great match!"},"badge":1},"customKey":"customValue"}"#) throws {
        let counters = GatewayCounters()
        let gateway = GatewayLoop(loop: loop, machine: GatewayStateMachine(configuration: config, counters: counters),
                                  allCounters: [counters])
        var serverConfig = HTTP2ServerConfiguration()
        var clientTLS: TLSClientContext?
        if tls {
            let ca = try TLSCertificateAuthority(commonName: "pushbench tests CA")
            let id = try ca.issue(commonName: "localhost", names: ["localhost", "127.0.0.1"])
            serverConfig.tls = try TLSServerContext(certificatePEM: id.certificateChainPEM, privateKeyPEM: id.privateKeyPEM)
            clientTLS = try TLSClientContext(trust: .certificates(pem: ca.certificatePEM))
        }
        let server = HTTP2Server(loop: loop, configuration: serverConfig, delegate: gateway)
        gateway.server = server
        let port = try server.listen(host: "127.0.0.1", port: 0)

        let payloadBytes = Array(text.utf8)
        let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: payloadBytes.count, alignment: 1)
        defer { payload.deallocate() }
        payload.copyBytes(from: payloadBytes)
        let block = try HTTP2HeaderBlock.request(authority: "localhost", path: nil,
                                                 headers: [("apns-topic", "com.example.app"), ("apns-push-type", "alert")] + headers)
        let pump = Pump(block: block, payload: UnsafeRawBufferPointer(payload),
                        path: "/3/device/abababababababababababababababababababababababababababababababab")
        let client = HTTP2ClientConnection(loop: loop, delegate: pump)
        if let clientTLS {
            client.connect(host: "127.0.0.1", port: port, tls: clientTLS, serverName: "localhost")
        } else {
            client.connect(host: "127.0.0.1", port: port)
        }
        #expect(loop.run(until: { pump.connected }, timeoutNanoseconds: 20_000_000_000))

        // One stream first: with provider tokens the gateway allows more only after a valid one.
        pump.submit(client)
        #expect(loop.run(until: { pump.responses >= 1 && client.availableStreams > 1 }, timeoutNanoseconds: 20_000_000_000))
        for _ in 0..<31 { pump.submit(client) }
        let warm = 3000
        #expect(loop.run(until: { pump.responses >= warm }, timeoutNanoseconds: 60_000_000_000))

        let best = pump.allocationsPerRequest(on: loop)
        #expect(pump.non200 == 0 && pump.failures == 0)
        // A handful of allocations per round come from `run(until:)` itself (its tick timer), not per request.
        #expect(best.swift < 0.01, "Swift-side allocations per request over loopback: \(best.swift)")
        if tls {
            #expect(client.tls?.alpn == "h2")
            #expect(pb_openssl_alloc_counter_active() != 0)
            #expect(best.sslWrites > 0)
            // OpenSSL 3.0 allocates a few blocks per SSL_write (both ends' writes are on this loop), never per request.
            #expect(best.openSSL <= 4 * best.sslWrites, "OpenSSL \(best.openSSL) per request, \(best.sslWrites) SSL_write calls per request")
        }

        client.close()
        _ = loop.run(until: { server.connectionsOpen == 0 }, timeoutNanoseconds: 10_000_000_000)
        gateway.server = nil
        withExtendedLifetime(server) {}
    }
}
