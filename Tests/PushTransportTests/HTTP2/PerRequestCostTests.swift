import CNGHTTP2
@testable import PushTransport
import Testing

/// The client-side savings on the per-request path: which header fields HPACK indexes, responses
/// without their header fields, and stream timestamps taken once per read / flush batch.
@Suite struct PerRequestCostTests {
    private static let noIndex = UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
    private static let body: [UInt8] = Array("{}".utf8)

    @Test func perRequestFieldsAreNeverIndexedUnlessAskedAndFixedOnesAre() throws {
        let block = try HTTP2HeaderBlock.request(authority: "a.test", path: nil, headers: [("apns-topic", "t")],
                                                 perRequestHeaders: ["apns-id"])
        // :method :scheme :authority :path apns-topic apns-id
        let flags = (0..<block.count).map { block.template[$0].flags & Self.noIndex }
        #expect(flags == [0, 0, 0, Self.noIndex, 0, Self.noIndex])

        let indexed = try HTTP2HeaderBlock.request(authority: "a.test", path: nil, indexPath: true,
                                                   perRequestHeaders: ["apns-id"])
        #expect(indexed.template[3].flags & Self.noIndex == 0)
        #expect(indexed.template[4].flags & Self.noIndex == Self.noIndex)
    }

    @Test func responsesWithoutHeaderFieldsStillCarryStatusAndBody() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        for keeps in [true, false] {
            var config = HTTP2ClientConfiguration()
            config.keepsResponseHeaders = keeps
            let d = TestClient()
            var headerCount = -1
            d.onResponse = { _, r in headerCount = r.headers.count }
            let client = connectInMemory(loop, to: server.server, d, configuration: config)
            #expect(d.connected)
            let block = try HTTP2HeaderBlock.request(authority: "a.test", path: "/x")
            try client.submit(block, context: 1) { req in Self.body.withUnsafeBytes { req.copyBody($0) } }
            #expect(loop.run(until: { d.responses == 1 }, timeoutNanoseconds: 10 * seconds))
            #expect(d.statuses[200] == 1)
            #expect(d.lastBody == Array("{\"ok\":true}".utf8))
            // TestServer answers with content-type and x-body-length: a kept list has both, a dropped one none.
            if keeps { #expect(headerCount >= 2); #expect(d.lastHeaderLength == "2") } else { #expect(headerCount == 0) }
            client.close()
            _ = loop.run(until: { d.closed }, timeoutNanoseconds: 5 * seconds)
        }
    }

    @Test func streamTimestampsComeFromTheBatchAndTheCallersSubmitTime() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, listening: false)
        let d = TestClient()
        var timings: [HTTP2StreamTiming] = []
        d.onResponse = { _, r in timings.append(r.timing) }
        let client = connectInMemory(loop, to: server.server, d)
        #expect(d.connected)
        let block = try HTTP2HeaderBlock.request(authority: "a.test", path: "/x")
        let before = EventLoop.nowNanoseconds()
        let given: UInt64 = before - 1_000_000
        for i in 0..<20 {
            try client.submit(block, context: UInt64(i), submittedAt: i == 0 ? 0 : given) { req in Self.body.withUnsafeBytes { req.copyBody($0) } }
        }
        #expect(loop.run(until: { d.responses == 20 }, timeoutNanoseconds: 10 * seconds))
        let after = EventLoop.nowNanoseconds()
        #expect(timings.count == 20)
        for t in timings {
            #expect(t.headersSent >= before && t.headersSent <= t.responseHeadersReceived)
            #expect(t.responseHeadersReceived <= t.completed && t.completed <= after)
        }
        // Request 0 read the clock itself; the others carry the caller's time as given.
        let first = timings.first { $0.submitted != given }
        #expect(first != nil && first!.submitted >= before)
        #expect(timings.filter { $0.submitted == given }.count == 19)
        // All 20 HEADERS left in one flush: one timestamp for the batch.
        #expect(Set(timings.map(\.headersSent)).count == 1)
        client.close()
    }
}
