import PushTransport

/// HTTP/1.1 GETs to several servers at once, on one private loop the caller's thread runs, each bounded
/// by one timeout: how `pushbench dashboard` asks every agent for its new seconds without one silent
/// agent holding up the others. A fresh connection per request, closed after the answer.
final class ParallelGet {
    /// Where one GET goes.
    struct Target: Equatable {
        /// Numeric address to connect to.
        var host: String
        /// Port.
        var port: Int
        /// `Host` header value.
        var authority: String
        /// Path with its query.
        var path: String
    }

    /// What one GET got.
    enum Outcome: Equatable {
        /// The status and the body.
        case answer(status: Int, body: [UInt8])
        /// Why there is no answer (refused, timed out, cut off, not HTTP).
        case failed(String)
    }

    private let loop: EventLoop

    /// A loop for the GETs; throws when libuv cannot make one.
    init() throws(TransportError) {
        loop = try EventLoop()
    }

    deinit { loop.close() }

    /// Sends every GET at once and waits for all their answers, at most `timeoutMilliseconds`; those not
    /// answered by then fail.
    func run(_ targets: [Target], timeoutMilliseconds: UInt64) -> [Outcome] {
        var config = HTTP1ClientConfiguration()
        config.bodyCapacity = 16
        config.connectTimeoutMilliseconds = timeoutMilliseconds
        config.keepsResponseHeaders = false
        let requests = targets.map { t in Request(t, loop: loop, configuration: config) }
        _ = loop.run(until: { requests.allSatisfy(\.done) }, timeoutNanoseconds: timeoutMilliseconds * 1_000_000)
        for r in requests { r.end() }
        // Lets the closes reach libuv before the connections go.
        _ = loop.run(until: { false }, timeoutNanoseconds: 2_000_000)
        return requests.map { $0.outcome ?? .failed("no answer within \(timeoutMilliseconds) ms") }
    }

    /// One GET and its connection.
    final class Request: HTTP1ClientDelegate {
        private(set) var outcome: Outcome?
        private var connection: HTTP1ClientConnection?
        private let head: HTTP1RequestHead?
        var done: Bool { outcome != nil }

        init(_ target: Target, loop: EventLoop, configuration: HTTP1ClientConfiguration) {
            head = try? HTTP1RequestHead(method: "GET", path: target.path, host: target.authority,
                                         headers: [("Accept", "application/x-ndjson, application/json")])
            guard head != nil else {
                outcome = .failed("'\(target.path)' is not a request path")
                return
            }
            let c = HTTP1ClientConnection(loop: loop, configuration: configuration, delegate: self)
            connection = c
            c.connect(host: target.host, port: target.port)
        }

        func end() {
            connection?.delegate = nil
            connection?.close()
            connection = nil
        }

        func connectionDidConnect(_ connection: HTTP1ClientConnection) {
            guard let head else { return }
            do { try connection.submit(head, context: 0) { _ in 0 } } catch { outcome = .failed("cannot send the request") }
        }

        func connection(_ connection: HTTP1ClientConnection, didFailToConnect error: TransportError) {
            outcome = .failed(error.message)
        }

        func connection(_ connection: HTTP1ClientConnection, didReceive response: HTTP1Response) {
            outcome = .answer(status: response.status, body: Array(response.body))
        }

        func connection(_ connection: HTTP1ClientConnection, requestDidFail context: UInt64, error: TransportError) {
            if outcome == nil { outcome = .failed("the connection ended before an answer (\(error.message))") }
        }

        func connectionDidClose(_ connection: HTTP1ClientConnection, error: TransportError) {
            if outcome == nil { outcome = .failed("the connection closed (\(error.message))") }
        }
    }
}
