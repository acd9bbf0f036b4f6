import CUV
import Glibc
import PushTransport
import Testing

/// 10,000 streams open at once (100 connections x 100 streams), client and server in one process:
/// the memory they hold is reported and bounded (load generator budget 200 MB + gateway 100 MB).
@Suite struct MemoryTests {
    static func rssBytes() -> Int {
        guard let f = fopen("/proc/self/statm", "r") else { return 0 }
        defer { fclose(f) }
        var size = 0, resident = 0
        _ = withUnsafeMutablePointer(to: &size) { s in
            withUnsafeMutablePointer(to: &resident) { r in
                withVaList([s, r]) { vfscanf(f, "%ld %ld", $0) }
            }
        }
        return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test func tenThousandOpenStreams() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop)
        server.deferResponses = true
        server.deferred.reserveCapacity(10_000)
        let heap0 = pb_heap_in_use()
        let rss0 = Self.rssBytes()
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
        let rss = Self.rssBytes() - rss0
        print("10,000 open streams (client + server, 100 connections): heap +\(heap >> 20) MiB, RSS +\(rss >> 20) MiB")
        #expect(heap < 300 << 20)
        for (c, id) in server.deferred { server.respond(c, id) }
        #expect(loop.run(until: { clients.allSatisfy { $0.1.responses == 100 } }, timeoutNanoseconds: 60 * seconds))
        for (c, _) in clients { c.close() }
        loop.run(until: { server.server.connectionsOpen == 0 }, timeoutNanoseconds: 30 * seconds)
    }
}
