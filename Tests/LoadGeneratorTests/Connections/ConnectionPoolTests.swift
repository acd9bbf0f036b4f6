import CNGHTTP2
import MockGateway
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
}
