/// Whether the `count` bytes at `a` equal those at `b`: a word at a time, the last word overlapping the
/// one before, for the short fields (header names, methods, path prefixes) every request compares.
/// Inlinable so the gateway's request logic and the transport's message rules compare without a call.
@inlinable @inline(__always)
public func bytesEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count n: Int) -> Bool {
    if n >= 8 {
        var i = 0
        while true {
            let at = min(i, n - 8)
            if a.loadUnaligned(fromByteOffset: at, as: UInt64.self) != b.loadUnaligned(fromByteOffset: at, as: UInt64.self) {
                return false
            }
            i += 8
            if i >= n { return true }
        }
    }
    if n >= 4 {
        return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
            && a.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self) == b.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)
    }
    var i = 0
    while i < n {
        if a.load(fromByteOffset: i, as: UInt8.self) != b.load(fromByteOffset: i, as: UInt8.self) { return false }
        i += 1
    }
    return true
}
