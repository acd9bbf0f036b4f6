import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// A key, certificate or token that could not be read, made or used: one line saying what and why,
/// e.g. `key.p8: not a PEM private key`. Never holds key material or a token.
public struct CredentialError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was wrong.
    public var message: String
    /// An error with `message`.
    init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }

    /// `what` followed by the first reason OpenSSL queued on this thread, if any (the queue is cleared).
    static func openSSL(_ what: String) -> CredentialError {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0, let reason = ERR_reason_error_string(code) else { return CredentialError(what) }
        return CredentialError("\(what) (\(String(cString: reason)))")
    }
}

/// Reads a whole file, or throws naming it.
func readFile(_ path: String) throws(CredentialError) -> [UInt8] {
    guard let f = fopen(path, "rb") else {
        throw CredentialError("\(path): cannot read (\(String(cString: strerror(errno))))")
    }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, 4096, f) }
        if n > 0 { bytes += chunk[0..<n] }
        if n < 4096 { break }
        // Credential files are small; anything this large is not one.
        if bytes.count > 1 << 20 { throw CredentialError("\(path): too large for a key or certificate file") }
    }
    if ferror(f) != 0 { throw CredentialError("\(path): cannot read") }
    return bytes
}

/// A read-only memory BIO over `bytes` for the duration of `body`.
func withMemoryBIO<R>(_ bytes: [UInt8], _ body: (OpaquePointer) throws(CredentialError) -> R) throws(CredentialError) -> R {
    let result = bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Result<R, CredentialError> in
        guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return .failure(CredentialError("out of memory")) }
        defer { BIO_free(bio) }
        do throws(CredentialError) { return .success(try body(bio)) } catch { return .failure(error) }
    }
    return try result.get()
}

/// What `write` puts into a memory BIO, as text.
func bioText(_ write: (OpaquePointer) -> Int32) throws(CredentialError) -> String {
    guard let bio = BIO_new(BIO_s_mem()) else { throw CredentialError("out of memory") }
    defer { BIO_free(bio) }
    guard write(bio) == 1 else { throw CredentialError.openSSL("cannot encode PEM") }
    let n = Int(BIO_ctrl_pending(bio))
    var bytes = [UInt8](repeating: 0, count: n)
    let read = bytes.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32(n)) }
    return String(decoding: bytes[0..<Int(max(read, 0))], as: UTF8.self)
}
