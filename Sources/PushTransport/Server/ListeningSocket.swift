import CUV
#if canImport(Glibc)
import Glibc
#endif

/// Opens the listening TCP socket of the monitoring endpoints (``ScrapeEndpoint``, ``EventStreamEndpoint``):
/// a numeric IPv4 or IPv6 host, port 0 picking one.
enum ListeningSocket {
    /// `host:port` as a URL shows it (`[::1]:8088`).
    static func shown(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// A bound, listening, close-on-exec socket and the port it got.
    static func open(host: String, port: Int, backlog: Int32 = 16) throws(ScrapeEndpoint.Failure) -> (fd: Int32, port: Int) {
        let shown = shown(host: host, port: port)
        func failure(_ what: String) -> ScrapeEndpoint.Failure {
            ScrapeEndpoint.Failure(description: "listen \(shown): \(what): \(String(cString: strerror(errno)))")
        }
        var storage = sockaddr_storage()
        func store<A>(_ address: A) -> socklen_t {
            withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: address) { dst.copyMemory(from: $0) } }
            return socklen_t(MemoryLayout<A>.size)
        }
        let family = host.contains(":") ? AF_INET6 : AF_INET
        var length: socklen_t
        var numeric: Bool
        if family == AF_INET6 {
            var a = sockaddr_in6()
            (a.sin6_family, a.sin6_port) = (sa_family_t(AF_INET6), in_port_t(UInt16(port).bigEndian))
            numeric = inet_pton(AF_INET6, host, &a.sin6_addr) == 1
            length = store(a)
        } else {
            var a = sockaddr_in()
            (a.sin_family, a.sin_port) = (sa_family_t(AF_INET), in_port_t(UInt16(port).bigEndian))
            numeric = inet_pton(AF_INET, host, &a.sin_addr) == 1
            length = store(a)
        }
        guard numeric else { throw ScrapeEndpoint.Failure(description: "listen \(shown): not a numeric address") }
        let fd = Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, backlog) == 0 else {
            let f = failure(bound == 0 ? "listen" : "bind")
            close(fd)
            throw f
        }
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let actual = withUnsafeBytes(of: storage) { raw -> Int in
            // sin_port and sin6_port sit at the same offset, in network order.
            Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
        }
        return (fd, actual)
    }
}
