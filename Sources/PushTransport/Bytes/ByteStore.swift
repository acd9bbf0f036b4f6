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

/// Offsets of one header field inside a `ByteStore`.
struct HeaderRef {
    var nameOffset: Int32
    var nameLength: Int32
    var valueOffset: Int32
    var valueLength: Int32
    /// Extra nghttp2_nv flags for a response field (NGHTTP2_NV_FLAG_NO_INDEX for never-indexed values).
    var nvFlags: UInt8 = 0
}

/// A header list received from the peer: name/value byte views, valid during the delegate callback.
///
/// Names are lowercase (HTTP/2 requires it). Iterate with `count` and `subscript`, or look one up
/// with `first(named:)`; nothing allocates.
public struct HTTP2HeaderList {
    let store: UnsafeRawPointer
    let refs: UnsafeBufferPointer<HeaderRef>

    /// Number of regular (non-pseudo) header fields.
    public var count: Int { refs.count }

    /// The `i`th field as (name, value) byte views.
    public subscript(i: Int) -> (name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let r = refs[i]
        return (UnsafeRawBufferPointer(start: store + Int(r.nameOffset), count: Int(r.nameLength)),
                UnsafeRawBufferPointer(start: store + Int(r.valueOffset), count: Int(r.valueLength)))
    }

    /// The value of the first field named `name` (lowercase), or nil.
    public func first(named name: StaticString) -> UnsafeRawBufferPointer? {
        let n = name.utf8CodeUnitCount
        var i = 0
        while i < refs.count {
            let r = refs[i]
            if Int(r.nameLength) == n && memcmp(store + Int(r.nameOffset), name.utf8Start, n) == 0 {
                return UnsafeRawBufferPointer(start: store + Int(r.valueOffset), count: Int(r.valueLength))
            }
            i += 1
        }
        return nil
    }
}

extension UnsafeRawBufferPointer {
    /// The bytes as a String (allocates; for tests, logs and error paths, not the hot path).
    public var pbString: String { String(decoding: self, as: UTF8.self) }
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

/// Send cursor of one body: where the bytes are and how many went out. Lives in a stream slot and is
/// what nghttp2's data source points at.
struct BodyCursor {
    var base: UnsafeRawPointer?
    var count: Int
    var sent: Int
}
