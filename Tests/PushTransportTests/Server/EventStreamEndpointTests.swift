import Foundation
@testable import PushTransport
import Synchronization
import Testing

/// The live viewers' endpoint: server-sent events framed as browsers read them, what was kept replayed
/// to a viewer that connects late, the viewer limit, a viewer that never reads dropped while the others
/// keep up, and plain answers for the rest.
@Suite struct EventStreamEndpointTests {
    /// A blocking loopback client with a short receive timeout, so every read loop below is bounded in time.
    final class Client: @unchecked Sendable {
        let fd: Int32
        var received: [UInt8] = []
        /// The peer closed the connection.
        var closed = false

        init(port: Int, receiveBuffer: Int32? = nil) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
            var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = in_port_t(UInt16(port).bigEndian)
            a.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard rc == 0 else { close(fd); throw POSIXError(.ECONNREFUSED) }
        }

        deinit { close(fd) }

        func send(_ text: String) {
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        var text: String { String(decoding: received, as: UTF8.self) }

        /// Reads until `done(text)` or the peer closes or `seconds` pass; whether `done` held.
        @discardableResult
        func read(for seconds: Double = 5, until done: (String) -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            var chunk = [UInt8](repeating: 0, count: 65536)
            while Date() < deadline {
                if done(text) { return true }
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n > 0 { received += chunk[0..<n] } else if n == 0 { closed = true; return done(text) }
            }
            return done(text)
        }
    }

    static func start(_ limits: EventStreamEndpoint.Limits = .init()) throws -> EventStreamEndpoint {
        try EventStreamEndpoint.start(host: "127.0.0.1", port: 0, limits: limits) { path, query in
            path == "/echo" ? .init(status: 200, contentType: "text/plain", body: "after=\(query["after"] ?? "-")\n") : nil
        }
    }

    @Test func anEventIsFramedAsServerSentEvents() {
        #expect(EventStreamEndpoint.Event(name: "second", data: "{\"a\":1}", id: 7).wire == "event: second\nid: 7\ndata: {\"a\":1}\n\n")
        #expect(EventStreamEndpoint.Event(name: "final", data: "{\n  \"a\": 1\n}").wire
                == "event: final\ndata: {\ndata:   \"a\": 1\ndata: }\n\n")
    }

    @Test func aLateViewerGetsWhatWasKeptThenEachEventOnce() throws {
        let endpoint = try Self.start(.init(keptEvents: 3))
        defer { endpoint.stop() }
        for n in 1...5 { endpoint.publish(.init(name: "second", data: "s\(n)", id: n), keeping: .history) }
        endpoint.publish(.init(name: "live", data: "l1"), keeping: .latest)
        endpoint.publish(.init(name: "live", data: "l2"), keeping: .latest)
        endpoint.publish(.init(name: "note", data: "gone"), keeping: .none)
        #expect(endpoint.kept(named: "second").map(\.id) == [3, 4, 5])

        let viewer = try Client(port: endpoint.port)
        viewer.send("GET /events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
        #expect(viewer.read { $0.contains("data: l2\n\n") })
        let head = viewer.text.components(separatedBy: "\r\n\r\n")[0]
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && head.contains("content-type: text/event-stream"))
        let body = viewer.text.components(separatedBy: "\r\n\r\n")[1]
        #expect(body == "event: second\nid: 3\ndata: s3\n\nevent: second\nid: 4\ndata: s4\n\nevent: second\nid: 5\ndata: s5\n\n"
                + "event: live\ndata: l2\n\n")
        endpoint.publish(.init(name: "second", data: "s6", id: 6), keeping: .history)
        endpoint.publish(.init(name: "note", data: "now"), keeping: .none)
        #expect(viewer.read { $0.contains("data: now\n\n") })
        #expect(viewer.text.hasSuffix("data: l2\n\nevent: second\nid: 6\ndata: s6\n\nevent: note\ndata: now\n\n"))
        #expect(endpoint.viewers == 1)
    }

    @Test func theViewerPastTheLimitIsRefusedWithTheReason() throws {
        let endpoint = try Self.start(.init(viewers: 8, refusal: "at most 8 viewers (--dashboard-viewers)"))
        defer { endpoint.stop() }
        var viewers: [Client] = []
        for _ in 0..<8 {
            let v = try Client(port: endpoint.port)
            v.send("GET /events HTTP/1.1\r\n\r\n")
            #expect(v.read { $0.contains("\r\n\r\n") })
            #expect(v.text.hasPrefix("HTTP/1.1 200 OK"))
            viewers.append(v)
        }
        let ninth = try Client(port: endpoint.port)
        ninth.send("GET /events HTTP/1.1\r\n\r\n")
        #expect(ninth.read { $0.hasSuffix("\n") && $0.contains("\r\n\r\n") })
        #expect(ninth.text.hasPrefix("HTTP/1.1 503 "))
        #expect(ninth.text.hasSuffix("\r\n\r\nat most 8 viewers (--dashboard-viewers)\n"))
        #expect(endpoint.refused == 1 && endpoint.viewers == 8)

        // One leaves: its place is free again.
        viewers.removeLast()
        let deadline = Date().addingTimeInterval(5)
        while endpoint.viewers > 7 && Date() < deadline { usleep(20_000) }
        #expect(endpoint.viewers == 7)
        let next = try Client(port: endpoint.port)
        next.send("GET /events HTTP/1.1\r\n\r\n")
        #expect(next.read { $0.contains("\r\n\r\n") })
        #expect(next.text.hasPrefix("HTTP/1.1 200 OK"))
    }

    /// A viewer that never reads is closed once its bound is passed; a reading viewer gets every event,
    /// the last one included.
    @Test func aViewerThatNeverReadsIsDroppedAndTheOthersKeepUp() throws {
        let endpoint = try Self.start(.init(viewerBufferBytes: 256 << 10))
        defer { endpoint.stop() }
        let stuck = try Client(port: endpoint.port, receiveBuffer: 4096)
        stuck.send("GET /events HTTP/1.1\r\n\r\n")
        let reader = try Client(port: endpoint.port)
        reader.send("GET /events HTTP/1.1\r\n\r\n")
        let deadline = Date().addingTimeInterval(5)
        while endpoint.viewers < 2 && Date() < deadline { usleep(10_000) }
        #expect(endpoint.viewers == 2)

        let got = Atomic<Int>(0)
        let sawLast = Atomic<Bool>(false)
        let readerDone = DispatchSemaphore(value: 0)
        Thread {
            // Keeps reading, counting bytes and looking only at the tail, until the marker arrives (or 30 s).
            let deadline = Date().addingTimeInterval(30)
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            var tail: [UInt8] = []
            var total = 0
            while Date() < deadline {
                let n = chunk.withUnsafeMutableBytes { recv(reader.fd, $0.baseAddress, $0.count, 0) }
                if n == 0 { break }
                guard n > 0 else { continue }
                total += n
                tail = Array((tail + chunk[0..<n]).suffix(64))
                got.store(total, ordering: .relaxed)
                if String(decoding: tail, as: UTF8.self).hasSuffix("data: last\n\n") {
                    sawLast.store(true, ordering: .relaxed)
                    break
                }
            }
            readerDone.signal()
        }.start()

        let payload = String(repeating: "x", count: 8000)
        var published = 0
        let until = Date().addingTimeInterval(20)
        // At most 8,000 events of 8 kB (64 MB), far past any socket buffer and the 256 kB bound.
        // Paced by the reader (never more than ~80 kB ahead of it), so only the viewer that never reads
        // falls behind.
        while endpoint.dropped == 0 && published < 8000 && Date() < until {
            if published * 8050 - got.load(ordering: .relaxed) > 80_000 {
                usleep(1_000)
                continue
            }
            endpoint.publish(.init(name: "second", data: payload, id: published), keeping: .none)
            published += 1
        }
        #expect(endpoint.dropped == 1)
        endpoint.publish(.init(name: "second", data: "last"), keeping: .none)
        readerDone.wait()
        let saw = sawLast.load(ordering: .relaxed)
        #expect(saw)
        let bytes = got.load(ordering: .relaxed)
        #expect(bytes > published * 8000)
        #expect(endpoint.viewers == 1)
        // The stuck viewer's connection was closed: once it reads, it finds the end.
        stuck.read(for: 10) { _ in false }
        #expect(stuck.closed)
    }

    /// What was kept can be more than the bound (an hour of seconds): a late viewer gets all of it.
    @Test func aReplayLargerThanTheBoundIsNotADrop() throws {
        let endpoint = try Self.start(.init(viewerBufferBytes: 16 << 10, keptEvents: 100))
        defer { endpoint.stop() }
        let payload = String(repeating: "y", count: 8000)
        for n in 0..<100 { endpoint.publish(.init(name: "second", data: payload, id: n), keeping: .history) }
        let viewer = try Client(port: endpoint.port, receiveBuffer: 4096)
        viewer.send("GET /events HTTP/1.1\r\n\r\n")
        // Slow to start reading: the whole replay (800 kB, fifty times the bound) waits for it.
        usleep(300_000)
        #expect(endpoint.viewers == 1 && endpoint.dropped == 0)
        #expect(viewer.read(for: 20) { $0.hasSuffix("id: 99\ndata: \(payload)\n\n") })
        #expect(endpoint.dropped == 0)
    }

    @Test func otherPathsAreAnsweredOnceAndBadRequestsRefused() throws {
        let endpoint = try Self.start()
        defer { endpoint.stop() }
        func ask(_ request: String) throws -> String {
            let c = try Client(port: endpoint.port)
            c.send(request)
            c.read { _ in false }
            return c.text
        }
        let echo = try ask("GET /echo?after=41&x=1 HTTP/1.1\r\n\r\n")
        #expect(echo.hasPrefix("HTTP/1.1 200 OK\r\n") && echo.contains("content-length: 9\r\n") && echo.hasSuffix("\r\n\r\nafter=41\n"))
        #expect(try ask("GET /echo HTTP/1.1\r\n\r\n").hasSuffix("after=-\n"))
        #expect(try ask("GET /nothing HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 404 "))
        #expect(try ask("POST /events HTTP/1.1\r\ncontent-length: 0\r\n\r\n").hasPrefix("HTTP/1.1 405 "))
        #expect(try ask("DELETE /echo HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 405 "))
        #expect(try ask("hello\r\n\r\n").hasPrefix("HTTP/1.1 400 "))
        // A client that closes its side once the request is sent is answered all the same.
        let halfClosed = try Client(port: endpoint.port)
        halfClosed.send("GET /echo?after=7 HTTP/1.1\r\n\r\n")
        shutdown(halfClosed.fd, Int32(SHUT_WR))
        halfClosed.read { _ in false }
        #expect(halfClosed.text.hasSuffix("\r\n\r\nafter=7\n"))
        let head = try ask("HEAD /echo HTTP/1.1\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.1 200 OK") && !head.contains("after="))
        #expect(endpoint.viewers == 0)
    }

    /// Each event name keeps its own history: a source publishing several events a second keeps as many
    /// seconds of each as one publishing one.
    @Test func eachEventNameKeepsItsOwnHistory() {
        let store = EventStreamStore(historyLimit: 3)
        for n in 1...5 {
            for name in ["second", "pipeline", "gateway"] {
                store.publish(.init(event: .init(name: name, data: "\(name)\(n)", id: n), keeping: .history))
            }
        }
        store.publish(.init(event: .init(name: "mark", data: "m", id: nil), keeping: .history))
        for name in ["second", "pipeline", "gateway"] {
            #expect(store.kept(named: name).map(\.id) == [3, 4, 5], "\(name)")
            #expect(store.keptCount(named: name) == 3)
        }
        #expect(store.kept(named: "mark").count == 1 && store.keptCount(named: "mark") == 1)
        #expect(store.keptCount(named: "live") == 0)
    }

    /// A client that asks for a long answer and never reads it is closed after the answer deadline; while
    /// its answer waits past the bound, another request is answered 503; then a viewer connects as usual.
    @Test func aClientThatAsksAndNeverReadsIsClosedAfterTheDeadline() throws {
        let body = String(repeating: "z", count: 16 << 20)
        let limits = EventStreamEndpoint.Limits(viewers: 1, answerSeconds: 1, answerBufferBytes: 4 << 20)
        let endpoint = try EventStreamEndpoint.start(host: "127.0.0.1", port: 0, limits: limits) { path, _ in
            switch path {
            case "/big": return .init(status: 200, contentType: "text/plain", body: body)
            case "/small": return .init(status: 200, contentType: "text/plain", body: "small\n")
            default: return nil
            }
        }
        defer { endpoint.stop() }
        let stuck = try Client(port: endpoint.port, receiveBuffer: 4096)
        stuck.send("GET /big HTTP/1.1\r\n\r\n")
        usleep(300_000)
        // 16 MiB answered, far more than the kernel's buffers take: over 4 MiB wait for the stuck client.
        let other = try Client(port: endpoint.port)
        other.send("GET /small HTTP/1.1\r\n\r\n")
        other.read { _ in false }
        #expect(other.text.hasPrefix("HTTP/1.1 503 ") && other.text.hasSuffix("\r\n\r\nbusy: other answers are still being sent\n"))

        // Past the deadline the stuck client's connection is closed: reading now finds its end before
        // the whole answer.
        usleep(1_500_000)
        var total = 0
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        let until = Date().addingTimeInterval(20)
        var ended = false
        while Date() < until {
            let n = chunk.withUnsafeMutableBytes { recv(stuck.fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { total += n } else if n == 0 { ended = true; break } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { ended = true; break }
        }
        #expect(ended)
        #expect(total < body.utf8.count)

        let next = try Client(port: endpoint.port)
        next.send("GET /small HTTP/1.1\r\n\r\n")
        next.read { _ in false }
        #expect(next.text.hasPrefix("HTTP/1.1 200 OK") && next.text.hasSuffix("small\n"))
        let viewer = try Client(port: endpoint.port)
        viewer.send("GET /events HTTP/1.1\r\n\r\n")
        #expect(viewer.read { $0.contains("\r\n\r\n") })
        #expect(viewer.text.hasPrefix("HTTP/1.1 200 OK"))
    }

    /// `HEAD /events` gets the stream's head and the connection closed, and is not a viewer.
    @Test func headOfTheStreamIsItsHeadAlone() throws {
        let endpoint = try Self.start()
        defer { endpoint.stop() }
        endpoint.publish(.init(name: "second", data: "s1", id: 1), keeping: .history)
        let c = try Client(port: endpoint.port)
        c.send("HEAD /events HTTP/1.1\r\n\r\n")
        c.read { _ in false }
        #expect(c.closed)
        #expect(c.text.hasPrefix("HTTP/1.1 200 OK\r\n") && c.text.contains("content-type: text/event-stream\r\n"))
        #expect(c.text.hasSuffix("\r\n\r\n") && !c.text.contains("data:"))
        #expect(endpoint.viewers == 0)
    }

    @Test func stopSendsWhatIsQueuedThenCloses() throws {
        let endpoint = try Self.start()
        let viewer = try Client(port: endpoint.port)
        viewer.send("GET /events HTTP/1.1\r\n\r\n")
        #expect(viewer.read { $0.contains("\r\n\r\n") })
        endpoint.publish(.init(name: "final", data: "{}"), keeping: .latest)
        endpoint.stop()
        endpoint.stop()
        viewer.read { _ in false }
        #expect(viewer.closed)
        #expect(viewer.text.hasSuffix("event: final\ndata: {}\n\n"))
        #expect(throws: POSIXError.self) { try Client(port: endpoint.port) }
    }
}
