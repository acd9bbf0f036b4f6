#if canImport(Glibc)
import Glibc
#endif

/// The warning `pushbench gateway` prints when it listens beyond loopback: it is a test double that
/// authenticates nobody (unless an auth option is on), so anyone who can reach the address can use it.
enum ListenWarning {
    /// The warning for `host`, naming the interfaces it reaches (nil: loopback only); `authenticated`
    /// when an authentication option is on.
    /// Nil too when no interface holds the address: the gateway cannot listen there, and its start
    /// fails with one line saying so.
    static func message(host: String, port: Int, authenticated: Bool = false) -> String? {
        let interfaces = reachedInterfaces(host: host)
        if interfaces.allSatisfy(\.loopback) || isLoopbackName(host) { return nil }
        let named = interfaces.map { "\($0.name) \($0.address)" }.joined(separator: ", ")
        return "warning: listening on \(host.contains(":") ? "[\(host)]" : host):\(port) reaches \(named); "
            + (authenticated ? "the gateway is a test double: it checks credentials, but serves anyone who can reach it"
                : "the gateway is a test double with no authentication: anyone who can reach it can send to it")
    }

    /// The warning for a `--dashboard` on `host` that reaches beyond loopback (nil: loopback only): the
    /// page is read-only, but anyone who can reach it watches the run.
    static func dashboardMessage(host: String, port: Int) -> String? {
        let interfaces = reachedInterfaces(host: host)
        if interfaces.allSatisfy(\.loopback) || isLoopbackName(host) { return nil }
        let named = interfaces.map { "\($0.name) \($0.address)" }.joined(separator: ", ")
        return "warning: the dashboard on \(host.contains(":") ? "[\(host)]" : host):\(port) reaches \(named); "
            + "it is read-only, but anyone who can reach it can watch the run"
    }

    struct Interface: Equatable {
        var name: String
        var address: String
        var loopback: Bool
    }

    static func isLoopbackName(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// The interfaces a listener on `host` accepts connections on: every one for the wildcard
    /// addresses (IPv4 ones for 0.0.0.0; all for ::), else those holding the address.
    static func reachedInterfaces(host: String) -> [Interface] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var out: [Interface] = []
        var p = list
        while let ifa = p {
            defer { p = ifa.pointee.ifa_next }
            guard let sa = ifa.pointee.ifa_addr else { continue }
            let family = Int32(sa.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let len = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
            guard getnameinfo(sa, len, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            var address = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if let pct = address.firstIndex(of: "%") { address = String(address[..<pct]) }
            let name = String(cString: ifa.pointee.ifa_name)
            let loopback = Int32(ifa.pointee.ifa_flags) & Int32(IFF_LOOPBACK) != 0
            let reached = (host == "0.0.0.0" && family == AF_INET) || host == "::" || host == address
            if reached { out.append(Interface(name: name, address: address, loopback: loopback)) }
        }
        return out
    }
}
