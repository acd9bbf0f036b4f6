import COpenSSL
import Glibc

/// A TLS setup that could not be made: a file that does not load, a key that does not match, a bad
/// option. One line naming what was wrong, e.g. `cert.pem: no certificate in the file`.
public struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    public var message: String
    /// An error with `message`.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }

    /// `message` followed by OpenSSL's first queued reason (the queue is emptied).
    static func openSSL(_ message: String) -> TLSError {
        let reason = TLSErrors.drain()
        return TLSError(reason.map { "\(message): \($0)" } ?? message)
    }
}

/// A TLS protocol version.
public enum TLSVersion: String, Sendable, Equatable, CaseIterable {
    /// TLS 1.2.
    case tls12 = "1.2"
    /// TLS 1.3.
    case tls13 = "1.3"

    var openSSL: Int32 { self == .tls12 ? TLS1_2_VERSION : TLS1_3_VERSION }
}

/// OpenSSL's thread-local error queue.
enum TLSErrors {
    /// The reason of the first queued error (e.g. `certificate verify failed`), emptying the queue.
    static func drain() -> String? {
        let e = ERR_get_error()
        ERR_clear_error()
        guard e != 0 else { return nil }
        return reason(e)
    }

    static func reason(_ e: UInt) -> String {
        if pb_err_is_system(e) != 0 { return String(cString: strerror(Int32(truncatingIfNeeded: e & 0x7FFF_FFFF))) }
        if let r = ERR_reason_error_string(e) { return String(cString: r) }
        var buf = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(e, &buf, buf.count)
        return buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}

/// What both contexts set: versions, HTTP/2's cipher rules for TLS 1.2, buffers kept between records.
private func configureCommon(_ ctx: OpaquePointer, minimum: TLSVersion, maximum: TLSVersion) throws(TLSError) {
    guard minimum.openSSL <= maximum.openSSL else {
        throw TLSError("the minimum TLS version \(minimum.rawValue) is above the maximum \(maximum.rawValue)")
    }
    _ = pb_ctx_set_min_version(ctx, minimum.openSSL)
    _ = pb_ctx_set_max_version(ctx, maximum.openSSL)
    // RFC 9113 §9.2.2: over TLS 1.2, HTTP/2 wants ephemeral key exchange and an AEAD cipher.
    _ = SSL_CTX_set_cipher_list(ctx, "ECDHE+AESGCM:ECDHE+CHACHA20")
    _ = SSL_CTX_set_options(ctx, pb_ssl_op_no_compression | pb_ssl_op_no_renegotiation)
    // Keep the record buffers between reads and writes (no malloc per record); SSL_write of a large
    // batch returns once all of it is encrypted (our BIO never refuses a write).
    _ = pb_ctx_clear_mode(ctx, Int(SSL_MODE_RELEASE_BUFFERS))
    _ = pb_ctx_set_mode(ctx, Int(SSL_MODE_ENABLE_PARTIAL_WRITE) | Int(SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
    // Read-ahead: OpenSSL takes all the ciphertext it has room for in one BIO read and cuts records
    // out of its own buffer, instead of one read for each record's header and another for its body.
    _ = SSL_CTX_ctrl(ctx, SSL_CTRL_SET_READ_AHEAD, 1, nil)
}

/// Reads PEM files, and every certificate of a PEM text or file (a chain: leaf first).
public enum PEM {
    static func certificates(_ pem: String, source: String) throws(TLSError) -> [OpaquePointer] {
        let out = withMemoryBIO(pem) { bio in
            var out: [OpaquePointer] = []
            while let x = PEM_read_bio_X509(bio, nil, nil, nil) { out.append(x) }
            ERR_clear_error()  // the read that ended the loop queued "no start line"
            return out
        }
        if out.isEmpty { throw TLSError("\(source): no PEM certificate in it") }
        return out
    }

    static func privateKey(_ pem: String, source: String) throws(TLSError) -> OpaquePointer {
        guard let key = withMemoryBIO(pem, { PEM_read_bio_PrivateKey($0, nil, nil, nil) }) else {
            throw TLSError.openSSL("\(source): no PEM private key in it (an unencrypted key is needed)")
        }
        return key
    }

    /// Runs `body` with a read-only memory BIO over `text` (the BIO borrows the bytes: only inside).
    private static func withMemoryBIO<R>(_ text: String, _ body: (OpaquePointer?) -> R) -> R {
        var text = text
        return text.withUTF8 { bytes in
            let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count))
            defer { BIO_free(bio) }
            return body(bio)
        }
    }

    /// The text of the PEM file at `path` (at most 1 MiB); the error names the file and why.
    public static func read(file path: String) throws(TLSError) -> String {
        guard let f = fopen(path, "r") else { throw TLSError("\(path): \(String(cString: strerror(errno)))") }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            if n > 0 { bytes += chunk[0..<n] }
            if n < chunk.count { break }
            if bytes.count > 1 << 20 { throw TLSError("\(path): larger than 1 MiB, not a PEM file") }
        }
        if ferror(f) != 0 { throw TLSError("\(path): \(String(cString: strerror(errno)))") }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Loads a certificate chain and its key into `ctx`.
private func useIdentity(_ ctx: OpaquePointer, chainPEM: String, keyPEM: String, certSource: String, keySource: String) throws(TLSError) {
    let chain = try PEM.certificates(chainPEM, source: certSource)
    defer { for x in chain { X509_free(x) } }
    let key = try PEM.privateKey(keyPEM, source: keySource)
    defer { EVP_PKEY_free(key) }
    guard SSL_CTX_use_certificate(ctx, chain[0]) == 1 else { throw TLSError.openSSL("\(certSource): cannot use the certificate") }
    for x in chain.dropFirst() {
        // add0 takes ownership; the chain's own reference is freed by the defer, so take one more.
        X509_up_ref(x)
        _ = SSL_CTX_ctrl(ctx, SSL_CTRL_EXTRA_CHAIN_CERT, 0, UnsafeMutableRawPointer(x))
    }
    guard SSL_CTX_use_PrivateKey(ctx, key) == 1 else { throw TLSError.openSSL("\(keySource): cannot use the key") }
    guard SSL_CTX_check_private_key(ctx) == 1 else {
        ERR_clear_error()
        throw TLSError("\(keySource): the key does not match the certificate in \(certSource)")
    }
}

/// Trusts the certificates of a PEM text in `ctx`'s store.
private func trust(_ ctx: OpaquePointer, pem: String, source: String) throws(TLSError) {
    let certs = try PEM.certificates(pem, source: source)
    defer { for x in certs { X509_free(x) } }
    let store = SSL_CTX_get_cert_store(ctx)
    for x in certs where X509_STORE_add_cert(store, x) != 1 {
        ERR_clear_error()  // the same certificate twice is not an error worth refusing
    }
}

/// A TLS server's certificate, key, versions and client-certificate policy, shared by every connection
/// of the servers given it (an `SSL_CTX`; safe to share between threads once made).
///
/// ```swift
/// let tls = try TLSServerContext(certificateFile: "cert.pem", privateKeyFile: "key.pem")
/// var config = HTTP2ServerConfiguration()
/// config.tls = tls
/// ```
public final class TLSServerContext: @unchecked Sendable {
    /// How a server treats client certificates.
    public enum ClientCertificates: Sendable, Equatable {
        /// None asked for.
        case none
        /// Asked for and verified against the CAs in this PEM file; the handshake goes on whatever the
        /// outcome, which `TLSConnectionInfo.peerCertificate` reports (`verified`, `verificationError`),
        /// so the application can answer in its own terms (APNs answers 403 BadCertificate).
        case request(caFile: String)
        /// Required: the handshake fails without a certificate that verifies against the CAs in the file.
        case require(caFile: String)
    }

    let ctx: OpaquePointer
    /// The client-certificate policy given at init.
    let clientCertificates: ClientCertificates

    /// A context serving the chain in `certificateFile` (PEM, leaf first) with the key in `privateKeyFile`.
    public convenience init(certificateFile: String, privateKeyFile: String, clientCertificates: ClientCertificates = .none,
                            minimumVersion: TLSVersion = .tls12, maximumVersion: TLSVersion = .tls13) throws(TLSError) {
        try self.init(certificatePEM: try PEM.read(file: certificateFile), privateKeyPEM: try PEM.read(file: privateKeyFile),
                      clientCertificates: clientCertificates, minimumVersion: minimumVersion, maximumVersion: maximumVersion,
                      certificateSource: certificateFile, keySource: privateKeyFile)
    }

    /// A context serving a chain and key given as PEM text (a generated identity).
    public init(certificatePEM: String, privateKeyPEM: String, clientCertificates: ClientCertificates = .none,
                minimumVersion: TLSVersion = .tls12, maximumVersion: TLSVersion = .tls13,
                certificateSource: String = "certificate", keySource: String = "private key") throws(TLSError) {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSError.openSSL("SSL_CTX_new") }
        self.ctx = ctx
        self.clientCertificates = clientCertificates
        try configureCommon(ctx, minimum: minimumVersion, maximum: maximumVersion)
        _ = SSL_CTX_set_options(ctx, pb_ssl_op_cipher_server_preference)
        try useIdentity(ctx, chainPEM: certificatePEM, keyPEM: privateKeyPEM, certSource: certificateSource, keySource: keySource)
        // Sessions resumed by ticket or by id need a context id when client certificates are verified.
        let sid: [UInt8] = Array("pushbench".utf8)
        _ = SSL_CTX_set_session_id_context(ctx, sid, UInt32(sid.count))
        SSL_CTX_set_alpn_select_cb(ctx, TLSTransport.alpnSelect, nil)
        switch clientCertificates {
        case .none:
            break
        case .request(let caFile), .require(let caFile):
            let pem = try PEM.read(file: caFile)
            try trust(ctx, pem: pem, source: caFile)
            // The CA names sent in CertificateRequest, so a client picks a matching certificate.
            if let names = SSL_load_client_CA_file(caFile) { SSL_CTX_set_client_CA_list(ctx, names) }
            ERR_clear_error()
            if case .require = clientCertificates {
                SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
            } else {
                // Accept whatever came; the verdict stays in SSL_get_verify_result for the application.
                SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER) { _, _ in 1 }
            }
        }
    }

    deinit { SSL_CTX_free(ctx) }
}

/// How a TLS client decides to trust a server.
public enum TLSTrust: Sendable, Equatable {
    /// The system's CA store (Debian: /etc/ssl/certs, from ca-certificates).
    case system
    /// The CAs (or self-signed certificates) in this PEM file, instead of the system's.
    case caFile(String)
    /// The CAs in this PEM text (a generated identity's CA).
    case certificates(pem: String)
    /// Anything: no verification of the chain or the name (`--insecure`).
    case insecure
}

/// A TLS client's trust, client certificate, versions and ALPN offer, shared by its connections (an
/// `SSL_CTX`; safe to share between threads once made).
///
/// ```swift
/// let tls = try TLSClientContext(trust: .caFile("ca.pem"))
/// connection.connect(host: "127.0.0.1", port: 8443, tls: tls, serverName: "localhost")
/// ```
public final class TLSClientContext: @unchecked Sendable {
    let ctx: OpaquePointer
    /// The trust given at init.
    public let trust: TLSTrust

    /// A context; `certificateFile`/`privateKeyFile` (PEM) is the client certificate sent when a server
    /// asks; `alpn` the protocols offered in order (empty: no ALPN extension at all).
    public convenience init(trust: TLSTrust = .system, certificateFile: String? = nil, privateKeyFile: String? = nil,
                            minimumVersion: TLSVersion = .tls12, maximumVersion: TLSVersion = .tls13,
                            alpn: [String] = ["h2"]) throws(TLSError) {
        var identity: (String, String, String, String)?
        if let certificateFile, let privateKeyFile {
            identity = (try PEM.read(file: certificateFile), try PEM.read(file: privateKeyFile), certificateFile, privateKeyFile)
        } else if certificateFile != nil || privateKeyFile != nil {
            throw TLSError("a client certificate needs both its certificate file and its key file")
        }
        try self.init(trust: trust, identity: identity, minimumVersion: minimumVersion, maximumVersion: maximumVersion, alpn: alpn)
    }

    /// A context with a client identity given as PEM text (certificate chain, key).
    public convenience init(trust: TLSTrust, certificatePEM: String, privateKeyPEM: String,
                            minimumVersion: TLSVersion = .tls12, maximumVersion: TLSVersion = .tls13,
                            alpn: [String] = ["h2"]) throws(TLSError) {
        try self.init(trust: trust, identity: (certificatePEM, privateKeyPEM, "certificate", "private key"),
                      minimumVersion: minimumVersion, maximumVersion: maximumVersion, alpn: alpn)
    }

    private init(trust: TLSTrust, identity: (String, String, String, String)?, minimumVersion: TLSVersion,
                 maximumVersion: TLSVersion, alpn: [String]) throws(TLSError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw TLSError.openSSL("SSL_CTX_new") }
        self.ctx = ctx
        self.trust = trust
        try configureCommon(ctx, minimum: minimumVersion, maximum: maximumVersion)
        switch trust {
        case .system:
            guard SSL_CTX_set_default_verify_paths(ctx) == 1 else { throw TLSError.openSSL("cannot load the system CA store") }
        case .caFile(let path):
            try PushTransport.trust(ctx, pem: try PEM.read(file: path), source: path)
        case .certificates(let pem):
            try PushTransport.trust(ctx, pem: pem, source: "trusted certificates")
        case .insecure:
            break
        }
        SSL_CTX_set_verify(ctx, trust == .insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nil)
        if let (cert, key, certSource, keySource) = identity {
            try useIdentity(ctx, chainPEM: cert, keyPEM: key, certSource: certSource, keySource: keySource)
        }
        if !alpn.isEmpty {
            var wire: [UInt8] = []
            for name in alpn {
                guard !name.isEmpty, name.utf8.count < 256 else { throw TLSError("ALPN name '\(name)' is empty or too long") }
                wire.append(UInt8(name.utf8.count))
                wire += name.utf8
            }
            // Returns 0 on success, unlike most of OpenSSL.
            guard SSL_CTX_set_alpn_protos(ctx, wire, UInt32(wire.count)) == 0 else { throw TLSError.openSSL("cannot set ALPN") }
        }
    }

    deinit { SSL_CTX_free(ctx) }
}
