import COpenSSL

/// The APNs environments a push certificate is issued for, read from Apple's certificate extensions
/// (1.2.840.113635.100.6.3.1 development, .2 production; a "universal" certificate has both).
public struct APNsCertificateEnvironments: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// APNs development (sandbox).
    public static let development = APNsCertificateEnvironments(rawValue: 1)
    /// APNs production.
    public static let production = APNsCertificateEnvironments(rawValue: 2)
    /// Both (a universal push certificate).
    @usableFromInline static let both: APNsCertificateEnvironments = [.development, .production]

    static let developmentOID = "1.2.840.113635.100.6.3.1"
    static let productionOID = "1.2.840.113635.100.6.3.2"
}

/// Apple's topics extension (1.2.840.113635.100.6.3.6) of a push certificate: a SEQUENCE in which each
/// topic the certificate covers is a UTF8String, each followed by a SEQUENCE naming its kind (`app`,
/// `voip`, `complication`, …), which readers skip.
enum APNsCertificateTopics {
    static let oid = "1.2.840.113635.100.6.3.6"

    /// The extension's value for `topics`; `base` (the subject UID) names which is the app's own.
    static func encode(_ topics: [String], base: String?) -> [UInt8] {
        var content: [UInt8] = []
        for topic in topics {
            let kind: String
            if let base, topic.hasPrefix(base + ".") { kind = String(topic.dropFirst(base.count + 1)) } else { kind = "app" }
            content += DER.element(DER.utf8String, Array(topic.utf8))
            content += DER.element(DER.sequence, DER.element(DER.utf8String, Array(kind.utf8)))
        }
        return DER.element(DER.sequence, content)
    }

    /// The topics in the extension's value: every UTF8String directly in its SEQUENCE; nil when the
    /// value is not a DER SEQUENCE.
    static func decode(_ value: [UInt8]) -> [String]? {
        guard let outer = DER.elements(value[...]), outer.count == 1, outer[0].tag == DER.sequence,
              let inner = DER.elements(value[outer[0].content]) else { return nil }
        return inner.filter { $0.tag == DER.utf8String }.map { String(decoding: value[$0.content], as: UTF8.self) }
    }
}

/// An X.509 certificate (immutable).
///
/// ```swift
/// let cert = try X509Certificate(contentsOfFile: "client.pem")
/// cert.uid            // "com.example.app": the topic of an APNs certificate
/// cert.topics         // ["com.example.app", "com.example.app.voip", …]
/// cert.environments   // [.development, .production]
/// ```
public final class X509Certificate: @unchecked Sendable {
    // @unchecked: never changed after init.
    let x509: OpaquePointer

    init(owning x509: OpaquePointer) { self.x509 = x509 }

    /// A certificate object sharing OpenSSL's `X509 *` (its reference count is raised), e.g. a TLS peer's.
    public init(retaining x509: OpaquePointer) {
        X509_up_ref(x509)
        self.x509 = x509
    }

    deinit { X509_free(x509) }

    /// The first certificate in PEM text. `source` names it in errors.
    public convenience init(pem: [UInt8], source: String = "certificate") throws(CredentialError) {
        let x = try withMemoryBIO(pem) { (bio: OpaquePointer) throws(CredentialError) -> OpaquePointer in
            guard let x = PEM_read_bio_X509(bio, nil, nil, nil) else {
                ERR_clear_error()
                throw CredentialError("\(source): not a PEM certificate (expected -----BEGIN CERTIFICATE-----)")
            }
            return x
        }
        self.init(owning: x)
    }

    /// The first certificate in the PEM file at `path`.
    public convenience init(contentsOfFile path: String) throws(CredentialError) {
        try self.init(pem: try readFile(path), source: path)
    }

    /// Every certificate in PEM text, in order.
    static func all(pem: [UInt8], source: String = "certificates") throws(CredentialError) -> [X509Certificate] {
        let found = try withMemoryBIO(pem) { (bio: OpaquePointer) throws(CredentialError) -> [X509Certificate] in
            var out: [X509Certificate] = []
            while let x = PEM_read_bio_X509(bio, nil, nil, nil) { out.append(X509Certificate(owning: x)) }
            ERR_clear_error()
            return out
        }
        guard !found.isEmpty else { throw CredentialError("\(source): no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)") }
        return found
    }

    /// The certificate as PEM.
    public func pem() throws(CredentialError) -> String {
        try bioText { PEM_write_bio_X509($0, x509) }
    }

    /// The subject's UID (OID 0.9.2342.19200300.100.1.1): an APNs certificate's topic (the bundle id).
    public var uid: String? { subjectEntry(NID_userId) }

    /// The subject's common name.
    var commonName: String? { subjectEntry(NID_commonName) }

    /// The APNs topics the certificate covers: its subject UID (the app's bundle id), then each other
    /// topic its topics extension (1.2.840.113635.100.6.3.6) lists, such as `<bundle>.voip` and
    /// `<bundle>.complication`. Empty when it has neither: a client certificate not shaped like Apple's.
    public var topics: [String] {
        var all: [String] = uid.map { [$0] } ?? []
        if let value = extensionValue(APNsCertificateTopics.oid), let listed = APNsCertificateTopics.decode(value) {
            for t in listed where !all.contains(t) { all.append(t) }
        }
        return all
    }

    /// The APNs environments the certificate names (empty when it has neither of Apple's extensions).
    public var environments: APNsCertificateEnvironments {
        var e: APNsCertificateEnvironments = []
        if hasExtension(APNsCertificateEnvironments.developmentOID) { e.insert(.development) }
        if hasExtension(APNsCertificateEnvironments.productionOID) { e.insert(.production) }
        return e
    }

    private func subjectEntry(_ nid: Int32) -> String? {
        guard let name = X509_get_subject_name(x509) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, nid, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry) else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let n = ASN1_STRING_to_UTF8(&utf8, data)
        guard n >= 0, let utf8 else { return nil }
        defer { CRYPTO_free(utf8, #fileID, #line) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(n)), as: UTF8.self)
    }

    /// The DER value (inside the OCTET STRING) of the extension `oid`, or nil when there is none.
    private func extensionValue(_ oid: String) -> [UInt8]? {
        guard let obj = OBJ_txt2obj(oid, 1) else { return nil }
        defer { ASN1_OBJECT_free(obj) }
        let index = X509_get_ext_by_OBJ(x509, obj, -1)
        guard index >= 0, let ext = X509_get_ext(x509, index), let data = X509_EXTENSION_get_data(ext),
              let bytes = ASN1_STRING_get0_data(data) else { return nil }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))))
    }

    private func hasExtension(_ oid: String) -> Bool {
        guard let obj = OBJ_txt2obj(oid, 1) else { return false }
        defer { ASN1_OBJECT_free(obj) }
        return X509_get_ext_by_OBJ(x509, obj, -1) >= 0
    }
}

/// Checks client certificates against the certificate authorities of one PEM file (`--client-ca`).
public final class ClientCertificateVerifier: @unchecked Sendable {
    // @unchecked: the store is filled in init and only read afterwards (X509_STORE lookups are thread-safe).
    private let store: OpaquePointer

    /// A verifier trusting every certificate in the PEM file at `caFile`.
    public init(caFile: String) throws(CredentialError) {
        let cas = try X509Certificate.all(pem: try readFile(caFile), source: caFile)
        guard let s = X509_STORE_new() else { throw CredentialError("out of memory") }
        for ca in cas where X509_STORE_add_cert(s, ca.x509) != 1 {
            X509_STORE_free(s)
            throw CredentialError.openSSL("\(caFile): cannot use a certificate in it as a CA")
        }
        store = s
    }

    deinit { X509_STORE_free(store) }

    /// nil when `certificate` (with the intermediates `chain` the peer sent) chains to a trusted CA and is
    /// valid now; otherwise why not, in OpenSSL's words (e.g. `certificate has expired`).
    public func problem(with certificate: X509Certificate, chain: [X509Certificate] = []) -> String? {
        guard let ctx = X509_STORE_CTX_new() else { return "out of memory" }
        defer { X509_STORE_CTX_free(ctx) }
        let untrusted = OPENSSL_sk_new_null()
        defer { OPENSSL_sk_free(untrusted) }
        for c in chain { OPENSSL_sk_push(untrusted, UnsafeRawPointer(c.x509)) }
        guard X509_STORE_CTX_init(ctx, store, certificate.x509, untrusted) == 1 else { return "cannot set up the verification" }
        let ok = withExtendedLifetime(chain) { X509_verify_cert(ctx) == 1 }
        defer { ERR_clear_error() }
        if ok { return nil }
        return String(cString: X509_verify_cert_error_string(Int(X509_STORE_CTX_get_error(ctx))))
    }
}

/// Makes test certificates: a certificate authority and the client certificates it issues, shaped like
/// Apple's push certificates (topic in the subject UID, environment extensions). For mock gateways and
/// tests only.
///
/// ```swift
/// let ca = try TestCertificateAuthority.generate()
/// let clientKey = try ES256PrivateKey.generate()
/// let client = try ca.issueClientCertificate(topic: "com.example.app", key: clientKey)
/// ```
public final class TestCertificateAuthority: @unchecked Sendable {
    // @unchecked: immutable after init.
    /// The CA's key.
    public let key: ES256PrivateKey
    /// The CA's self-signed certificate.
    public let certificate: X509Certificate

    /// A CA from its certificate and key.
    init(certificate: X509Certificate, key: ES256PrivateKey) {
        self.certificate = certificate
        self.key = key
    }

    /// A new CA, valid from a day ago for `days` days.
    public static func generate(commonName: String = "pushbench test CA", days: Int = 3650) throws(CredentialError) -> TestCertificateAuthority {
        let key = try ES256PrivateKey.generate()
        let cert = try makeCertificate(subject: [("CN", commonName), ("O", "pushbench test")], issuer: nil, subjectKey: key,
                                       signingKey: key, days: days, isCA: true, environments: [])
        return TestCertificateAuthority(certificate: cert, key: key)
    }

    /// A client certificate for `key` whose subject UID is `topic`, carrying Apple's extensions for
    /// `environments` and, when `topics` is not empty, Apple's topics extension listing them (as a
    /// universal push certificate lists `topic`, `topic.voip`, `topic.complication`), valid from
    /// `notBeforeDays` days ago (negative: in the future) for `days` days.
    public func issueClientCertificate(topic: String?, key: ES256PrivateKey, environments: APNsCertificateEnvironments = .both,
                                       topics: [String] = [], days: Int = 3650,
                                       notBeforeDays: Int = 1) throws(CredentialError) -> X509Certificate {
        var subject: [(String, String)] = []
        if let topic { subject.append(("UID", topic)) }
        subject += [("CN", "Apple Push Services: \(topic ?? "no topic")"), ("O", "pushbench test")]
        return try Self.makeCertificate(subject: subject, issuer: certificate, subjectKey: key, signingKey: self.key,
                                        days: days, isCA: false, environments: environments, notBeforeDays: notBeforeDays,
                                        topics: topics.isEmpty ? nil : APNsCertificateTopics.encode(topics, base: topic))
    }

    private static func makeCertificate(subject: [(String, String)], issuer: X509Certificate?, subjectKey: ES256PrivateKey,
                                        signingKey: ES256PrivateKey, days: Int, isCA: Bool,
                                        environments: APNsCertificateEnvironments, notBeforeDays: Int = 1,
                                        topics: [UInt8]? = nil) throws(CredentialError) -> X509Certificate {
        guard let x = X509_new() else { throw CredentialError("out of memory") }
        let cert = X509Certificate(owning: x)
        var serial = [UInt8](repeating: 0, count: 16)
        _ = RAND_bytes(&serial, 16)
        serial[0] &= 0x7F
        let bn = BN_bin2bn(serial, 16, nil)
        defer { BN_free(bn) }
        var ok = X509_set_version(x, 2) == 1
        ok = ok && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != nil
        ok = ok && X509_gmtime_adj(X509_getm_notBefore(x), -86_400 * notBeforeDays) != nil
        ok = ok && X509_gmtime_adj(X509_getm_notAfter(x), 86_400 * (days - notBeforeDays)) != nil
        ok = ok && X509_set_pubkey(x, subjectKey.pkey) == 1
        guard ok, let name = X509_NAME_new() else { throw CredentialError.openSSL("cannot make a certificate") }
        defer { X509_NAME_free(name) }
        for (field, value) in subject where X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, value, -1, -1, 0) != 1 {
            throw CredentialError.openSSL("cannot put \(field) in a certificate name")
        }
        ok = X509_set_subject_name(x, name) == 1
        ok = ok && X509_set_issuer_name(x, issuer.map { X509_get_subject_name($0.x509) } ?? name) == 1
        guard ok else { throw CredentialError.openSSL("cannot make a certificate") }

        var ctx = X509V3_CTX()
        X509V3_set_ctx(&ctx, issuer?.x509 ?? x, x, nil, nil, 0)
        var extensions: [(Int32, String)] = [(NID_subject_key_identifier, "hash")]
        if isCA {
            extensions += [(NID_basic_constraints, "critical,CA:TRUE"), (NID_key_usage, "critical,keyCertSign,cRLSign")]
        } else {
            extensions += [(NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                           (NID_ext_key_usage, "clientAuth"), (NID_authority_key_identifier, "keyid")]
        }
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else { throw CredentialError.openSSL("cannot add a certificate extension") }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x, ext, -1) == 1 else { throw CredentialError.openSSL("cannot add a certificate extension") }
        }
        // Apple's push certificates carry each environment as an extension whose value is ASN.1 NULL.
        var custom: [(String, [UInt8])] = []
        if environments.contains(.development) { custom.append((APNsCertificateEnvironments.developmentOID, [0x05, 0x00])) }
        if environments.contains(.production) { custom.append((APNsCertificateEnvironments.productionOID, [0x05, 0x00])) }
        if let topics { custom.append((APNsCertificateTopics.oid, topics)) }
        for (oid, content) in custom {
            guard let obj = OBJ_txt2obj(oid, 1), let value = ASN1_OCTET_STRING_new() else { throw CredentialError("out of memory") }
            defer { ASN1_OBJECT_free(obj); ASN1_OCTET_STRING_free(value) }
            guard ASN1_OCTET_STRING_set(value, content, Int32(content.count)) == 1,
                  let ext = X509_EXTENSION_create_by_OBJ(nil, obj, 0, value) else {
                throw CredentialError.openSSL("cannot add a certificate extension")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x, ext, -1) == 1 else { throw CredentialError.openSSL("cannot add a certificate extension") }
        }
        guard X509_sign(x, signingKey.pkey, EVP_sha256()) > 0 else { throw CredentialError.openSSL("cannot sign a certificate") }
        return cert
    }
}
