import CNGHTTP2
@testable import MockGateway
import PushPayload
import Testing
@testable import LoadGenerator
@testable import PushTransport

/// An encoder that can never write its payload (as if the slot were too small for it).
private final class FailingEncoder: PayloadEncoder {
    let template: PayloadTemplate
    var variant: EncoderVariant { .zerocopy }
    init(template: PayloadTemplate) { self.template = template }
    func encode(_ request: RequestContext, into slot: UnsafeMutableRawBufferPointer) -> Int? { nil }
}

/// One driver's pool over loopback against the embedded gateway, driven by hand on this thread: what the
/// pool tells the core when the transport refuses a request.
@Suite(.serialized) struct ConnectionPoolTests {
    /// Runs a closed loop of `requests` over one connection of 4 streams; `prepare` runs once connected.
    private func run(requests: Int, configure: (inout LoadConfiguration) -> Void = { _ in },
                     prepare: (ConnectionPool<APNsRequestBuilder>) -> Void = { _ in }) throws -> (Tally, GatewayStats) {
        let gateway = try EmbeddedGateway.start(GatewayConfiguration.parse([]))
        let loop = try EventLoop()
        var config = LoadConfiguration(host: gateway.host, port: gateway.port, template: .defaultAPNs(),
                                       tokens: DeviceTokens(synthetic: 10, seed: 3))
        config.connections = 1
        config.streams = 4
        configure(&config)
        let core = DriverCore(plan: DriverPlan(rate: nil, requests: requests, capacity: 4),
                              clock: MonotonicClock.shared, recorder: Recorder())
        var pool: ConnectionPool<APNsRequestBuilder>? = try ConnectionPool(loop: loop, config: config, core: core, thread: 0) {
            core.pump()
        }
        core.attach(pool!)
        pool!.connectAll()
        #expect(loop.run(until: { pool!.connectedCount == 1 }, timeoutNanoseconds: 10_000_000_000))
        prepare(pool!)
        core.begin(at: MonotonicClock.nanoseconds())
        core.pump()
        // Every request is answered or counted; nothing is left waiting for a stream.
        let settled = loop.run(until: { core.tick() == .finish }, timeoutNanoseconds: 10_000_000_000)
        #expect(settled, "the driver stalled: \(core.inFlight) in flight, backlog \(core.backlog)")
        core.finish()
        pool!.release()
        pool = nil
        loop.run(until: { false }, timeoutNanoseconds: 20_000_000)
        loop.close()
        let stats = gateway.stop()
        return (core.recorder.measured, stats)
    }

    @Test func anNghttp2SubmitFailureIsATransportErrorNotBackPressure() throws {
        // The connection's last client stream id: the first request takes it, nghttp2 refuses the rest
        // (NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE).
        let (m, gateway) = try run(requests: 5, prepare: { pool in
            #expect(nghttp2_session_set_next_stream_id(pool.active[0].session, Int32.max) == 0)
        })
        #expect(m.sent == 5 && m.completed == 1 && m.succeeded == 1)
        #expect(m.transportErrors == 4)
        #expect(m.transportErrorsByCause[TransportErrorCause.submitFailed.rawValue] == 4)
        #expect(m.check())
        #expect(gateway.requests == 1)
    }

    @Test func aPayloadTheEncoderCannotWriteIsNotSentEmpty() throws {
        let (m, gateway) = try run(requests: 3, configure: { config in
            config.encoderFactory = { _, template in FailingEncoder(template: template) }
        })
        #expect(m.sent == 3 && m.completed == 0)
        #expect(m.transportErrorsByCause[TransportErrorCause.encodeFailed.rawValue] == 3)
        #expect(m.check())
        #expect(gateway.requests == 0, "an empty body went out")
    }

    /// Runs a closed loop of 300 requests over `pool` against a gateway that drops every connection at its
    /// fifth stream, and returns the pool's books once the loop has settled.
    private func dropEveryFifthStream<Pool: DriverPool>(
        _ make: (EventLoop, LoadConfiguration, DriverCore) throws -> Pool, fcm: Bool, retired: (Pool) -> Int
    ) throws -> (stats: ConnectionStats, retired: Int, measured: Tally) {
        let gateway = try EmbeddedGateway.start(GatewayConfiguration.parse(["--drop-after-streams", "5"]))
        defer { gateway.stop() }
        let loop = try EventLoop()
        var config = LoadConfiguration(host: gateway.host, port: gateway.port, template: fcm ? .defaultFCM() : .defaultAPNs(),
                                       tokens: DeviceTokens(synthetic: 10, seed: 3))
        if fcm { config.pushProtocol = .fcm; config.http1 = true }
        config.connections = 2
        config.streams = fcm ? 1 : 4
        let core = DriverCore(plan: DriverPlan(rate: nil, requests: 300, capacity: 8),
                              clock: MonotonicClock.shared, recorder: Recorder())
        var pool: Pool? = try make(loop, config, core)
        core.attach(pool!)
        pool!.connectAll()
        #expect(loop.run(until: { pool!.initialConnected == 2 }, timeoutNanoseconds: 10_000_000_000))
        core.begin(at: MonotonicClock.nanoseconds())
        core.pump()
        #expect(loop.run(until: { core.tick() == .finish }, timeoutNanoseconds: 20_000_000_000))
        core.finish()
        // The last drop's replacement runs on the reconnect timer.
        loop.run(until: { false }, timeoutNanoseconds: 50_000_000)
        let books = (pool!.stats, retired(pool!), core.recorder.measured)
        pool!.release()
        pool = nil
        loop.run(until: { false }, timeoutNanoseconds: 20_000_000)
        loop.close()
        return books
    }

    /// Both pools replace a dropped connection the same way: a new one opens, and the dropped one,
    /// closed, is let go rather than kept.
    @Test func bothPoolsReplaceADroppedConnectionAndReleaseIt() throws {
        let http2 = try dropEveryFifthStream({ loop, config, core in
            try ConnectionPool<APNsRequestBuilder>(loop: loop, config: config, core: core, thread: 0) { core.pump() }
        }, fcm: false, retired: { $0.connections.retiredCount })
        let http1 = try dropEveryFifthStream({ loop, config, core in
            try HTTP1ConnectionPool(loop: loop, config: config, core: core, thread: 0) { core.pump() }
        }, fcm: true, retired: { $0.connections.retiredCount })
        for (name, r) in [("HTTP/2", http2), ("HTTP/1.1", http1)] {
            #expect(r.stats.lost > 0 && r.stats.opened > 2, "\(name): \(r.stats)")
            #expect(r.retired == 0, "\(name) keeps \(r.retired) closed connections")
            #expect(r.measured.sent == 300 && r.measured.check(), "\(name)")
        }
    }
}
