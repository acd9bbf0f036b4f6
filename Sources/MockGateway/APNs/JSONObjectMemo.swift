import Glibc
import PushVocabulary

/// Whether a request body is a JSON object, remembering the last body that was one: a body byte for
/// byte equal to it gets the same verdict from one memcmp instead of a parse.
///
/// Load tests send one payload over and over (`pushbench --payload`, h2load -d): a parse per request
/// would be the largest part of the gateway's own per-request work, where a comparison of the bytes
/// costs almost nothing. The verdict is a function of the bytes alone, so equal bytes cannot get a
/// different one. Only bodies up to `capacity` bytes that are objects are remembered; any other body is
/// parsed, and a new object replaces the remembered one.
/// One per event loop (no locking): each state machine keeps its own.
struct JSONObjectMemo: ~Copyable {
    /// The largest body remembered.
    static let capacity = 4096
    private let bytes: UnsafeMutableRawPointer
    private var count = -1

    init() {
        bytes = .allocate(byteCount: Self.capacity, alignment: 16)
    }

    deinit { bytes.deallocate() }

    /// Whether `body` is a JSON object.
    @inline(__always)
    mutating func isObject(_ body: UnsafeRawBufferPointer) -> Bool {
        if body.count == count, let base = body.baseAddress, memcmp(base, bytes, count) == 0 { return true }
        guard JSON.topLevelKind(body) == .object else { return false }
        if body.count <= Self.capacity, let base = body.baseAddress {
            bytes.copyMemory(from: base, byteCount: body.count)
            count = body.count
        }
        return true
    }
}
