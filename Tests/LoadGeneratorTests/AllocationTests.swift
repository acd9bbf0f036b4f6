import Foundation
import Testing
import CAllocCounter
@testable import LoadGenerator
@testable import PushMetrics

/// A port that completes nothing by itself and never allocates: the test answers streams in order.
private final class RingPort: RequestPort {
    var slots: [Int32]
    var head = 0, count = 0
    init(streams: Int) { slots = Array(repeating: 0, count: streams) }
    func startRequest(slot: Int32, sequence: Int64, at now: UInt64) -> StartResult {
        guard count < slots.count else { return .noStream }
        slots[(head + count) % slots.count] = slot
        count += 1
        return .started
    }
    func take() -> Int32 {
        let s = slots[head]
        head = (head + 1) % slots.count
        count -= 1
        return s
    }
}

@Suite struct AllocationTests {
    /// With `log`, every request's `--log` record is queued too (the ring drained between windows, as
    /// the writer thread would).
    @Test(arguments: [false, true])
    func driverPerRequestPathAllocatesNothing(log: Bool) {
        #expect(pb_alloc_counter_active() != 0)
        let clock = ManualClock()
        let streams = 64
        let core = DriverCore(plan: DriverPlan(rate: 50_000, durationNs: 10_000_000_000, retries: 1, capacity: streams),
                              clock: clock, recorder: Recorder())
        let ring = SPSCRing<RequestLogRecord>(capacity: 1 << 14)
        if log { core.requestLog = ring }
        var logged = 0
        let port = RingPort(streams: streams)
        core.attach(port)
        core.begin(at: clock.time)
        let body: [UInt8] = Array(#"{"reason":"BadDeviceToken"}"#.utf8)
        func cycle(_ n: Int) {
            for i in 0..<n {
                clock.advance(20_000)
                core.pump()
                if port.count > 8 {
                    let slot = port.take()
                    switch i % 10 {
                    case 0: core.responded(slot: slot, status: 400, reason: body.withUnsafeBytes { Reasons.index(inBody: $0) })
                    case 1: core.failed(slot: slot, cause: .connectionLost)
                    default: core.responded(slot: slot, status: 200, reason: 0)
                    }
                }
            }
        }
        cycle(2_000)   // warm up: runtime metadata, first-use paths
        logged += ring.drain { _ in }
        var best = UInt64.max
        for _ in 0..<5 {
            pb_alloc_reset()
            cycle(1_000)   // 20 ms of schedule: no second boundary is crossed inside a run
            best = min(best, pb_alloc_count())
            logged += ring.drain { _ in }
        }
        #expect(best == 0)
        #expect(core.recorder.measured.completed > 5_000)
        // Every answer and every final transport error was queued, none refused.
        #expect(ring.refused == 0)
        let r = core.recorder.measured, w = core.recorder.warmup
        #expect(logged == (log ? Int(r.completed + r.transportErrors + w.completed + w.transportErrors) : 0))
    }

    /// Closing a second on the driver thread hands its histograms over, copied into a spare pair, and
    /// allocates nothing: the main thread encodes them when it takes them, and gives the pair back.
    @Test func closingASecondAllocatesNothingOnTheDriverThread() {
        #expect(pb_alloc_counter_active() != 0)
        let recorder = Recorder()
        recorder.begin(at: 0, measurementStart: 0)
        let second: UInt64 = 1_000_000_000
        func fill(_ s: UInt64) {   // 1,000 responses in second s, 150-1,049 µs each
            for k in 0..<UInt64(1_000) {
                recorder.recordResponse(.measured, status: 200, reason: 0, latencyNs: 150_000 + k * 1_000,
                                        serviceNs: 100_000, at: s * second + k * 1_000_000)
            }
        }
        var allocations: [UInt64] = []
        var taken: [TimelineInterval] = []
        for s in UInt64(0)..<4 {
            fill(s)
            pb_alloc_reset()
            recorder.tick(at: (s + 1) * second, inFlight: 0, backlog: 0)   // the second closes here
            allocations.append(pb_alloc_count())
            taken += recorder.outbox.take().intervals   // the main thread's part
        }
        #expect(allocations.dropFirst().allSatisfy { $0 == 0 }, "allocations per closed second: \(allocations)")
        #expect(taken.map(\.second) == [0, 1, 2, 3])
        let expected = HdrHistogram.latencyMicroseconds()
        for k in Int64(0)..<1_000 { expected.record(150 + k) }
        for interval in taken {
            #expect(interval.completed == 1_000)
            #expect(interval.latency.decode().hasSameCounts(as: expected))
            #expect(interval.serviceTime.decode().count(atValue: 100) == 1_000)
        }
    }
}

@testable import MockGateway
@testable import PushPayload
@testable import PushTransport

@Suite struct ClientLoopbackAllocationTests {
    /// The whole client path over real sockets against the embedded gateway (its own threads): the driver,
    /// the pool, the zerocopy encoder writing into the stream slot, the transport. Counted on this thread;
    /// nghttp2's own allocations (its stream objects, counted by the loop's nghttp2_mem) are subtracted.
    /// With `topics`, the tokens come from a file whose lines name topics, so `apns-topic` is written per request.
    /// With `log`, the pool hands each answer's connection, stream, token and sizes to the core, which
    /// queues a `--log` record (a RequestLog whose writer is not started; the test drains its ring).
    @Test(arguments: [(false, false), (true, false), (false, true)])
    func clientPathOverLoopbackAllocatesNothingOutsideNghttp2(topics: Bool, log: Bool) throws {
        let gateway = try EmbeddedGateway.start(GatewayConfiguration.parse([]))
        defer { gateway.stop() }
        let synthetic = DeviceTokens(synthetic: 100, seed: 3)
        let lines = (0..<100).map { "\(synthetic[$0]) com.example.app\($0 % 3)" + ($0 % 5 == 0 ? ",other" : "") }
        let tokens = topics ? try DeviceTokens(bytes: Array(lines.joined(separator: "\n").utf8), file: "t") : synthetic
        var config = LoadConfiguration(host: gateway.host, port: gateway.port, template: .defaultAPNs(), tokens: tokens)
        config.connections = 2
        config.streams = 32
        let logFile = {
            let d = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-test-\(UUID().uuidString)")
            try? FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
            return d
        }().appendingPathComponent("log.csv")
        defer { try? FileManager.default.removeItem(at: logFile.deletingLastPathComponent()) }
        let requestLog = log ? try RequestLog(path: logFile.path, threads: 1, filter: RequestLogFilter(), seed: 1, apnsIDs: true,
                                              capacity: 1 << 15) : nil
        config.requestLog = requestLog
        let path = try ClientPath(config)
        defer { path.close() }
        if let requestLog { path.core.requestLog = requestLog.rings[0] }
        var records: [RequestLogRecord] = []
        records.reserveCapacity(1 << 15)
        func drain() { requestLog?.rings[0].drain { records.append($0) } }
        #expect(path.serve(3_000))   // warm up: slots, HPACK tables, buffers reach their steady size
        drain()
        let best = path.allocationsOutsideNghttp2(check: drain)
        // A few allocations per window are the run(until:) helper's own timer and a second's timeline entry;
        // one per request would be 2000.
        #expect(best <= 20, "\(best) allocations outside nghttp2 for 2000 requests")
        #expect(path.core.recorder.measured.succeeded >= 9_000)
        if log {
            #expect(records.count >= 9_000 && requestLog?.dropped == 0)
            #expect(records.allSatisfy { $0.connection >= 1 && $0.connection <= 2 && $0.stream > 0 && $0.stream % 2 == 1 })
            #expect(records.allSatisfy { $0.status == 200 && $0.requestBytes > 0 && $0.answered >= $0.sent && $0.sent >= $0.intended })
            #expect(Set(records.map(\.sequence)).count == records.count)
        }
    }

    /// A pipeline run's front door over HTTP/2: the request file's fixed header block and a body template
    /// with `{{pipeline_id}}` and `{{tokens:3}}`, written per request, with each answer reported on the
    /// pipeline's ring; nothing allocated per request outside nghttp2 either. (The gateway answers these
    /// POSTs as APNs pushes; what matters here is the client's side.)
    @Test func frontDoorPathOverLoopbackAllocatesNothingOutsideNghttp2() throws {
        let gateway = try EmbeddedGateway.start(GatewayConfiguration.parse([]))
        defer { gateway.stop() }
        let template = try PayloadTemplate(text: #"{"aps":{"alert":"x"},"id":"{{pipeline_id}}","tokens":{{tokens:3}},"n":{{seq}}}"#,
                                           options: .init(limit: nil))
        var config = LoadConfiguration(host: gateway.host, port: gateway.port, template: template, tokens: DeviceTokens(synthetic: 100, seed: 3))
        config.connections = 2
        config.streams = 32
        config.payloadLimit = template.maxLength
        config.frontDoor = FrontDoorRequest(method: "POST", path: "/3/device/" + String(repeating: "ab", count: 32),
                                            headers: [("apns-topic", "com.example.app"), ("content-type", "application/json")])
        let tap = PipelineTap(prefix: Array("pb-7f3a-".utf8), threads: 1, capacity: 1 << 16)
        config.pipeline = tap
        let path = try BuilderClientPath<FrontDoorRequestBuilder>(config)
        defer { path.close() }
        path.core.answers = tap.answers[0]
        var answers = 0
        func drain() { tap.drain { if $0.status == 200 { answers += 1 } } }
        #expect(path.serve(3_000))
        drain()
        let best = path.allocationsOutsideNghttp2(check: drain)
        #expect(best <= 20, "\(best) allocations outside nghttp2 for 2000 requests")
        #expect(answers >= 9_000 && tap.refused == 0, "\(answers) answers reported")
    }

    /// An FCM run with `--log`: each answer's message id is read from its body into the record, inline;
    /// nothing allocated per request outside nghttp2 either.
    @Test func fcmPathWithALogAllocatesNothingOutsideNghttp2() throws {
        let gateway = try EmbeddedGateway.start(GatewayConfiguration.parse([]))
        defer { gateway.stop() }
        var config = LoadConfiguration(host: gateway.host, port: gateway.port, template: .defaultFCM(),
                                       tokens: DeviceTokens(synthetic: 100, seed: 3))
        config.pushProtocol = .fcm
        config.project = "alloc-test"
        config.connections = 2
        config.streams = 32
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let requestLog = try RequestLog(path: dir.appendingPathComponent("log.csv").path, threads: 1, filter: RequestLogFilter(),
                                        seed: 1, apnsIDs: false, capacity: 1 << 15)
        config.requestLog = requestLog
        let path = try BuilderClientPath<FCMRequestBuilder>(config)
        defer { path.close() }
        path.core.requestLog = requestLog.rings[0]
        var records: [RequestLogRecord] = []
        records.reserveCapacity(1 << 15)
        func drain() { requestLog.rings[0].drain { records.append($0) } }
        #expect(path.serve(3_000))
        drain()
        let best = path.allocationsOutsideNghttp2(check: drain)
        #expect(best <= 20, "\(best) allocations outside nghttp2 for 2000 requests")
        #expect(records.count >= 9_000 && requestLog.dropped == 0)
        #expect(records.allSatisfy { $0.status == 200 && !$0.pushID.isEmpty && $0.pushID.text.hasPrefix("0:") })
        #expect(Set(records.map(\.pushID.text)).count == records.count, "every message id its own")
    }
}

