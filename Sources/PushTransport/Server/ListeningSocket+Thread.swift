#if canImport(Glibc)
import Glibc
#endif

extension ListeningSocket {
    /// Runs `body` on a new thread and returns it (to join); when no thread can be made, closes `fd`, the
    /// listening socket `body` would have served, and throws naming `host:port`.
    static func startThread(serving fd: Int32, host: String, port: Int,
                            _ body: @escaping () -> Void) throws(ScrapeEndpoint.Failure) -> pthread_t {
        final class Body {
            let run: () -> Void
            init(_ run: @escaping () -> Void) { self.run = run }
        }
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        var t = pthread_t()
        guard pthread_create(&t, nil, { raw in
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, box) == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            close(fd)
            throw ScrapeEndpoint.Failure(description: "listen \(shown(host: host, port: port)): cannot create its thread")
        }
        return t
    }
}
