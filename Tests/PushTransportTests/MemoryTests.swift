import CUV
import Foundation
import Glibc
@testable import PushTransport
import Testing

/// 10,000 streams open at once (100 connections x 100 streams), client and server in one process:
/// the memory they hold is reported and bounded, in resident memory as well as heap (load generator
/// budget 200 MB + gateway 100 MB).
@Suite(.serialized) struct MemoryTests {
    /// Resident memory of this process (VmRSS in /proc/self/status), in bytes.
    static func rssBytes() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kB = Int(line.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") else {
            throw TransportError(kind: .errno, code: EINVAL, function: "VmRSS")
        }
        return kB * 1024
    }

    @Test func residentMemoryIsMeasured() throws {
        // Touch 128 MiB: the reading must rise by about that much, or the budget below could not fail.
        let before = try Self.rssBytes()
        let block = UnsafeMutableRawPointer.allocate(byteCount: 128 << 20, alignment: 4096)
        defer { block.deallocate() }
        memset(block, 1, 128 << 20)
        let after = try Self.rssBytes()
        #expect(before > 0)
        #expect(after - before >= 100 << 20, "RSS \(before >> 20) MiB -> \(after >> 20) MiB")
    }

    @Test func tenThousandOpenStreams() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop)
        server.deferResponses = true
        server.deferred.reserveCapacity(10_000)
        let heap0 = pb_heap_in_use()
        let rss0 = try Self.rssBytes()
        var clients: [(HTTP2ClientConnection, TestClient)] = []
        for _ in 0..<100 {
            let d = TestClient()
            let c = HTTP2ClientConnection(loop: loop, delegate: d)
            c.connect(host: "127.0.0.1", port: server.port)
            clients.append((c, d))
        }
        #expect(loop.run(until: { clients.allSatisfy { $0.1.connected } }, timeoutNanoseconds: 30 * seconds))
        let block = try makeBlock()
        let payload = Array(repeating: UInt8(ascii: "p"), count: 300)
        for (c, _) in clients {
            for k in 0..<100 {
                try c.submit(block, context: UInt64(k)) { req in
                    req.setValue(0, "/3/device/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
                    req.setValue(1, "123e4567-e89b-12d3-a456-426614174000")
                    payload.withUnsafeBytes { req.body.copyMemory(from: $0) }
                    req.setBodyLength(payload.count)
                }
            }
        }
        #expect(loop.run(until: { server.deferred.count == 10_000 }, timeoutNanoseconds: 60 * seconds))
        let heap = Int(pb_heap_in_use()) - Int(heap0)
        let rss = try Self.rssBytes() - rss0
        print("10,000 open streams (client + server, 100 connections): heap +\(heap >> 20) MiB, RSS +\(rss >> 20) MiB")
        #expect(heap < 300 << 20)
        #expect(rss < 300 << 20, "RSS +\(rss >> 20) MiB over the 300 MB budget")
        for (c, id) in server.deferred { server.respond(c, id) }
        #expect(loop.run(until: { clients.allSatisfy { $0.1.responses == 100 } }, timeoutNanoseconds: 60 * seconds))
        for (c, _) in clients { c.close() }
        loop.run(until: { server.server.connectionsOpen == 0 }, timeoutNanoseconds: 30 * seconds)
    }
}
