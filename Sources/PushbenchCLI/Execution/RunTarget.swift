import LoadGenerator
import MockGateway
import PushTransport
#if canImport(Glibc)
import Glibc
#endif

extension RunExecution {
    /// Where the run sends: `--target` resolved to a numeric address, or the embedded gateway started on
    /// a free loopback port (the caller stops it when the run ends).
    func startTarget() throws(Failure) -> (host: String, port: Int, authority: String, gateway: EmbeddedGateway?) {
        if let target = options.target {
            let (host, port, authority) = try resolveTarget(target)
            return (host, port, authority, nil)
        }
        var config = options.embeddedGateway
        // The gateway shares this process's descriptors with the run's own connections.
        if config.maxConnections == nil {
            config.maxConnections = max(1, DescriptorLimit.current.soft - clientDescriptors - GatewayConfiguration.reservedDescriptors)
        }
        let gateway: EmbeddedGateway
        do { gateway = try EmbeddedGateway.start(config) } catch {
            throw Failure(status: 3, message: "cannot start the embedded gateway: \(error)")
        }
        return (gateway.host, gateway.port, "\(gateway.host):\(gateway.port)", gateway)
    }

    /// Descriptors the run's connections take: one each (`--connections` per driver thread).
    var clientDescriptors: Int { options.connections * options.threads }

    /// Raises the descriptor limit to the hard one, then refuses (exit 2, before any traffic) a run whose
    /// connections cannot all be opened: each takes a descriptor, and with the embedded gateway its
    /// other end takes one more in this process. A few dozen are kept for the rest (loops, files).
    func checkDescriptors() throws(Failure) {
        let soft = DescriptorLimit.raiseToHard()
        let perConnection = options.target == nil ? 2 : 1
        let needed = clientDescriptors * perConnection + GatewayConfiguration.reservedDescriptors
        guard needed > soft else { return }
        let hard = DescriptorLimit.current.hard
        let what = options.threads > 1 ? "--connections \(options.connections) x --threads \(options.threads)" : "--connections \(options.connections)"
        throw Failure(status: 2, message: "\(what) needs about \(needed) file descriptors"
                      + (perConnection == 2 ? " (the embedded gateway holds the other end of each connection)" : "")
                      + ", but the limit is \(soft)\(hard > soft ? "" : " and cannot be raised (hard limit \(hard))")"
                      + "; lower --connections or raise the limit (ulimit -n)")
    }

    /// The host, port text and authority of an http:// or https:// URL.
    static func splitURL(_ url: String) -> (host: Substring, portText: Substring?, authority: Substring, tls: Bool) {
        let tls = url.hasPrefix("https://")
        var rest = Substring(url.dropFirst(tls ? "https://".count : "http://".count))
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            let after = rest[rest.index(after: close)...]
            return (rest[rest.index(after: rest.startIndex)..<close], after.hasPrefix(":") ? after.dropFirst() : nil, rest, tls)
        }
        if let colon = rest.lastIndex(of: ":") { return (rest[..<colon], rest[rest.index(after: colon)...], rest, tls) }
        return (rest, nil, rest, tls)
    }

    func resolveTarget(_ url: String) throws(Failure) -> (String, Int, String) {
        let (host, portText, rest, tls) = Self.splitURL(url)
        guard !host.isEmpty else { throw Failure(status: 2, message: "--target: '\(url)' has no host") }
        let port: Int
        if let portText {
            guard let p = Int(portText), p > 0 && p < 65536 else {
                throw Failure(status: 2, message: "--target: '\(url)': '\(portText)' is not a port")
            }
            port = p
        } else {
            port = tls ? 443 : 80
        }
        let authority = String(rest)
        // The transport connects to numeric addresses; resolve a name once, before any traffic.
        let numeric: String
        do throws(HostResolver.Failure) { numeric = try HostResolver.numeric(String(host)) } catch {
            throw Failure(status: 3, message: "--target: \(error)")
        }
        return (numeric, port, authority)
    }

    /// Sets the run's TLS: for an https:// target, trust per --cacert/--insecure (else the system's CA
    /// store) and the URL's host as the name to verify and send as SNI; for the embedded gateway over
    /// TLS, its generated CA (or --cacert). `--cert`/`--key` go with either. A file that does not load
    /// is bad input (exit 2), before any traffic.
    func configureTLS(_ config: inout LoadConfiguration, gateway: EmbeddedGateway?) throws(Failure) {
        let o = options
        let trust: TLSTrust
        if let target = o.target {
            let (host, _, _, tls) = Self.splitURL(target)
            guard tls else { return }
            config.serverName = String(host)
            trust = o.insecure ? .insecure : o.caFile.map { .caFile($0) } ?? .system
        } else {
            guard let gateway, gateway.isTLS else { return }
            config.serverName = "localhost"
            trust = o.insecure ? .insecure : o.caFile.map { .caFile($0) }
                ?? gateway.trustedCertificatePEM.map { .certificates(pem: $0) } ?? .system
        }
        do throws(TLSError) {
            // --http1 offers http/1.1 alone, so the server cannot pick h2 for a client that speaks HTTP/1.1.
            config.tls = try TLSClientContext(trust: trust, certificateFile: o.certificateFile, privateKeyFile: o.keyFile,
                                              alpn: o.http1 ? ["http/1.1"] : ["h2"])
        } catch {
            throw Failure(status: 2, message: "TLS: \(error.message)")
        }
    }
}
