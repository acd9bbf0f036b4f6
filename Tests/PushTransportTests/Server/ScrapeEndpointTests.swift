import Foundation
@testable import PushTransport
import Synchronization
import Testing

/// The monitors' endpoint answers curl over HTTP/1.1 as Prometheus would be answered.
@Suite struct ScrapeEndpointTests {
    static func curl(_ port: Int, _ path: String, _ extra: [String] = []) throws -> (Int32, String) {
        try RealPeerTests.run(try RealPeerTests.peer("curl"),
                              ["-s", "--http1.1", "--max-time", "10", "-i"] + extra + ["http://127.0.0.1:\(port)\(path)"], timeout: 30)
    }

    @Test func answersGetHeadAndRefusesTheRest() throws {
        let hits = Atomic<Int>(0)
        let endpoint = try ScrapeEndpoint.start(host: "127.0.0.1", port: 0) { path in
            guard path == "/metrics" else { return nil }
            let n = hits.add(1, ordering: .relaxed).newValue
            return .init(status: 200, contentType: ScrapeEndpoint.prometheusContentType, body: "up \(n)\n")
        }
        defer { endpoint.stop() }
        #expect(endpoint.port > 0)

        let (status, text) = try Self.curl(endpoint.port, "/metrics?x=1")
        #expect(status == 0)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.contains("content-type: text/plain; version=0.0.4; charset=utf-8\r\n"))
        #expect(text.contains("content-length: 5\r\n") && text.hasSuffix("\r\n\r\nup 1\n"))

        let (_, again) = try Self.curl(endpoint.port, "/metrics")
        #expect(again.hasSuffix("up 2\n"))
        let (_, head) = try Self.curl(endpoint.port, "/metrics", ["-I"])
        #expect(head.hasPrefix("HTTP/1.1 200 OK") && !head.contains("up 3"))
        let (_, missing) = try Self.curl(endpoint.port, "/nothing")
        #expect(missing.hasPrefix("HTTP/1.1 404 "))
        let (_, post) = try Self.curl(endpoint.port, "/metrics", ["-X", "POST", "-d", "x"])
        #expect(post.hasPrefix("HTTP/1.1 405 "))
    }

    @Test func stopClosesThePortAndABusyPortIsAnError() throws {
        let endpoint = try ScrapeEndpoint.start(host: "127.0.0.1", port: 0) { _ in nil }
        let port = endpoint.port
        #expect(throws: ScrapeEndpoint.Failure.self) { try ScrapeEndpoint.start(host: "127.0.0.1", port: port) { _ in nil } }
        endpoint.stop()
        endpoint.stop()
        let (status, _) = try Self.curl(port, "/metrics")
        #expect(status != 0)
        #expect(throws: ScrapeEndpoint.Failure.self) { try ScrapeEndpoint.start(host: "not-an-address", port: 0) { _ in nil } }
    }

    /// A client that connects and says nothing is dropped after a second; the next scrape is answered.
    @Test func aSilentClientDoesNotBlockTheNextScrape() throws {
        let endpoint = try ScrapeEndpoint.start(host: "127.0.0.1", port: 0) { _ in .init(status: 200, contentType: "text/plain", body: "ok\n") }
        defer { endpoint.stop() }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(endpoint.port).bigEndian)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        #expect(rc == 0)
        let (status, text) = try Self.curl(endpoint.port, "/metrics")
        #expect(status == 0 && text.hasSuffix("ok\n"))
    }
}
