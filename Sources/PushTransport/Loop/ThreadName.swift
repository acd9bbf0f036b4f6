import CUV

/// Names the calling thread for `top -H`, `perf` and debuggers. The kernel keeps 15 bytes, so a longer
/// name is cut to 15 on a UTF-8 boundary. Foundation's `Thread.name` does not reach the kernel on Linux,
/// which left every pushbench thread showing as the process name.
public func nameCurrentThread(_ name: String) {
    var bytes = Array(name.utf8.prefix(15))
    while String(validating: bytes, as: UTF8.self) == nil { bytes.removeLast() }
    bytes.append(0)
    _ = bytes.withUnsafeBufferPointer { buffer in
        buffer.withMemoryRebound(to: CChar.self) { pb_set_thread_name($0.baseAddress!) }
    }
}

/// The calling thread's kernel name (what ``nameCurrentThread(_:)`` set).
func currentThreadName() -> String {
    var buffer = [CChar](repeating: 0, count: 16)
    _ = pb_get_thread_name(&buffer)
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
