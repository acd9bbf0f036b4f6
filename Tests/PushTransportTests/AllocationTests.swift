import CAllocCounter
@testable import PushTransport
import Testing

/// Steady state allocates nothing on the Swift side (client and server on one loop, this thread).
@Suite struct AllocationTests {
    /// Answers 200 with a small copied JSON body and an `apns-id` header, at once.
    final class LeanServer: HTTP2ServerDelegate {
        let body: UnsafeMutableRawBufferPointer
        init() {
            let json = "{\"reason\":\"BadDeviceToken\"}"
            body = .allocate(byteCount: json.utf8.count, alignment: 1)
            _ = body.initializeMemory(as: UInt8.self, from: json.utf8)
        }
        deinit { body.deallocate() }
        func server(_ server: HTTP2Server, didReceive r: HTTP2ServerRequest) {
            let id = r.headers.first(named: "apns-id") ?? UnsafeRawBufferPointer(start: nil, count: 0)
            r.connection.respond(to: r.streamID, status: 400, body: UnsafeRawBufferPointer(body)) { h in
                h.add("apns-id", id)
                h.add("content-type", "application/json")
            }
        }
    }

    /// Keeps `window` requests in flight until `remaining` reaches 0.
    final class LeanClient: HTTP2ClientDelegate {
        var connected = false
        var completed = 0
        var failed = 0
        var remaining = 0
        var block: HTTP2HeaderBlock!
        var payload: UnsafeMutableRawBufferPointer
        let mode: Int
        init(mode: Int) {
            self.mode = mode
            payload = .allocate(byteCount: 512, alignment: 1)
            for i in 0..<512 { payload[i] = UInt8(truncatingIfNeeded: i) }
        }
        deinit { payload.deallocate() }
        func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings) { connected = true }
        func connection(_ connection: HTTP2ClientConnection, didReceive response: HTTP2Response) {
            completed += 1
            if response.status != 400 || response.body.count != 27 { failed += 1 }
            submitNext(connection)
        }
        func connection(_ connection: HTTP2ClientConnection, streamDidFail failure: HTTP2StreamFailure) { failed += 1 }
        func submitNext(_ c: HTTP2ClientConnection) {
            guard remaining > 0 else { return }
            remaining -= 1
            let p = UnsafeRawBufferPointer(payload)
            let mode = self.mode
            do {
                try c.submit(block, context: UInt64(remaining)) { req in
                    req.setValue(0, capacity: 80) { buf in
                        // "/3/device/" + 64 hex digits, written in place.
                        let prefix: StaticString = "/3/device/"
                        buf.copyMemory(from: UnsafeRawBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
                        for i in 0..<64 { buf[10 + i] = UInt8(ascii: "a") + UInt8(i % 6) }
                        return 74
                    }
                    req.setValue(1, "123e4567-e89b-12d3-a456-426614174000")
                    switch mode {
                    case 0:
                        req.body.copyMemory(from: p)
                        req.setBodyLength(p.count)
                    case 1: req.copyBody(p)
                    default: req.borrowBody(p)
                    }
                }
            } catch {
                failed += 1
            }
        }
    }

    /// (Swift-side allocations per request, nghttp2 allocations per request) for `n` requests at `window`.
    /// Over TLS (`tls`) the client and server also encrypt and decrypt every batch.
    func measure(mode: Int, window: Int, n: Int, tls: Bool = false)
        throws -> (swift: Double, nghttp2: Double, nghttp2Requests: Double, openSSL: Double, batches: Double) {
        let loop = try EventLoop()
        let lean = LeanServer()
        var config = HTTP2ServerConfiguration()
        if tls { config.tls = try TestPKI.serverContext() }
        let server = HTTP2Server(loop: loop, configuration: config, delegate: lean)
        let port = try server.listen(host: "127.0.0.1", port: 0)
        let d = LeanClient(mode: mode)
        d.block = try HTTP2HeaderBlock.request(authority: "api.push.apple.com", path: nil,
                                               headers: [("apns-topic", "com.example.app"), ("apns-push-type", "alert")],
                                               perRequestHeaders: ["apns-id"])
        let client = HTTP2ClientConnection(loop: loop, delegate: d)
        if tls {
            client.connect(host: "127.0.0.1", port: port, tls: try TestPKI.clientContext(), serverName: "localhost")
        } else {
            client.connect(host: "127.0.0.1", port: port)
        }
        #expect(loop.run(until: { d.connected }, timeoutNanoseconds: 10 * seconds))
        func batch(_ count: Int) {
            d.completed = 0
            d.remaining = count
            for _ in 0..<window { d.submitNext(client) }
            // runOnce, not run(until:): the latter allocates its guard timer.
            var turns = 0
            while d.completed < count && turns < 10_000_000 {
                loop.runOnce()
                turns += 1
            }
        }
        batch(n)  // warm-up: slots, arenas, runtime metadata
        batch(n)
        var best = (swift: Double.infinity, nghttp2: Double.infinity, nghttp2Requests: Double.infinity, openSSL: 0.0, batches: 0.0)
        for _ in 0..<3 {
            let ng0 = loop.nghttp2Memory.allocations
            let rq0 = loop.nghttp2Memory.requests
            let ssl0 = pb_openssl_alloc_count()
            let w0 = loop.tlsBuffers.sslWrites
            pb_alloc_reset()
            batch(n)
            let total = pb_alloc_count()
            let ng = loop.nghttp2Memory.allocations - ng0
            let rq = loop.nghttp2Memory.requests - rq0
            let ssl = pb_openssl_alloc_count() - ssl0
            let swiftSide = Double(Int64(total) - Int64(ng) - Int64(ssl)) / Double(n)
            if swiftSide < best.swift {
                best = (swiftSide, Double(ng) / Double(n), Double(rq) / Double(n), Double(ssl) / Double(n),
                        Double(loop.tlsBuffers.sslWrites - w0) / Double(n))
            }
        }
        #expect(d.failed == 0)
        client.close()
        loop.run(until: { server.connectionsOpen == 0 }, timeoutNanoseconds: 10 * seconds)
        return best
    }

    @Test(arguments: [(0, 1, false), (0, 64, false), (1, 64, false), (2, 64, false), (0, 1, true), (0, 64, true), (2, 64, true)])
    func steadyStateAllocatesNothingOnTheSwiftSide(mode: Int, window: Int, tls: Bool) throws {
        let r = try measure(mode: mode, window: window, n: 2000, tls: tls)
        print("allocations per request (mode \(mode), window \(window)\(tls ? ", TLS" : "")): Swift side \(r.swift), "
              + "nghttp2 \(r.nghttp2) from malloc (\(r.nghttp2Requests) requested, the rest pooled)")
        #expect(r.swift == 0)
        if tls {
            // OpenSSL 3.0 allocates its record writer's bookkeeping (WPACKET) per SSL_write: a few
            // blocks per batch, never per request.
            #expect(pb_openssl_alloc_counter_active() != 0)
            print("  OpenSSL \(r.openSSL) per request, \(r.batches) SSL_write calls per request")
            #expect(r.openSSL <= 4 * r.batches)
        }
        // nghttp2 asks for blocks every request; the pool serves them.
        #expect(r.nghttp2Requests > 0)
        #expect(r.nghttp2 == 0)
    }
}
