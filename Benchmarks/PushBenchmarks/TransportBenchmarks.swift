#if canImport(Glibc)
import Glibc
#endif
import PushTransport

/// `pushbench-benchmarks transport-server --port N [--host 127.0.0.1] [--max-streams 1000]`:
/// a trivial HTTP/2 (h2c) server on PushTransport answering every request `200` with the body
/// `{"ok":true}` (sent without copying), for h2load comparisons against nghttpd serving the same
/// bytes (scripts/bench-transport). Runs until SIGINT/SIGTERM; prints `listening on HOST:PORT`.
func runTransportBenchmarks(_ arguments: [String]) -> Int32 {
    var host = "127.0.0.1"
    var port = 0
    var maxStreams = 1000
    var i = 0
    while i < arguments.count {
        let a = arguments[i]
        let v = i + 1 < arguments.count ? arguments[i + 1] : nil
        switch a {
        case "--port":
            guard let v, let p = Int(v), (0...65535).contains(p) else { return usage("--port needs a number 0-65535") }
            port = p
        case "--host":
            guard let v else { return usage("--host needs an address") }
            host = v
        case "--max-streams":
            guard let v, let n = Int(v), n > 0 else { return usage("--max-streams needs a positive number") }
            maxStreams = n
        default:
            return usage("unknown option '\(a)'")
        }
        i += 2
    }
    do {
        let loop = try EventLoop()
        var config = HTTP2ServerConfiguration()
        config.maxConcurrentStreams = maxStreams
        let responder = OKResponder()
        let server = HTTP2Server(loop: loop, configuration: config, delegate: responder)
        let bound = try server.listen(host: host, port: port)
        let signals = SignalWatcher(loop: loop, signals: [SIGINT, SIGTERM]) { _ in
            server.close()
            loop.stop()
        }
        print("listening on \(host):\(bound)")
        fflush(nil)
        loop.run()
        print("requests: \(server.requestsReceived), connections: \(server.connectionsTotal), bytes in: \(server.bytesIn)")
        withExtendedLifetime((signals, responder)) {}
        return 0
    } catch {
        print("transport-server: \(error)")
        return 1
    }
}

private func usage(_ why: String) -> Int32 {
    print("transport-server: \(why)\nUSAGE: pushbench-benchmarks transport-server --port N [--host ADDR] [--max-streams N]")
    return 2
}

/// Answers 200 + `{"ok":true}` (a static body sent with NO_COPY) and `content-type: application/json`.
private final class OKResponder: HTTP2ServerDelegate {
    static let body: StaticString = "{\"ok\":true}"

    func server(_ server: HTTP2Server, didReceive request: HTTP2ServerRequest) {
        let body = UnsafeRawBufferPointer(start: OKResponder.body.utf8Start, count: OKResponder.body.utf8CodeUnitCount)
        request.connection.respond(to: request.streamID, status: 200, borrowingBody: body) { h in
            h.add("content-type", "application/json")
        }
    }
}
