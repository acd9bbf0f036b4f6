import COpenSSL

/// X.509 names as text.
enum X509Names {
    /// RFC 2253 one-line form, e.g. `UID=com.example.app,CN=Apple Push Services: com.example.app,C=US`.
    static func oneLine(_ name: OpaquePointer?) -> String {
        guard let name, let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        X509_NAME_print_ex(bio, name, 0, pb_xn_flag_rfc2253_utf8)
        var p: UnsafeMutablePointer<CChar>?
        let n = pb_bio_mem_data(bio, &p)
        guard let p, n > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// The first entry of `nid` (e.g. NID_userId) as UTF-8, nil when absent.
    static func entry(_ name: OpaquePointer?, nid: Int32) -> String? {
        guard let name else { return nil }
        let i = X509_NAME_get_index_by_NID(name, nid, -1)
        guard i >= 0, let e = X509_NAME_get_entry(name, i), let data = X509_NAME_ENTRY_get_data(e) else { return nil }
        var out: UnsafeMutablePointer<UInt8>?
        let n = ASN1_STRING_to_UTF8(&out, data)
        guard n >= 0, let out else { return nil }
        defer { CRYPTO_free(out, nil, 0) }
        return String(decoding: UnsafeBufferPointer(start: out, count: Int(n)), as: UTF8.self)
    }
}
