#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A small HTTP/1.1 server on its own thread for monitors: answers `GET` requests from a handler that
/// reads published values (never the event loops), one request per connection (`Connection: close`),
/// which is how Prometheus and curl scrape. Blocking sockets and a poll of a quarter second, so
/// ``stop()`` returns promptly; a client that sends no complete request within a second is dropped.
///
/// ```swift
/// let endpoint = try ScrapeEndpoint.start(host: "127.0.0.1", port: 9464) { path in
///     path == "/metrics" ? .init(status: 200, contentType: ScrapeEndpoint.prometheusContentType, body: text()) : nil
/// }
/// defer { endpoint.stop() }
/// ```
public final class ScrapeEndpoint: Sendable {
    /// What the handler answers for one path.
    public struct Response: Sendable {
        /// HTTP status.
        public var status: Int
        /// `content-type` of the body.
        var contentType: String
        /// The body.
        public var body: String

        /// A response.
        public init(status: Int, contentType: String, body: String) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
    }

    /// Why the endpoint could not listen.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// `listen HOST:PORT: reason`.
        public var description: String
    }

    /// The content type of Prometheus's text exposition format.
    public static let prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The port listened on (the one picked when 0 was asked).
    public let port: Int
    private let socket: Int32
    private let stopping = Atomic<Bool>(false)
    private let thread = Mutex<pthread_t?>(nil)

    private init(socket: Int32, port: Int) {
        self.socket = socket
        self.port = port
    }

    /// Listens on `host:port` (numeric IPv4 or IPv6; port 0 picks one) and serves `handler`'s answers
    /// on a thread of its own: nil from the handler is 404. GET and HEAD only (else 405).
    public static func start(host: String, port: Int,
                             handler: @escaping @Sendable (_ path: String) -> Response?) throws(Failure) -> ScrapeEndpoint {
        let (fd, actual) = try ListeningSocket.open(host: host, port: port)
        let endpoint = ScrapeEndpoint(socket: fd, port: actual)
        let t = try ListeningSocket.startThread(serving: fd, host: host, port: port) { endpoint.serve(handler) }
        endpoint.thread.withLock { $0 = t }
        return endpoint
    }

    /// Stops serving and closes the socket (waits for the request being answered, if any). Idempotent.
    public func stop() {
        guard let t = thread.withLock({ t -> pthread_t? in defer { t = nil }; return t }) else { return }
        stopping.store(true, ordering: .relaxed)
        pthread_join(t, nil)
        close(socket)
    }

    private func serve(_ handler: @Sendable (String) -> Response?) {
        var pfd = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        while !stopping.load(ordering: .relaxed) {
            guard poll(&pfd, 1, 250) > 0 else { continue }
            let client = accept(socket, nil, nil)
            guard client >= 0 else { continue }
            answer(client, handler)
            close(client)
        }
    }

    /// Reads one request head (at most 8 KiB, within a second) and answers it.
    private func answer(_ client: Int32, _ handler: @Sendable (String) -> Response?) {
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        while head.count < 8192 {
            let n = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return }
            head += chunk[0..<n]
            if Self.headEnds(head) { break }
        }
        guard Self.headEnds(head) else { return send(client, Response(status: 431, contentType: "text/plain", body: "request head too large\n"), head: false) }
        let line = head.prefix { $0 != 0x0D && $0 != 0x0A }
        let parts = line.split(separator: 0x20)
        guard parts.count == 3, parts[2].starts(with: Array("HTTP/1.".utf8)) else {
            return send(client, Response(status: 400, contentType: "text/plain", body: "not an HTTP/1.x request\n"), head: false)
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        var path = String(decoding: parts[1], as: UTF8.self)
        if let q = path.firstIndex(of: "?") { path = String(path[..<q]) }
        guard method == "GET" || method == "HEAD" else {
            return send(client, Response(status: 405, contentType: "text/plain", body: "only GET\n"), head: false)
        }
        let response = handler(path) ?? Response(status: 404, contentType: "text/plain", body: "not found: try /metrics\n")
        send(client, response, head: method == "HEAD")
    }

    private static func headEnds(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 4 else { return false }
        for i in 0...(bytes.count - 4) where bytes[i] == 0x0D && bytes[i + 1] == 0x0A && bytes[i + 2] == 0x0D && bytes[i + 3] == 0x0A {
            return true
        }
        return false
    }

    private func send(_ client: Int32, _ r: Response, head: Bool) {
        let reason = [200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
                      431: "Request Header Fields Too Large"][r.status] ?? "Status"
        let body = Array(r.body.utf8)
        var out = Array("HTTP/1.1 \(r.status) \(reason)\r\ncontent-type: \(r.contentType)\r\ncontent-length: \(body.count)\r\nconnection: close\r\n\r\n".utf8)
        if !head { out += body }
        var offset = 0
        while offset < out.count {
            let n = out.withUnsafeBytes { Glibc.send(client, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            offset += n
        }
    }
}
