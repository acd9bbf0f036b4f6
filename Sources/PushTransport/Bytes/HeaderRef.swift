/// Offsets of one header field inside a `ByteStore`.
struct HeaderRef {
    var nameOffset: Int32
    var nameLength: Int32
    var valueOffset: Int32
    var valueLength: Int32
    /// Extra nghttp2_nv flags for a response field (NGHTTP2_NV_FLAG_NO_INDEX for never-indexed values).
    var nvFlags: UInt8 = 0
}

/// A growable list of `HeaderRef` in manually managed memory (no refcounting, no exclusivity checks).
struct HeaderRefList {
    private(set) var base: UnsafeMutablePointer<HeaderRef>
    private(set) var capacity: Int
    var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 4)
        base = .allocate(capacity: self.capacity)
    }

    func free() { base.deallocate() }

    @inline(__always)
    mutating func append(_ r: HeaderRef) {
        if count == capacity { grow() }
        base[count] = r
        count += 1
    }

    /// Doubles the capacity (the rare path, kept out of the inlined append).
    @inline(never)
    private mutating func grow() {
        let nb = UnsafeMutablePointer<HeaderRef>.allocate(capacity: capacity * 2)
        nb.moveInitialize(from: base, count: count)
        base.deallocate()
        base = nb
        capacity *= 2
    }

    var buffer: UnsafeBufferPointer<HeaderRef> { UnsafeBufferPointer(start: base, count: count) }
}
