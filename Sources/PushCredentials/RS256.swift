import COpenSSL

/// An RSA key for RS256 (RSASSA-PKCS1-v1_5 over SHA-256), as in a Google service account's
/// `private_key` (PEM, PKCS #8). Holds the private half when made from one; the public half alone
/// checks signatures. Immutable once made; OpenSSL 3 allows concurrent use of a key.
///
/// ```swift
/// let key = try RS256Key.generate()
/// let signature = try key.sign(Array("header.claims".utf8))       // 256 bytes for RSA-2048
/// key.verify(signature: signature, message: Array("header.claims".utf8))   // true
/// ```
public final class RS256Key: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is never changed after init.
    let pkey: OpaquePointer
    /// Whether the private half is there (a key read from a public-key PEM only verifies).
    let canSign: Bool

    init(owning pkey: OpaquePointer, canSign: Bool) {
        self.pkey = pkey
        self.canSign = canSign
    }

    deinit { EVP_PKEY_free(pkey) }

    /// A new random RSA key of `bits` (2048, as Google issues).
    public static func generate(bits: Int = 2048) throws(CredentialError) -> RS256Key {
        guard let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nil) else { throw CredentialError.openSSL("cannot make an RSA key") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)) == 1,
              EVP_PKEY_keygen(ctx, &key) == 1, let key else { throw CredentialError.openSSL("cannot make an RSA key") }
        return RS256Key(owning: key, canSign: true)
    }

    /// The key in PEM text: a private key (`-----BEGIN PRIVATE KEY-----` or `-----BEGIN RSA PRIVATE
    /// KEY-----`) or a public one (`-----BEGIN PUBLIC KEY-----`). `source` names it in errors, never the text.
    convenience init(pem: [UInt8], source: String = "key") throws(CredentialError) {
        if let k = try? withMemoryBIO(pem, { (bio: OpaquePointer) throws(CredentialError) -> OpaquePointer in
            guard let k = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else { throw CredentialError("") }
            return k
        }) {
            ERR_clear_error()
            try checkRSA(k, source)
            self.init(owning: k, canSign: true)
            return
        }
        ERR_clear_error()
        guard let k = try? withMemoryBIO(pem, { (bio: OpaquePointer) throws(CredentialError) -> OpaquePointer in
            guard let k = PEM_read_bio_PUBKEY(bio, nil, nil, nil) else { throw CredentialError("") }
            return k
        }) else {
            ERR_clear_error()
            throw CredentialError("\(source): not a PEM RSA key (expected -----BEGIN PRIVATE KEY-----, as in a service account's private_key)")
        }
        try checkRSA(k, source)
        self.init(owning: k, canSign: false)
    }

    /// The private key as PKCS #8 PEM (a service account's `private_key`).
    public func pkcs8PEM() throws(CredentialError) -> String {
        guard canSign else { throw CredentialError("the key has no private half") }
        return try bioText { PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil) }
    }

    /// The public key as PEM (`-----BEGIN PUBLIC KEY-----`).
    func publicPEM() throws(CredentialError) -> String {
        try bioText { PEM_write_bio_PUBKEY($0, pkey) }
    }

    /// The RS256 signature of `message` (as long as the modulus: 256 bytes for RSA-2048).
    public func sign(_ message: some Collection<UInt8>) throws(CredentialError) -> [UInt8] {
        guard canSign else { throw CredentialError("the key has no private half: it cannot sign") }
        guard let md = EVP_MD_CTX_new() else { throw CredentialError("out of memory") }
        defer { EVP_MD_CTX_free(md) }
        let bytes = Array(message)
        var signature = [UInt8](repeating: 0, count: Int(EVP_PKEY_get_size(pkey)))
        var length = signature.count
        let ok = bytes.withUnsafeBytes { m in
            signature.withUnsafeMutableBytes { s in
                EVP_DigestSignInit(md, nil, EVP_sha256(), nil, pkey) == 1
                    && EVP_DigestSign(md, s.baseAddress?.assumingMemoryBound(to: UInt8.self), &length,
                                      m.baseAddress?.assumingMemoryBound(to: UInt8.self), m.count) == 1
            }
        }
        guard ok else { throw CredentialError.openSSL("cannot sign") }
        return Array(signature[0..<length])
    }

    /// Whether `signature` is a valid RS256 signature of `message` by this key.
    public func verify(signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) -> Bool {
        defer { ERR_clear_error() }
        guard let md = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(md) }
        return EVP_DigestVerifyInit(md, nil, EVP_sha256(), nil, pkey) == 1
            && EVP_DigestVerify(md, signature.baseAddress?.assumingMemoryBound(to: UInt8.self), signature.count,
                                message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count) == 1
    }

    /// `verify(signature:message:)` for arrays.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        signature.withUnsafeBytes { s in message.withUnsafeBytes { m in verify(signature: s, message: m) } }
    }
}

/// Throws (and frees `key`) unless it is an RSA key.
private func checkRSA(_ key: OpaquePointer, _ source: String) throws(CredentialError) {
    guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
        EVP_PKEY_free(key)
        ERR_clear_error()
        throw CredentialError("\(source): not an RSA key; service-account keys are RSA (RS256)")
    }
}
