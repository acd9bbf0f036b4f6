import Foundation
import Synchronization
import Testing
import PushPayload
import PushTransport
@testable import LoadGenerator

/// What the load generator puts on the wire for apns-id, seen by a bare HTTP/2 server on its own loop.
@Suite(.serialized) struct ApnsIDHeaderTests {
    /// Counts requests and those carrying an apns-id (with its length), answering 200.
    final class Recorder: HTTP2ServerDelegate, @unchecked Sendable {
        // Written on the server thread only; read after it has been joined (the done flag orders them).
        var requests = 0, withID = 0, goodLength = 0
        func server(_ server: HTTP2Server, didReceive r: HTTP2ServerRequest) {
            requests += 1
            if let id = r.headers.first(named: "apns-id") {
                withID += 1
                if id.count == 36 { goodLength += 1 }
            }
            r.connection.respond(to: r.streamID, status: 200)
        }
    }

    private func run(sendsID: Bool) throws -> Recorder {
        let recorder = Recorder()
        let port = Atomic<Int>(0)
        let done = Atomic<Bool>(false)
        let finished = Atomic<Bool>(false)
        let thread = Thread {
            let loop = try! EventLoop()
            let server = HTTP2Server(loop: loop, delegate: recorder)
            port.store(try! server.listen(host: "127.0.0.1", port: 0), ordering: .releasing)
            _ = loop.run(until: { done.load(ordering: .acquiring) }, timeoutNanoseconds: 30_000_000_000)
            server.close()
            _ = loop.run(until: { false }, timeoutNanoseconds: 20_000_000)
            finished.store(true, ordering: .releasing)
        }
        thread.start()
        while port.load(ordering: .acquiring) == 0 { usleep(1_000) }
        var c = LoadConfiguration(host: "127.0.0.1", port: port.load(ordering: .acquiring), template: .defaultAPNs(),
                                  tokens: DeviceTokens(synthetic: 10, seed: 3))
        c.rate = 400
        c.durationNs = 250_000_000
        c.connections = 1
        c.streams = 10
        c.sendsApnsID = sendsID
        let r = try LoadRun.run(c)
        done.store(true, ordering: .releasing)
        while !finished.load(ordering: .acquiring) { usleep(1_000) }
        #expect(r.measured.succeeded == 100)
        return recorder
    }

    @Test func everyRequestCarriesAUUIDByDefaultAndNoneWithNoApnsID() throws {
        let with = try run(sendsID: true)
        #expect(with.requests == 100 && with.withID == 100 && with.goodLength == 100)
        let without = try run(sendsID: false)
        #expect(without.requests == 100 && without.withID == 0)
    }
}
