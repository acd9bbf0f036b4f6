import Glibc

/// A growable byte arena that keeps its capacity across reuse (one realloc at a new high-water mark,
/// none in steady state). Owned by a stream slot; freed by the slot's `deinit`.
struct ByteStore {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var capacity: Int
    var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 16)
        base = .allocate(byteCount: self.capacity, alignment: 8)
    }

    func free() { base.deallocate() }

    /// Gives back the memory of a store that grew past `limit` (an unusually large request), keeping
    /// `initial` bytes: its next use starts small again. Empties the store.
    mutating func shrink(above limit: Int, to initial: Int) {
        count = 0
        if capacity <= limit { return }
        base.deallocate()
        capacity = max(initial, 16)
        base = .allocate(byteCount: capacity, alignment: 8)
    }

    mutating func reserve(_ extra: Int) {
        let need = count + extra
        if need <= capacity { return }
        var c = capacity
        while c < need { c *= 2 }
        let nb = UnsafeMutableRawPointer.allocate(byteCount: c, alignment: 8)
        nb.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = nb
        capacity = c
    }

    /// Appends bytes; returns their offset.
    @discardableResult @inline(__always)
    mutating func append(_ p: UnsafeRawPointer?, _ n: Int) -> Int {
        if count + n > capacity { reserve(n) }
        let off = count
        if n > 0, let p { ByteStore.copy(base + off, p, n) }
        count += n
        return off
    }

    /// Copies `n` > 0 bytes. Most header names and values are under 17 bytes: two overlapping word
    /// loads and stores move them without a call into libc (which costs more than the copy itself).
    @inline(__always) static func copy(_ dst: UnsafeMutableRawPointer, _ src: UnsafeRawPointer, _ n: Int) {
        if n > 16 {
            dst.copyMemory(from: src, byteCount: n)
        } else if n >= 8 {
            let a = src.loadUnaligned(as: UInt64.self)
            let b = src.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
            dst.storeBytes(of: a, as: UInt64.self)
            dst.storeBytes(of: b, toByteOffset: n - 8, as: UInt64.self)
        } else if n >= 4 {
            let a = src.loadUnaligned(as: UInt32.self)
            let b = src.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)
            dst.storeBytes(of: a, as: UInt32.self)
            dst.storeBytes(of: b, toByteOffset: n - 4, as: UInt32.self)
        } else {
            var i = 0
            while i < n { dst.storeBytes(of: src.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self); i += 1 }
        }
    }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
}

extension UnsafeRawBufferPointer {
    /// The bytes as a String (allocates; for tests, logs and error paths, not the hot path).
    public var pbString: String { String(decoding: self, as: UTF8.self) }
}
