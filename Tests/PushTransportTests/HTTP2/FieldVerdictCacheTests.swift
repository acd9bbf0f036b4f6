import CNGHTTP2
@testable import PushTransport
import Testing

/// HPACK representations written by hand (RFC 7541 §6), so a test chooses what the server's decoder
/// indexes, what it finds in its tables and when its dynamic table drops entries.
private enum HPACK {
    /// An integer with an `n`-bit prefix, the first byte's other bits `flags` (§5.1).
    static func int(_ v: Int, prefix n: Int, flags: UInt8) -> [UInt8] {
        let max = (1 << n) - 1
        if v < max { return [flags | UInt8(v)] }
        var out = [flags | UInt8(max)]
        var r = v - max
        while r >= 128 { out.append(UInt8(r & 0x7f) | 0x80); r >>= 7 }
        out.append(UInt8(r))
        return out
    }

    static func string(_ s: [UInt8]) -> [UInt8] { int(s.count, prefix: 7, flags: 0) + s }

    /// An indexed field (§6.1): static 1-61, dynamic from 62 (the newest).
    static func indexed(_ i: Int) -> [UInt8] { int(i, prefix: 7, flags: 0x80) }

    /// A literal the decoder adds to its dynamic table (§6.2.1), with a new name or the name of entry `name`.
    static func indexing(_ name: String, _ value: [UInt8]) -> [UInt8] { [0x40] + string(Array(name.utf8)) + string(value) }
    static func indexing(name i: Int, _ value: [UInt8]) -> [UInt8] { int(i, prefix: 6, flags: 0x40) + string(value) }

    /// A literal the decoder does not keep (§6.2.2), with the name of entry `name`.
    static func literal(name i: Int, _ value: [UInt8]) -> [UInt8] { int(i, prefix: 4, flags: 0) + string(value) }

    /// A dynamic table size update (§6.3).
    static func tableSize(_ n: Int) -> [UInt8] { int(n, prefix: 5, flags: 0x20) }

    /// :method POST and :scheme http (static 3 and 6), :path /x (static name 4, not kept).
    static let start: [UInt8] = indexed(3) + indexed(6) + literal(name: 4, Array("/x".utf8))
}

/// The server keeps its verdicts on the fields a client repeats through HPACK's tables
/// (FieldVerdictCache). The answers must be those the bytes call for, whatever was kept: a kept
/// verdict never stands for other bytes, and what a request's earlier fields settle (a repeated
/// pseudo-header field, a content-length against the body) is judged on every request.
@Suite struct FieldVerdictCacheTests {
    enum Answer: Equatable { case ok, reset(UInt32), none }

    /// Sends one request (`block`, then `body` if any) on `stream` and reads the server's answer.
    private func send(_ peer: RawPeer, _ stream: UInt32, _ block: [UInt8], body: [UInt8]? = nil) -> Answer {
        peer.end.send(RawPeer.frame(type: 0x1, flags: body == nil ? 0x5 : 0x4, stream: stream, block))
        if let body { peer.data(stream, body, endStream: true) }
        guard let f = peer.waitFor(timeout: 5 * seconds, { ($0.type == 0x3 || $0.type == 0x1) && $0.stream == stream || $0.type == 0x7 }) else {
            return .none
        }
        return f.type == 0x1 ? .ok : .reset(f.errorCode ?? 0)
    }

    private let malformed = Answer.reset(NGHTTP2_PROTOCOL_ERROR.rawValue)

    @Test func repeatedFieldsGetTheVerdictsOfTheirBytes() throws {
        let loop = try EventLoop()
        let s = try TestServer(loop: loop, listening: false)
        s.recordFields = true
        let peer = RawPeer(loop: loop, server: s.server)
        // Dynamic table after this request: 62 x-a: ok, 63 :authority: localhost.
        #expect(send(peer, 1, HPACK.start + HPACK.indexing(name: 1, Array("localhost".utf8))
                                 + HPACK.indexing("x-a", Array("ok".utf8))) == .ok)
        #expect(send(peer, 3, HPACK.start + HPACK.indexed(63) + HPACK.indexed(62)) == .ok)
        #expect(s.fieldLists.last == [":authority: localhost", ":method: POST", ":path: /x", ":scheme: http", "x-a: ok"])
        // The same name buffer with another value, bad and then good, and the kept pair again.
        #expect(send(peer, 5, HPACK.start + HPACK.indexed(63) + HPACK.literal(name: 62, [0x62, 0x01])) == malformed)
        #expect(send(peer, 7, HPACK.start + HPACK.indexed(63) + HPACK.literal(name: 62, Array("fine".utf8))) == .ok)
        #expect(s.fieldLists.last?.last == "x-a: fine")
        #expect(send(peer, 9, HPACK.start + HPACK.indexed(63) + HPACK.indexed(62)) == .ok)
        #expect(s.fieldLists.last?.last == "x-a: ok")
        // A kept pseudo-header field twice in one request, and after a regular field.
        #expect(send(peer, 11, HPACK.start + HPACK.indexed(63) + HPACK.indexed(63)) == malformed)
        #expect(send(peer, 13, HPACK.start + HPACK.indexed(62) + HPACK.indexed(63)) == malformed)
        #expect(send(peer, 15, HPACK.start + HPACK.indexed(63)) == .ok)
        // A kept content-length (62 content-length: 2, 63 x-a: ok, 64 :authority: localhost) against
        // bodies of its length and of another, and twice in one request.
        #expect(send(peer, 17, HPACK.start + HPACK.indexed(63) + HPACK.indexing(name: 28, Array("2".utf8)), body: [1, 2]) == .ok)
        #expect(send(peer, 19, HPACK.start + HPACK.indexed(64) + HPACK.indexed(62), body: [1, 2]) == .ok)
        #expect(send(peer, 21, HPACK.start + HPACK.indexed(64) + HPACK.indexed(62), body: [1, 2, 3]) == malformed)
        #expect(send(peer, 23, HPACK.start + HPACK.indexed(64) + HPACK.indexed(62) + HPACK.indexed(62), body: [1, 2]) == malformed)
        #expect(send(peer, 25, HPACK.start + HPACK.indexed(64) + HPACK.indexed(62), body: [1, 2]) == .ok)
        // New values of names kept with other values (:path, content-length, x-a): judged as values of
        // those names.
        #expect(send(peer, 27, HPACK.indexed(3) + HPACK.indexed(6) + HPACK.literal(name: 4, Array("/a b".utf8))
                                 + HPACK.indexed(64)) == malformed)
        #expect(send(peer, 29, HPACK.start + HPACK.indexed(64) + HPACK.literal(name: 28, Array("x".utf8)), body: [1]) == malformed)
        #expect(send(peer, 31, HPACK.start + HPACK.indexed(64) + HPACK.literal(name: 28, Array("1".utf8)), body: [1]) == .ok)
        #expect(send(peer, 33, HPACK.start + HPACK.indexed(64) + HPACK.literal(name: 63, Array(" ok".utf8))) == malformed)
        #expect(s.requests == 9)
    }

    /// The dynamic table drops its entries (a size update to 0) and the client adds new ones of the
    /// same sizes: the decoder's allocator hands out the freed blocks again, so new bytes can come at
    /// the addresses of buffers a verdict was kept for (name and value are of sizes no other buffer of
    /// the request has, so each would get its own block back). Each round turns good into bad and back.
    @Test func droppedTableEntriesDoNotLendTheirVerdicts() throws {
        let loop = try EventLoop()
        let s = try TestServer(loop: loop, listening: false)
        let peer = RawPeer(loop: loop, server: s.server)
        var stream: UInt32 = 1
        var answers: [Answer] = [], expected: [Answer] = []
        let name = "x-" + String(repeating: "a", count: 40)
        for round in 0..<8 {
            let bad = round % 2 == 1
            let value = [UInt8](repeating: 0x6f, count: 99) + [bad ? 0x00 : 0x6f]
            let authority: [UInt8] = Array("a.b".utf8)
            // Empty the table, then add :authority and the field (62 the field, 63 :authority) and refer to both.
            let add = HPACK.tableSize(0) + HPACK.tableSize(4096) + HPACK.start
                + HPACK.indexing(name: 1, authority) + HPACK.indexing(name, value)
            answers.append(send(peer, stream, add))
            answers.append(send(peer, stream + 2, HPACK.start + HPACK.indexed(63) + HPACK.indexed(62)))
            answers.append(send(peer, stream + 4, HPACK.start + HPACK.indexed(63) + HPACK.indexed(62)))
            expected += Array(repeating: bad ? malformed : .ok, count: 3)
            stream += 6
        }
        #expect(answers == expected)
    }

    /// Many different values of one name, then the kept ones again: each gets the verdict of its bytes
    /// (a cache that keeps few entries must give way without mixing them up).
    @Test func manyValuesOfOneName() throws {
        let loop = try EventLoop()
        let s = try TestServer(loop: loop, listening: false)
        let peer = RawPeer(loop: loop, server: s.server)
        var stream: UInt32 = 1
        var answers: [Answer] = [], expected: [Answer] = []
        let authority = HPACK.indexing(name: 1, Array("localhost".utf8))
        for i in 0..<40 {
            let bad = i % 3 == 0
            let value: [UInt8] = Array("v\(i)".utf8) + (bad ? [0x7f] : [])
            answers.append(send(peer, stream, HPACK.start + authority + HPACK.indexing("x-many", value)))
            answers.append(send(peer, stream + 2, HPACK.start + HPACK.indexed(63) + HPACK.indexed(62)))
            expected += [bad ? malformed : .ok, bad ? malformed : .ok]
            stream += 4
        }
        #expect(answers == expected)
    }
}
