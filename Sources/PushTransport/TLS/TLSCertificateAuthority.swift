import COpenSSL

/// A certificate chain (leaf first) and its private key, as PEM text.
public struct TLSIdentity: Sendable, Equatable {
    /// The leaf certificate followed by its issuer(s).
    public var certificateChainPEM: String
    /// The leaf's private key (PKCS#8, unencrypted).
    public var privateKeyPEM: String

    /// An identity; see the properties.
    init(certificateChainPEM: String, privateKeyPEM: String) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
    }
}

/// A throwaway certificate authority (EC P-256, SHA-256 signatures) made in memory, which issues
/// server and client certificates: what a client must trust is its own certificate
/// (`certificatePEM`), so servers can present ordinary leaf certificates that every TLS stack accepts.
///
/// ```swift
/// let ca = try TLSCertificateAuthority()
/// let server = try ca.issue(commonName: "localhost", names: ["localhost", "127.0.0.1", "::1"])
/// let context = try TLSServerContext(certificatePEM: server.certificateChainPEM, privateKeyPEM: server.privateKeyPEM)
/// // a client trusts ca.certificatePEM
/// ```
public final class TLSCertificateAuthority: @unchecked Sendable {
    /// The CA's certificate (self-signed): what a client trusts.
    public let certificatePEM: String
    /// The CA's private key (PKCS#8), for a caller that keeps the CA to issue more later.
    public let privateKeyPEM: String
    private let cert: OpaquePointer
    private let key: OpaquePointer

    /// A new CA named `commonName`, valid from an hour ago for `validDays`.
    public init(commonName: String = "pushbench test CA", validDays: Int = 365) throws(TLSError) {
        key = try CertificateBuilder.newKey()
        do throws(TLSError) {
            cert = try CertificateBuilder.make(
                commonName: commonName, uid: nil, validDays: validDays, publicKey: key,
                issuer: nil, issuerKey: key,
                extensions: [(NID_basic_constraints, "critical,CA:TRUE"), (NID_key_usage, "critical,keyCertSign,cRLSign")])
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        certificatePEM = try CertificateBuilder.pem(certificate: cert)
        privateKeyPEM = try CertificateBuilder.pem(privateKey: key)
    }

    /// A CA loaded from its certificate and key (PEM), to issue more certificates from a saved one.
    /// Throws unless the certificate is a CA's, valid now, and the key is its own; `certificateSource`
    /// and `keySource` name the two in errors (file names, never contents).
    public init(certificatePEM: String, privateKeyPEM: String, certificateSource: String = "CA certificate",
                keySource: String = "CA key") throws(TLSError) {
        let certs = try PEM.certificates(certificatePEM, source: certificateSource)
        for x in certs.dropFirst() { X509_free(x) }
        cert = certs[0]
        do throws(TLSError) {
            key = try PEM.privateKey(privateKeyPEM, source: keySource)
        } catch {
            X509_free(cert)
            throw error
        }
        var problem: String?
        if X509_check_ca(cert) == 0 {
            problem = "\(certificateSource): not a CA certificate"
        } else if X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0 {
            problem = "\(certificateSource): the CA certificate has expired"
        } else if X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0 {
            problem = "\(certificateSource): the CA certificate is not valid yet"
        } else if X509_check_private_key(cert, key) != 1 {
            problem = "\(keySource): not the key of \(certificateSource)"
        }
        ERR_clear_error()
        if let problem {
            X509_free(cert)
            EVP_PKEY_free(key)
            throw TLSError(problem)
        }
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
    }

    deinit {
        X509_free(cert)
        EVP_PKEY_free(key)
    }

    /// What a certificate is for (its extended key usage).
    public enum Usage: Sendable {
        /// A TLS server (`serverAuth`).
        case server
        /// A TLS client (`clientAuth`), e.g. an APNs provider certificate.
        case client
    }

    /// Issues a certificate with a new key: `names` (DNS names and IP literals) become its subject
    /// alternative names, `uid` its subject's UID attribute (an APNs certificate's topic).
    public func issue(commonName: String, names: [String] = [], uid: String? = nil, usage: Usage = .server,
                      validDays: Int = 365) throws(TLSError) -> TLSIdentity {
        let leafKey = try CertificateBuilder.newKey()
        defer { EVP_PKEY_free(leafKey) }
        var extensions: [(Int32, String)] = [(NID_basic_constraints, "critical,CA:FALSE"),
                                             (NID_key_usage, "critical,digitalSignature"),
                                             (NID_ext_key_usage, usage == .server ? "serverAuth" : "clientAuth")]
        if !names.isEmpty {
            extensions.append((NID_subject_alt_name,
                               names.map { (TLSTransport.isIPAddress($0) ? "IP:" : "DNS:") + $0 }.joined(separator: ",")))
        }
        let leaf = try CertificateBuilder.make(commonName: commonName, uid: uid, validDays: validDays,
                                               publicKey: leafKey, issuer: cert, issuerKey: key, extensions: extensions)
        defer { X509_free(leaf) }
        return TLSIdentity(certificateChainPEM: try CertificateBuilder.pem(certificate: leaf) + certificatePEM,
                           privateKeyPEM: try CertificateBuilder.pem(privateKey: leafKey))
    }
}

/// The OpenSSL steps of making a certificate.
enum CertificateBuilder {
    /// A new EC P-256 key.
    static func newKey() throws(TLSError) -> OpaquePointer {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw TLSError.openSSL("EC key context") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1,
              EVP_PKEY_generate(ctx, &key) == 1, let key else { throw TLSError.openSSL("cannot generate an EC P-256 key") }
        return key
    }

    /// A signed X.509 v3 certificate; `issuer` nil makes it self-signed.
    static func make(commonName: String, uid: String?, validDays: Int, publicKey: OpaquePointer,
                     issuer: OpaquePointer?, issuerKey: OpaquePointer, extensions: [(Int32, String)]) throws(TLSError) -> OpaquePointer {
        guard let x = X509_new() else { throw TLSError.openSSL("X509_new") }
        var ok = X509_set_version(x, 2) == 1
        var serial: UInt64 = 0
        withUnsafeMutableBytes(of: &serial) { _ = RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), 8) }
        ok = ok && ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), serial >> 1) == 1
        // From an hour ago, so a peer whose clock is a little behind accepts it.
        ok = ok && X509_gmtime_adj(X509_getm_notBefore(x), -3600) != nil
        ok = ok && X509_gmtime_adj(X509_getm_notAfter(x), max(1, validDays) * 86_400) != nil
        ok = ok && X509_set_pubkey(x, publicKey) == 1
        let subject = X509_get_subject_name(x)
        ok = ok && X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_UTF8, "pushbench", -1, -1, 0) == 1
        ok = ok && X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1
        if let uid { ok = ok && X509_NAME_add_entry_by_txt(subject, "UID", MBSTRING_UTF8, uid, -1, -1, 0) == 1 }
        ok = ok && X509_set_issuer_name(x, issuer.map { X509_get_subject_name($0) } ?? subject) == 1
        guard ok else {
            X509_free(x)
            throw TLSError.openSSL("cannot fill the certificate for '\(commonName)'")
        }
        var v3 = X509V3_CTX()
        X509V3_set_ctx(&v3, issuer ?? x, x, nil, nil, 0)
        let all = extensions + [(NID_subject_key_identifier, "hash"), (NID_authority_key_identifier, "keyid:always")]
        for (nid, value) in all {
            guard let ext = X509V3_EXT_conf_nid(nil, &v3, nid, value) else {
                X509_free(x)
                throw TLSError.openSSL("certificate extension '\(value)'")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x, ext, -1) == 1 else {
                X509_free(x)
                throw TLSError.openSSL("certificate extension '\(value)'")
            }
        }
        guard X509_sign(x, issuerKey, EVP_sha256()) > 0 else {
            X509_free(x)
            throw TLSError.openSSL("cannot sign the certificate for '\(commonName)'")
        }
        return x
    }

    static func pem(certificate x: OpaquePointer) throws(TLSError) -> String {
        try pem { PEM_write_bio_X509($0, x) }
    }

    static func pem(privateKey k: OpaquePointer) throws(TLSError) -> String {
        try pem { PEM_write_bio_PrivateKey($0, k, nil, nil, 0, nil, nil) }
    }

    private static func pem(_ write: (OpaquePointer) -> Int32) throws(TLSError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw TLSError.openSSL("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw TLSError.openSSL("cannot write PEM") }
        var p: UnsafeMutablePointer<CChar>?
        let n = pb_bio_mem_data(bio, &p)
        guard let p, n > 0 else { throw TLSError("cannot write PEM") }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
    }
}
