/// An agent's dashboard endpoint as `pushbench dashboard` is given it: `http://HOST:PORT` (a trailing
/// `/` allowed). The host may be a name (a pod's DNS name behind a headless Service), resolved when the
/// agent is asked, so an agent whose name does not resolve yet is only missing, not an error.
struct AgentAddress: Equatable, Sendable {
    /// The URL as given.
    let url: String
    /// The host as written, without the brackets of an IPv6 literal.
    let host: String
    /// The port.
    let port: Int

    /// `host:port` as written in the URL: the agent's name in `missing_agents` and on the progress line.
    var name: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Reads `text`; the error names it and says what is wrong.
    init(_ text: String) throws(UsageError) {
        let lower = text.lowercased()
        if lower.hasPrefix("https://") {
            throw UsageError("'\(text)': https is not supported (an agent's dashboard serves plain HTTP: give http://HOST:PORT)")
        }
        guard lower.hasPrefix("http://") else { throw UsageError("'\(text)' is not an agent's URL http://HOST:PORT") }
        var rest = Substring(text.dropFirst("http://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), !rest.contains("@"), !rest.contains("?"), !rest.contains(" ") else {
            throw UsageError("'\(text)' is not an agent's URL http://HOST:PORT (no path: the dashboard asks for /seconds and /state)")
        }
        guard let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") else {
            throw UsageError("'\(text)': give the port, as in http://\(rest):8088")
        }
        let portText = rest[rest.index(after: colon)...]
        guard let port = Int(portText), (1...65535).contains(port), portText.allSatisfy(\.isASCII) else {
            throw UsageError("'\(text)': '\(portText)' is not a port (1-65535)")
        }
        var host = rest[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") {
            host = host.dropFirst().dropLast()
        } else if host.contains(":") {
            throw UsageError("'\(text)': write an IPv6 address in brackets, as in http://[::1]:\(port)")
        }
        guard !host.isEmpty else { throw UsageError("'\(text)': the host is missing") }
        url = text
        self.host = String(host)
        self.port = port
    }
}
