/// ALPN names with addresses that outlive any handshake (the select callback returns pointers).
enum ALPNNames {
    nonisolated(unsafe) static let h2: UnsafeMutableBufferPointer<UInt8> = make("h2")
    nonisolated(unsafe) static let http1: UnsafeMutableBufferPointer<UInt8> = make("http/1.1")

    private static func make(_ s: String) -> UnsafeMutableBufferPointer<UInt8> {
        let b = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: s.utf8.count)
        _ = b.initialize(from: s.utf8)
        return b
    }
}
