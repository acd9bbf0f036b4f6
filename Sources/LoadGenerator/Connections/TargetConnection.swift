import PushTransport

/// A client connection a pool opens to the target: HTTP/2 or HTTP/1.1, over cleartext or TLS.
protocol TargetConnection: AnyObject {
    func connect(host: String, port: Int)
    func connect(host: String, port: Int, tls context: TLSClientContext, serverName: String?)
}

extension HTTP2ClientConnection: TargetConnection {}
extension HTTP1ClientConnection: TargetConnection {}

extension LoadConfiguration {
    /// Connects `connection` to the target: over TLS when `tls` is set, naming `serverName` (or the
    /// host) in SNI; in cleartext otherwise.
    func connect(_ connection: some TargetConnection) {
        if let tls {
            connection.connect(host: host, port: port, tls: tls, serverName: serverName ?? host)
        } else {
            connection.connect(host: host, port: port)
        }
    }
}
