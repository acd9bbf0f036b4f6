/// Per-stream preallocated state of the client, in manually allocated memory at a stable address
/// (the nghttp2 stream user data): body slot, per-request values, response storage.
struct ClientSlot: StreamSlot {
    var cursor = BodyCursor(base: nil, count: 0, sent: 0)
    var body: UnsafeMutableRawBufferPointer
    var values = ByteStore(capacity: 256)
    /// (offset, length) per per-request field; length -1 = unset.
    var valueRefs: UnsafeMutablePointer<Int>
    static let maxValues = 32
    var respStore = ByteStore(capacity: 256)
    var respRefs = HeaderRefList(capacity: 16)
    var respBody = ByteStore(capacity: 256)
    /// Response body bytes received (kept or not).
    var respBodyLength = 0
    var active = false
    var done = false
    var context: UInt64 = 0
    var streamID: Int32 = 0
    var status = 0
    /// What the response declared so far, judged by `ResponseMessageRules`.
    var message = ResponseMessage(method: nil, 0)
    var timing = HTTP2StreamTiming(submitted: 0, headersSent: 0, responseHeadersReceived: 0, completed: 0)

    /// A slot with `bodyCapacity` bytes of request body memory.
    init(bodyCapacity: Int) {
        body = .allocate(byteCount: max(bodyCapacity, 0), alignment: 16)
        valueRefs = .allocate(capacity: 2 * ClientSlot.maxValues)
    }

    func freeStorage() {
        body.deallocate()
        values.free()
        valueRefs.deallocate()
        respStore.free()
        respRefs.free()
        respBody.free()
    }

    static let cursorOffset = MemoryLayout<ClientSlot>.offset(of: \ClientSlot.cursor)!
    @inline(__always) static func cursor(_ p: UnsafeMutablePointer<ClientSlot>) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(p) + cursorOffset
    }
}
