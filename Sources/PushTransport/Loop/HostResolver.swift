#if canImport(Glibc)
import Glibc
#endif

/// Turns a host name into the numeric address the transport binds and connects to, once, before any
/// traffic (the event loops never resolve names).
public enum HostResolver {
    /// Why a host could not be resolved, in the resolver's words.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The host as given.
        public var host: String
        /// getaddrinfo's reason.
        public var reason: String
        /// `cannot resolve 'HOST': REASON`.
        public var description: String { "cannot resolve '\(host)': \(reason)" }
    }

    /// `host` unchanged when it is a numeric IPv4 or IPv6 address, else the first address the system
    /// resolver gives for it (`localhost` → `127.0.0.1` or `::1`).
    public static func numeric(_ host: String) throws(Failure) -> String {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        guard rc == 0, let first = list else {
            throw Failure(host: host, reason: String(cString: gai_strerror(rc)))
        }
        defer { freeaddrinfo(list) }
        // IPv4 first where there is one: `localhost` then means what a user of curl or h2load expects.
        var chosen = first
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let c = cursor {
            if c.pointee.ai_family == AF_INET { chosen = c; break }
            cursor = c.pointee.ai_next
        }
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(chosen.pointee.ai_addr, chosen.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0,
                          NI_NUMERICHOST) == 0 else {
            throw Failure(host: host, reason: "no numeric address")
        }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}

extension HostResolver {
    /// Why a listen address was refused: its text, and what was wrong with it.
    public struct AddressError: Error, Sendable, CustomStringConvertible {
        /// `'VALUE' is not HOST:PORT (…)` or `'VALUE': cannot resolve …`.
        public var description: String
    }

    /// `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (loopback, 127.0.0.1); port 0 picks a free one. A host name
    /// (`localhost`) is resolved here, once, to the numeric address a server binds.
    public static func listenAddress(_ value: String) throws(AddressError) -> (host: String, port: Int) {
        guard let colon = value.lastIndex(of: ":"), let p = Int(value[value.index(after: colon)...]),
              (0...65535).contains(p) else {
            throw AddressError(description: "'\(value)' is not HOST:PORT (e.g. 127.0.0.1:8080, localhost:0, :8080)")
        }
        var h = String(value[..<colon])
        if h.hasPrefix("["), h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        if h.isEmpty { return ("127.0.0.1", p) }
        do throws(Failure) { return (try numeric(h), p) } catch {
            throw AddressError(description: "'\(value)': \(error)")
        }
    }
}
