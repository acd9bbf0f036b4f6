import CAllocCounter
import Foundation
@testable import MockGateway
import PushCredentials
import PushPayload
import PushTransport
import Testing
@testable import LoadGenerator

/// The sender's provider tokens: one signed token per driver, swapped on schedule, checked by the
/// embedded gateway over loopback.
@Suite(.serialized) struct ProviderTokenRunTests {
    static let key = try! ES256PrivateKey.generate()
    static let keyFile: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-run-\(UUID().uuidString).p8").path
        try! Data(try! key.pkcs8PEM().utf8).write(to: URL(fileURLWithPath: path))
        return path
    }()

    func settings(refreshNanos: UInt64 = ProviderTokenSettings.defaultRefreshNanos) throws -> ProviderTokenSettings {
        try ProviderTokenSettings(key: Self.key, keyID: "KEY1234567", teamID: "TEAM123456", keyFile: Self.keyFile,
                                  refreshIntervalNanos: refreshNanos)
    }

    func gateway(_ extra: [String] = []) throws -> EmbeddedGateway {
        try EmbeddedGateway.start(GatewayConfiguration.parse(["--apns-key", "KEY1234567=\(Self.keyFile)", "--apns-team", "TEAM123456"] + extra))
    }

    func configuration(_ gateway: EmbeddedGateway, _ tokens: ProviderTokenSettings?, rate: Int?, requests: Int) -> LoadConfiguration {
        var c = LoadConfiguration(host: gateway.host, port: gateway.port, template: .defaultAPNs(),
                                  tokens: DeviceTokens(synthetic: 100, seed: 7))
        c.rate = rate
        c.requests = requests
        c.connections = 2
        c.streams = 20
        c.providerTokens = tokens
        c.drainTimeoutNs = 10_000_000_000
        return c
    }

    @Test func theHeaderIsTheTokenAndIsSwappedWhenDue() throws {
        let s = try settings(refreshNanos: 5_000_000)
        let header = ProviderTokenHeader(settings: s)
        let first = Array(header.value)
        #expect(first == s.firstHeader)
        let text = String(decoding: first, as: UTF8.self)
        #expect(text.hasPrefix("bearer "))
        let parsed = try ProviderToken.parse(String(text.dropFirst(7))).get()
        #expect(parsed.keyID == "KEY1234567" && parsed.teamID == "TEAM123456" && parsed.isSigned(by: Self.key.publicKey))
        #expect(abs(parsed.issuedAt - Int64(Date().timeIntervalSince1970)) <= 5)

        // Not due: the same bytes, nothing allocated.
        let start = s.firstSignedAt
        pb_alloc_reset()
        for i in 0..<1000 { header.refreshIfDue(now: start + UInt64(i)) }
        #expect(pb_alloc_count() == 0)
        #expect(Array(header.value) == first && header.refreshes == 0)
        // Due: a new token (ECDSA signatures differ even within one second).
        header.refreshIfDue(now: start + 5_000_000)
        #expect(header.refreshes == 1 && Array(header.value) != first)
        let next = try ProviderToken.parse(String(decoding: header.value.dropFirst(7), as: UTF8.self)).get()
        #expect(next.isSigned(by: Self.key.publicKey))
        // The next is due one interval after that refresh.
        header.refreshIfDue(now: start + 9_000_000)
        #expect(header.refreshes == 1)
        header.refreshIfDue(now: start + 10_000_000)
        #expect(header.refreshes == 2)
    }

    @Test func theEmbeddedGatewayAcceptsTheRunsTokens() throws {
        let gw = try gateway()
        defer { gw.stop() }
        let r = try LoadRun.run(configuration(gw, try settings(), rate: nil, requests: 2_000))
        #expect(r.measured.succeeded == 2_000, "\(r.measured.reasonCounts)")
        #expect(r.stats.providerTokenRefreshes == 0)
        // Each connection began at 1 stream; the first valid token raised it, and the run reports that.
        #expect(r.stats.connections.peerMaxStreams == 1_000)
        let seen = gw.stop()
        #expect(Array(seen.byStatus.keys) == [200], "the gateway answered every request 200")
    }

    @Test func withoutTokensTheGatewaySaysSo() throws {
        let gw = try gateway()
        defer { gw.stop() }
        let r = try LoadRun.run(configuration(gw, nil, rate: nil, requests: 200))
        #expect(r.measured.reasonCounts == ["MissingProviderToken": 200])
    }

    @Test func refreshingFasterThanTheGatewayAllowsIsTooManyUpdates() throws {
        // The driver re-signs every 50 ms; the gateway allows a change per connection every 20 minutes.
        let gw = try gateway()
        defer { gw.stop() }
        let r = try LoadRun.run(configuration(gw, try settings(refreshNanos: 50_000_000), rate: 2_000, requests: 1_000))
        #expect(r.stats.providerTokenRefreshes >= 3)
        #expect((r.measured.reasonCounts["TooManyProviderTokenUpdates"] ?? 0) > 0, "\(r.measured.reasonCounts)")
        #expect(r.measured.succeeded > 0)
    }

    @Test func refreshedTokensAreAcceptedWhenTheGatewayAllowsTheRate() throws {
        let gw = try gateway(["--apns-token-interval", "10ms"])
        defer { gw.stop() }
        let r = try LoadRun.run(configuration(gw, try settings(refreshNanos: 50_000_000), rate: 2_000, requests: 1_000))
        #expect(r.stats.providerTokenRefreshes >= 3)
        #expect(r.measured.succeeded == 1_000, "\(r.measured.reasonCounts)")
    }

    /// The client path with provider tokens: copying the current token into each request allocates nothing.
    @Test func authenticatedClientPathAllocatesNothingOutsideNghttp2() throws {
        let gw = try gateway()
        defer { gw.stop() }
        var config = configuration(gw, try settings(), rate: nil, requests: 1)
        config.streams = 32
        let path = try ClientPath(config)
        defer { path.close() }
        #expect(path.serve(3_000))
        let best = path.allocationsOutsideNghttp2()
        #expect(best <= 20, "\(best) allocations outside nghttp2 for 2000 authenticated requests")
        let measured = path.core.recorder.measured
        #expect(measured.succeeded == measured.completed, "\(measured.reasonCounts)")
    }

    /// The same over TLS, as a sender talks to APNs: TLS adds nothing on the Swift side; OpenSSL's own
    /// allocations are a few per SSL_write (a batch of requests), never one per request.
    @Test func authenticatedClientPathOverTLSAllocatesNothingOutsideNghttp2AndOpenSSL() throws {
        let gw = try gateway(["--tls"])
        defer { gw.stop() }
        var config = configuration(gw, try settings(), rate: nil, requests: 1)
        config.streams = 32
        config.tls = try TLSClientContext(trust: .certificates(pem: try #require(gw.trustedCertificatePEM)))
        config.serverName = "localhost"
        let path = try ClientPath(config)
        defer { path.close() }
        #expect(path.serve(3_000))
        let best = path.allocationsOutsideNghttp2()
        #expect(best <= 20, "\(best) allocations outside nghttp2 and OpenSSL for 2000 authenticated requests over TLS")
        #expect(path.pool.stats.tls?.alpn == "h2" && path.pool.stats.tls?.verified == true)
        #expect(pb_openssl_alloc_counter_active() != 0)
        #expect(path.sslWrites > 0)
        #expect(path.openSSLAllocations <= 4 * path.sslWrites, "OpenSSL: \(path.openSSLAllocations) allocations, \(path.sslWrites) SSL_write calls")
        let measured = path.core.recorder.measured
        #expect(measured.succeeded == measured.completed, "\(measured.reasonCounts)")
    }
}
