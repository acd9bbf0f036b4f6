import CNGHTTP2

/// Response fields a client connection already judged regular (`ResponseMessageRules`), known by the
/// nghttp2 buffers that hold their name and value.
///
/// A field the peer sends from its HPACK table comes to the header callback in that table entry's
/// buffers, the same ones every time, so a server's repeated fields (server, cache-control, a date
/// within its second) are checked byte by byte once per table entry instead of once per response.
/// Only verdicts that depend on the bytes alone are kept (a regular field other than content-length
/// and te, whose verdicts depend on the response). Each cached buffer holds a reference, so its memory
/// cannot be freed and reused for other bytes while the entry stands. Two-way: a field may sit in the
/// slot its value buffer's address hashes to or the next one; a third colliding field replaces the
/// entry in the first. Storage is allocated once, at init.
struct JudgedFieldCache {
    static let size = 64
    private let names: UnsafeMutablePointer<OpaquePointer?>
    private let values: UnsafeMutablePointer<OpaquePointer?>

    init() {
        names = .allocate(capacity: JudgedFieldCache.size)
        names.initialize(repeating: nil, count: JudgedFieldCache.size)
        values = .allocate(capacity: JudgedFieldCache.size)
        values.initialize(repeating: nil, count: JudgedFieldCache.size)
    }

    @inline(__always) private static func index(_ value: OpaquePointer) -> Int {
        let a = UInt64(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(value))))
        return Int(truncatingIfNeeded: (a &* 0x9E37_79B9_7F4A_7C15) >> 58)
    }

    /// Whether the field in these buffers was judged regular.
    @inline(__always) func contains(name: OpaquePointer, value: OpaquePointer) -> Bool {
        let i = JudgedFieldCache.index(value), j = (i + 1) & (JudgedFieldCache.size - 1)
        return (values[i] == value && names[i] == name) || (values[j] == value && names[j] == name)
    }

    /// Whether a field with this verdict and name length may be kept: its verdict depends on its bytes only.
    @inline(__always) static func keeps(_ verdict: ResponseMessageRules.Field, nameLength: Int) -> Bool {
        verdict == .regular && nameLength != 2 && nameLength != 14
    }

    /// Keeps the field in these buffers as judged regular, referencing both.
    func insert(name: OpaquePointer, value: OpaquePointer) {
        var i = JudgedFieldCache.index(value)
        if values[i] != nil {
            let j = (i + 1) & (JudgedFieldCache.size - 1)
            if values[j] == nil { i = j }
        }
        nghttp2_rcbuf_incref(name)
        nghttp2_rcbuf_incref(value)
        if let n = names[i] { nghttp2_rcbuf_decref(n) }
        if let v = values[i] { nghttp2_rcbuf_decref(v) }
        names[i] = name
        values[i] = value
    }

    /// Fields kept now.
    var count: Int {
        var n = 0
        for i in 0..<JudgedFieldCache.size where values[i] != nil { n += 1 }
        return n
    }

    /// Drops every entry and its references (the connection closed).
    func removeAll() {
        for i in 0..<JudgedFieldCache.size {
            if let n = names[i] { nghttp2_rcbuf_decref(n) }
            if let v = values[i] { nghttp2_rcbuf_decref(v) }
            names[i] = nil
            values[i] = nil
        }
    }

    /// Drops every entry and frees the storage.
    func free() {
        removeAll()
        names.deallocate()
        values.deallocate()
    }
}
