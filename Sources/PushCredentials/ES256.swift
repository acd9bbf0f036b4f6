import COpenSSL

/// A P-256 private key for ES256 (ECDSA over SHA-256), as in an APNs `.p8` file (PEM, PKCS #8).
/// Immutable once made; OpenSSL's key object may be used from several threads for signing.
///
/// ```swift
/// let key = try ES256PrivateKey(contentsOfFile: "AuthKey_ABC123DEFG.p8")
/// let signature = try key.sign(Array("header.claims".utf8))   // 64 bytes: r ‖ s
/// ```
public final class ES256PrivateKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is never changed after init; OpenSSL 3 allows concurrent use of a key.
    let pkey: OpaquePointer

    init(owning pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    /// A new random P-256 key.
    public static func generate() throws(CredentialError) -> ES256PrivateKey {
        guard let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else { throw CredentialError.openSSL("cannot make a P-256 key") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1) == 1,
              EVP_PKEY_keygen(ctx, &key) == 1, let key else { throw CredentialError.openSSL("cannot make a P-256 key") }
        return ES256PrivateKey(owning: key)
    }

    /// The key in PEM text (`-----BEGIN PRIVATE KEY-----`, PKCS #8 as Apple's `.p8`, or SEC 1
    /// `-----BEGIN EC PRIVATE KEY-----`). `source` names it in errors (a file name, never the text).
    public convenience init(pem: [UInt8], source: String = "key") throws(CredentialError) {
        let key = try withMemoryBIO(pem) { (bio: OpaquePointer) throws(CredentialError) -> OpaquePointer in
            guard let k = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
                ERR_clear_error()
                throw CredentialError("\(source): not a PEM private key (expected -----BEGIN PRIVATE KEY-----, as in an APNs .p8 file)")
            }
            return k
        }
        try checkP256(key, source)
        self.init(owning: key)
    }

    /// The key in the PEM file at `path` (an APNs `.p8`).
    public convenience init(contentsOfFile path: String) throws(CredentialError) {
        try self.init(pem: try readFile(path), source: path)
    }

    /// The key as PKCS #8 PEM, the form of an APNs `.p8` file.
    public func pkcs8PEM() throws(CredentialError) -> String {
        try bioText { PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil) }
    }

    /// The public half.
    public var publicKey: ES256PublicKey {
        // The EVP_PKEY holds both halves; the public key object shares it (verification uses only the public part).
        EVP_PKEY_up_ref(pkey)
        return ES256PublicKey(owning: pkey)
    }

    /// The ES256 signature of `message` in JWS form: r ‖ s, 32 bytes each (not DER).
    public func sign(_ message: some Collection<UInt8>) throws(CredentialError) -> [UInt8] {
        guard let md = EVP_MD_CTX_new() else { throw CredentialError("out of memory") }
        defer { EVP_MD_CTX_free(md) }
        let bytes = Array(message)
        var der = [UInt8](repeating: 0, count: 80)
        var derLength = der.count
        let ok = bytes.withUnsafeBytes { m in
            der.withUnsafeMutableBytes { d in
                EVP_DigestSignInit(md, nil, EVP_sha256(), nil, pkey) == 1
                    && EVP_DigestSign(md, d.baseAddress?.assumingMemoryBound(to: UInt8.self), &derLength,
                                      m.baseAddress?.assumingMemoryBound(to: UInt8.self), m.count) == 1
            }
        }
        guard ok else { throw CredentialError.openSSL("cannot sign") }
        return try der.withUnsafeBufferPointer { (d: UnsafeBufferPointer<UInt8>) throws(CredentialError) -> [UInt8] in
            var p: UnsafePointer<UInt8>? = d.baseAddress
            guard let sig = d2i_ECDSA_SIG(nil, &p, derLength) else { throw CredentialError.openSSL("cannot read the signature") }
            defer { ECDSA_SIG_free(sig) }
            var raw = [UInt8](repeating: 0, count: 64)
            raw.withUnsafeMutableBufferPointer { out in
                _ = BN_bn2binpad(ECDSA_SIG_get0_r(sig), out.baseAddress, 32)
                _ = BN_bn2binpad(ECDSA_SIG_get0_s(sig), out.baseAddress! + 32, 32)
            }
            return raw
        }
    }
}

/// A P-256 public key that checks ES256 signatures. Made from a private key, or from PEM text holding
/// either a public key (`-----BEGIN PUBLIC KEY-----`) or a private key (an APNs `.p8`), so a mock
/// server can be given the same file the sender signs with.
public final class ES256PublicKey: @unchecked Sendable, Equatable {
    // @unchecked: immutable after init; OpenSSL 3 allows concurrent verification with one key.
    let pkey: OpaquePointer

    init(owning pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    /// The key in PEM text (public or private). `source` names it in errors.
    public convenience init(pem: [UInt8], source: String = "key") throws(CredentialError) {
        let pub = try? withMemoryBIO(pem) { (bio: OpaquePointer) throws(CredentialError) -> OpaquePointer in
            guard let k = PEM_read_bio_PUBKEY(bio, nil, nil, nil) else { throw CredentialError("") }
            return k
        }
        ERR_clear_error()
        if let pub {
            try checkP256(pub, source)
            self.init(owning: pub)
            return
        }
        let privateKey = try ES256PrivateKey(pem: pem, source: source)
        EVP_PKEY_up_ref(privateKey.pkey)
        self.init(owning: privateKey.pkey)
    }

    /// The key in the PEM file at `path`.
    public convenience init(contentsOfFile path: String) throws(CredentialError) {
        try self.init(pem: try readFile(path), source: path)
    }

    /// The key as SubjectPublicKeyInfo DER (what identifies it).
    var derBytes: [UInt8] {
        let n = i2d_PUBKEY(pkey, nil)
        guard n > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: Int(n))
        out.withUnsafeMutableBufferPointer { b in
            var p: UnsafeMutablePointer<UInt8>? = b.baseAddress
            _ = i2d_PUBKEY(pkey, &p)
        }
        return out
    }

    /// The key as PEM (`-----BEGIN PUBLIC KEY-----`).
    public func pem() throws(CredentialError) -> String {
        try bioText { PEM_write_bio_PUBKEY($0, pkey) }
    }

    /// Whether `signature` (r ‖ s, 64 bytes) is a valid ES256 signature of `message` by this key.
    public func verify(signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) -> Bool {
        defer { ERR_clear_error() }
        guard signature.count == 64, let sig = ECDSA_SIG_new() else { return false }
        defer { ECDSA_SIG_free(sig) }
        let base = signature.baseAddress!.assumingMemoryBound(to: UInt8.self)
        guard let r = BN_bin2bn(base, 32, nil) else { return false }
        guard let s = BN_bin2bn(base + 32, 32, nil) else { BN_free(r); return false }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else { BN_free(r); BN_free(s); return false }
        var der = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        return withUnsafeMutableBytes(of: &der) { d -> Bool in
            var p: UnsafeMutablePointer<UInt8>? = d.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let n = i2d_ECDSA_SIG(sig, &p)
            guard n > 0, Int(n) <= d.count, let md = EVP_MD_CTX_new() else { return false }
            defer { EVP_MD_CTX_free(md) }
            return EVP_DigestVerifyInit(md, nil, EVP_sha256(), nil, pkey) == 1
                && EVP_DigestVerify(md, d.baseAddress!.assumingMemoryBound(to: UInt8.self), Int(n),
                                    message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count) == 1
        }
    }

    public static func == (a: ES256PublicKey, b: ES256PublicKey) -> Bool { a.derBytes == b.derBytes }
}

/// Throws unless `key` is an EC key on P-256 (the only curve ES256 uses).
private func checkP256(_ key: OpaquePointer, _ source: String) throws(CredentialError) {
    var name = [CChar](repeating: 0, count: 64)
    var length = 0
    guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC,
          EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1,
          String(decoding: name[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1" else {
        EVP_PKEY_free(key)
        ERR_clear_error()
        throw CredentialError("\(source): not a P-256 (ES256) key; APNs provider keys are P-256")
    }
}
