/// What a TLS handshake settled, seen from either end of a connection.
public struct TLSConnectionInfo: Sendable, Equatable {
    /// The protocol version, e.g. `TLSv1.3` or `TLSv1.2`.
    public var version: String
    /// The cipher suite's standard name, e.g. `TLS_AES_128_GCM_SHA256`.
    public var cipher: String
    /// The protocol ALPN selected (`h2`, `http/1.1`); nil when the client offered none.
    public var alpn: String?
    /// The SNI name: the one the client sent (server side), or the one this client asked for.
    public var serverName: String?
    /// The peer's certificate, if it sent one (a server always does; a client when asked and able).
    public var peerCertificate: TLSPeerCertificate?
    /// How long the handshake took, in ns: from its first byte to its end (monotonic clock).
    public var handshakeNanoseconds: UInt64

    /// A value; see the properties.
    init(version: String, cipher: String, alpn: String?, serverName: String?,
                peerCertificate: TLSPeerCertificate?, handshakeNanoseconds: UInt64) {
        self.version = version
        self.cipher = cipher
        self.alpn = alpn
        self.serverName = serverName
        self.peerCertificate = peerCertificate
        self.handshakeNanoseconds = handshakeNanoseconds
    }
}

/// The certificate a TLS peer presented, and whether it verified against the trusted CAs.
public struct TLSPeerCertificate: Sendable, Equatable {
    /// The subject, one line (RFC 2253), e.g. `UID=com.example.app,CN=Apple Push Services: com.example.app`.
    var subject: String
    /// The subject's UID attribute (OID 0.9.2342.19200300.100.1.1), if present: an APNs provider
    /// certificate carries its topic (bundle id) there.
    var subjectUID: String?
    /// The issuer, one line (RFC 2253).
    var issuer: String
    /// Whether the chain verified against the trusted CAs (and, on a client, the name matched).
    public var verified: Bool
    /// OpenSSL's reason when it did not verify, e.g. `certificate has expired`.
    public var verificationError: String?
    /// The certificate itself (PEM), for checks of its own (extensions such as APNs' environments).
    public var pem: String

    /// A value; see the properties.
    init(subject: String, subjectUID: String?, issuer: String, verified: Bool, verificationError: String?, pem: String) {
        self.subject = subject
        self.subjectUID = subjectUID
        self.issuer = issuer
        self.verified = verified
        self.verificationError = verificationError
        self.pem = pem
    }
}

/// A byte transport that runs a TLS handshake before it carries application bytes (`TLSTransport`).
/// Its owner hears `transportDidConnect` when the handshake is done, `transportDidFailToConnect` when
/// it failed.
protocol SecureTransport: ByteTransport {
    /// What the handshake settled (nil until it is done).
    var connectionInfo: TLSConnectionInfo? { get }
    /// The protocol ALPN selected, if it is one this side knows.
    var negotiatedProtocol: ApplicationProtocol? { get }
    /// Why a server refused the handshake in a way OpenSSL's error does not say (the client's ALPN
    /// offer had no protocol this server speaks); nil otherwise.
    var refusalReason: String? { get }
}
