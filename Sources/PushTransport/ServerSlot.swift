/// Per-stream preallocated state of the server, in manually allocated memory at a stable address:
/// the address is the nghttp2 stream user data, so callbacks reach it without a lookup, a retain or an
/// exclusivity check. nghttp2's data source points at its body cursor.
struct ServerSlot: StreamSlot {
    var cursor = BodyCursor(base: nil, count: 0, sent: 0)
    var reqStore = ByteStore(capacity: 512)
    var reqRefs = HeaderRefList(capacity: 16)
    /// (offset, length) of :method, :path, :authority, :scheme in reqStore.
    var pseudo: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
    var reqBody = ByteStore(capacity: 256)
    var respStore = ByteStore(capacity: 128)
    var respRefs = HeaderRefList(capacity: 8)
    var respBody = ByteStore(capacity: 128)
    var active = false
    var responded = false
    var streamID: Int32 = 0

    func freeStorage() {
        reqStore.free()
        reqRefs.free()
        reqBody.free()
        respStore.free()
        respRefs.free()
        respBody.free()
    }

    mutating func reset() {
        reqStore.count = 0
        reqRefs.count = 0
        pseudo = (0, 0, 0, 0, 0, 0, 0, 0)
        reqBody.count = 0
        respStore.count = 0
        respRefs.count = 0
        respBody.count = 0
        responded = false
    }

    static let cursorOffset = MemoryLayout<ServerSlot>.offset(of: \ServerSlot.cursor)!
    @inline(__always) static func cursor(_ p: UnsafeMutablePointer<ServerSlot>) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(p) + cursorOffset
    }
}
