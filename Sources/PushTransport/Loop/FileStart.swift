#if canImport(Glibc)
import Glibc
#endif

/// The first `capacity` bytes of the file at `path` (at most), in one read: for the kernel's small
/// /proc texts (a CPU line, a thread's schedstat), read without Foundation. Nil when the file cannot be
/// opened or read, or is empty.
public func readFileStart(_ path: String, upTo capacity: Int) -> ArraySlice<UInt8>? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: capacity)
    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard n > 0 else { return nil }
    return buffer[0..<n]
}
