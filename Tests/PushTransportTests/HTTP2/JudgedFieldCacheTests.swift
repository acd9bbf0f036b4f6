import CNGHTTP2
@testable import PushTransport
import Testing

@Suite struct JudgedFieldCacheTests {
    /// A literal field with incremental indexing (RFC 7541 §6.2.1, new name): it enters the peer's
    /// dynamic table, and the client's.
    private static func indexing(_ name: String, _ value: [UInt8]) -> [UInt8] {
        [0x40, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.count)] + value
    }

    /// A field from the table (§6.1): the client gets the entry's buffers again.
    private static func indexed(_ index: UInt8) -> [UInt8] { [0x80 | index] }

    private static let status200: [UInt8] = [0x88]

    /// Responses on one connection whose fields come from the HPACK table, where the client knows a
    /// field it judged before by its buffers: the rules end each response as libnghttp2's own checks
    /// do, a field judged regular before still closes the pseudo-header fields (a :status after it is
    /// malformed), and a field with new bytes under a known name is judged again.
    @Test func tableFieldsGetTheSameVerdictsAsLibnghttp2() throws {
        let loop = try EventLoop()
        // Dynamic table after stream 1: 62 = x-a: b, 63 = server: mock.
        let responses: [(UInt32, [UInt8])] = [
            (1, Self.status200 + Self.indexing("server", Array("mock".utf8)) + Self.indexing("x-a", Array("b".utf8))),
            (3, Self.status200 + Self.indexed(62) + Self.indexed(63)),
            // A regular field from the table before :status.
            (5, Self.indexed(63) + Self.status200),
            (7, Self.status200 + Self.indexed(63) + Self.indexed(62)),
            // The same name with a value that is not allowed (a trailing space), literal this time.
            (9, Self.status200 + [0x0f, 0x27, 0x05] + Array("mock ".utf8)),
            (11, Self.status200 + Self.indexed(63)),
        ]
        let (expected, _) = outcomes(responses, loop: loop, libraryChecks: true)
        let (got, judged) = outcomes(responses, loop: loop, libraryChecks: false)
        #expect(got == expected)
        #expect(got[1] == .response(status: 200, fields: ["server: mock", "x-a: b"], bodyLength: 0, error: nil))
        #expect(got[7] == .response(status: 200, fields: ["server: mock", "x-a: b"], bodyLength: 0, error: NGHTTP2_ERR_HTTP_HEADER.rawValue))
        if case .failed(.reset(NGHTTP2_PROTOCOL_ERROR.rawValue), _) = got[5] {} else { Issue.record("stream 5: \(String(describing: got[5]))") }
        if case .failed(.reset(NGHTTP2_PROTOCOL_ERROR.rawValue), _) = got[9] {} else { Issue.record("stream 9: \(String(describing: got[9]))") }
        #expect(got[11] == .response(status: 200, fields: ["server: mock"], bodyLength: 0, error: NGHTTP2_ERR_HTTP_HEADER.rawValue))
        // The two table fields were kept as judged (and only while the connection was open).
        #expect(judged == 2)
    }

    /// Sends one request per response on one client and answers each with its header block (END_STREAM);
    /// the outcomes by stream, and how many fields the client kept as judged before it closed.
    private func outcomes(_ responses: [(UInt32, [UInt8])], loop: EventLoop,
                          libraryChecks: Bool) -> ([Int32: ResponseOutcome], Int) {
        withRawPeerClient(loop: loop, libraryChecks: libraryChecks, failed: ([:], -1)) { client, peer, recorder in
            guard let block = try? HTTP2HeaderBlock.request(authority: "localhost", path: "/3/device/ab") else { return ([:], -1) }
            peer.send(RawPeer.frame(type: 0x4, flags: 0x1, stream: 0, []))
            for (stream, fields) in responses {
                guard let id = try? client.submit(block, context: UInt64(stream), { _ in }), id == Int32(stream) else { return ([:], -1) }
                // The request goes out before its answer comes in.
                _ = loop.run(until: { false }, timeoutNanoseconds: 5_000_000)
                _ = peer.takeReceived()
                peer.send(RawPeer.frame(type: 0x1, flags: 0x5, stream: stream, fields))
                _ = loop.run(until: { recorder.outcomes[Int32(stream)] != nil }, timeoutNanoseconds: 2 * seconds)
            }
            return (recorder.outcomes, client.judgedFieldCount)
        }
    }
}
