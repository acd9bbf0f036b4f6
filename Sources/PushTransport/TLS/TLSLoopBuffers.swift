/// The loop's TLS scratch memory, shared by its connections (each uses it synchronously).
final class TLSLoopBuffers {
    /// Decrypted bytes of one delivery to a session.
    let plaintext = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    /// Small iovecs gathered into one record's worth before `SSL_write`.
    let gather = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)
    /// `SSL_write` calls of the loop's connections (a test relates OpenSSL's allocations to them).
    var sslWrites = 0
    /// `SSL_read` calls of the loop's connections (a test checks a record costs one).
    var sslReads = 0
    /// Ciphertext reads OpenSSL made through the connections' BIOs (a test checks read-ahead takes a
    /// delivered record in one, not one for its header and one for its body).
    var bioReads = 0
    deinit {
        plaintext.deallocate()
        gather.deallocate()
    }
}

extension EventLoop {
    /// The TLS scratch buffers of this loop (made on first use).
    var tlsBuffers: TLSLoopBuffers { local(TLSLoopBuffers.self) { TLSLoopBuffers() } }
}
