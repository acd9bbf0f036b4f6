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
    /// Header bytes of the request as SETTINGS_MAX_HEADER_LIST_SIZE counts them (name + value + 32 per field).
    var headerBytes = 0
    /// When its first HEADERS began (monotonic ns), for the request timeout.
    var startedAt: UInt64 = 0
    /// The header block ended (END_HEADERS).
    var headersDone = false
    /// The request is settled: delivered whole, refused or reset (counted out of the incomplete ones).
    var settled = false
    /// Refused by a limit: 431 due at the end of its header block, or reset; nothing more of it is kept.
    var rejection = Rejection.none
    /// What its header section declared, judged by RequestMessageRules.
    var message = RequestMessage()

    enum Rejection: UInt8 {
        case none
        /// Its header list passed the limit: answered 431 once the header block ends.
        case headersTooLarge
        /// Reset (RST_STREAM sent) or answered: whatever else arrives for it is dropped.
        case done
    }

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
        headerBytes = 0
        headersDone = false
        settled = false
        rejection = .none
        message = RequestMessage()
    }

    /// Header and body stores past this many bytes are given back when the slot is released.
    static let keptStoreBytes = 16 * 1024

    static let cursorOffset = MemoryLayout<ServerSlot>.offset(of: \ServerSlot.cursor)!
    @inline(__always) static func cursor(_ p: UnsafeMutablePointer<ServerSlot>) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(p) + cursorOffset
    }
}
