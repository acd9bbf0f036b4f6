/// A parsed JSON text as a flat run of entries, one per value and per object key, in document order.
///
/// The entries live in a buffer reused across parses: once it has grown to a document's size, `parse`
/// allocates nothing, and recording an entry is one store rather than an Array append with its
/// uniqueness and capacity checks (the FCM route of the gateway parses every request body onto one).
/// Entries hold byte ranges into the input, not copies, so the caller passes the same bytes to the
/// accessors. The accessors the gateway calls per field are inlinable, so they cost no call from
/// another module.
///
///     var tape = JSONTape()
///     if let error = tape.parse(body) { … }
///     if let msg = tape.member("message", of: tape.root, in: body),
///        let tok = tape.member("token", of: msg, in: body) { let s = tape.string(at: tok, in: body) }
///
/// A value: a copy keeps its entries when the original parses another document. A collection of
/// ``Entry`` indexed from 0.
public struct JSONTape: RandomAccessCollection, @unchecked Sendable {
    // @unchecked: the buffer is shared by copies only until one of them parses, which first takes a
    // buffer of its own unless it holds the only reference (copy on write, as Array does).

    /// One value (or object key) on the tape.
    public struct Entry: Sendable, Equatable {
        /// The value's kind; an object key is a `.string` with `isKey` set.
        public var kind: JSONKind
        /// Whether this string is an object key.
        public var isKey: Bool
        /// Whether this string contains backslash escapes (otherwise its bytes are its UTF-8).
        public var hasEscapes: Bool
        /// First byte: the opening bracket, the first byte inside a string's quotes, a number's first byte.
        public var start: Int
        /// One past the last byte: past the closing bracket; the closing quote of a string.
        public var end: Int
        /// Index of the entry after this value's subtree (the next sibling, or the parent's end).
        public var next: Int
        /// Children of an array; members (key/value pairs) of an object; 0 for scalars.
        public var count: Int

        /// An entry.
        public init(kind: JSONKind, isKey: Bool, hasEscapes: Bool, start: Int, end: Int, next: Int, count: Int) {
            self.kind = kind
            self.isKey = isKey
            self.hasEscapes = hasEscapes
            self.start = start
            self.end = end
            self.next = next
            self.count = count
        }
    }

    /// Owns the entry buffer.
    @usableFromInline final class Storage {
        @usableFromInline var base: UnsafeMutablePointer<Entry>
        @usableFromInline var capacity: Int

        init(capacity: Int) {
            self.capacity = capacity
            base = .allocate(capacity: capacity)
        }

        /// Grows to at least `minimum` entries (at least doubling), keeping the first `used`.
        func grow(to minimum: Int, keeping used: Int) {
            let bigger = Swift.max(minimum, capacity * 2)
            let fresh = UnsafeMutablePointer<Entry>.allocate(capacity: bigger)
            fresh.initialize(from: base, count: used)
            base.deallocate()
            base = fresh
            capacity = bigger
        }

        deinit { base.deallocate() }
    }

    @usableFromInline var storage: Storage
    /// `storage.base` as of the last parse, so that reading an entry touches no class.
    @usableFromInline var base: UnsafeMutablePointer<Entry>
    /// Entries of the last document parsed (0 after an error).
    public private(set) var count = 0

    /// An empty tape with room for `capacity` entries before its first growth.
    public init(capacity: Int = 64) {
        storage = Storage(capacity: Swift.max(capacity, 8))
        base = storage.base
    }

    /// Index of the top-level value.
    @inlinable public var root: Int { 0 }
    /// 0.
    @inlinable public var startIndex: Int { 0 }
    /// ``count``.
    @inlinable public var endIndex: Int { count }

    /// The entry at `index`.
    @inlinable @inline(__always) public subscript(index: Int) -> Entry {
        precondition(index >= 0 && index < count, "JSONTape index out of range")
        return base[index]
    }

    /// Parses `bytes`, replacing the tape's contents. Returns `nil` on success, else the error (and
    /// the tape is empty).
    public mutating func parse(_ bytes: UnsafeRawBufferPointer) -> JSONError? {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(capacity: storage.capacity) }
        var core = JSONCore(bytes, sink: TapeSink(storage: storage))
        let ok = core.parseDocument()
        base = storage.base
        count = ok ? core.sink.used : 0
        return ok ? nil : core.error(in: bytes)
    }

    /// Parses the bytes of an array.
    public mutating func parse(_ bytes: [UInt8]) -> JSONError? {
        bytes.withUnsafeBytes { parse($0) }
    }

    // MARK: Walking

    /// Calls `body` with the index of each array element, or each object *value*, without allocating.
    @inlinable public func forEachChild(of index: Int, _ body: (Int) throws -> Void) rethrows {
        let e = self[index]
        var i = index + 1
        if e.kind == .array {
            for _ in 0..<e.count { try body(i); i = base[i].next }
        } else if e.kind == .object {
            for _ in 0..<e.count { try body(i + 1); i = base[i + 1].next }
        }
    }

    /// Calls `body(keyIndex, valueIndex)` for each member of an object, without allocating.
    @inlinable public func forEachMember(of index: Int, _ body: (Int, Int) throws -> Void) rethrows {
        let e = self[index]
        guard e.kind == .object else { return }
        var i = index + 1
        for _ in 0..<e.count { try body(i, i + 1); i = base[i + 1].next }
    }

    /// The indices of an array's elements, or of an object's values (use ``members(of:)`` for keys).
    func children(of index: Int) -> [Int] {
        var out: [Int] = []
        forEachChild(of: index) { out.append($0) }
        return out
    }

    /// The `(key, value)` index pairs of an object, in document order.
    public func members(of index: Int) -> [(key: Int, value: Int)] {
        var out: [(key: Int, value: Int)] = []
        forEachMember(of: index) { out.append((key: $0, value: $1)) }
        return out
    }

    /// Index of the value of the last member named `key` in the object at `index` (JSON lets a key
    /// repeat; like FCM, the last one wins), or `nil`. Allocates nothing.
    @inlinable public func member(_ key: UnsafeRawBufferPointer, of index: Int, in bytes: UnsafeRawBufferPointer) -> Int? {
        let o = self[index]
        guard o.kind == .object else { return nil }
        var found: Int?
        var k = index + 1
        var left = o.count
        while left > 0 {
            if stringEquals(at: k, key, in: bytes) { found = k + 1 }
            k = base[k + 1].next
            left -= 1
        }
        return found
    }

    /// Same as ``member(_:of:in:)-(UnsafeRawBufferPointer,_,_)`` with a static key.
    @inlinable @inline(__always) public func member(_ key: StaticString, of index: Int, in bytes: UnsafeRawBufferPointer) -> Int? {
        member(UnsafeRawBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount), of: index, in: bytes)
    }

    // MARK: Reading values

    /// Whether the string at `index` equals `other` (UTF-8) after unescaping. Allocates nothing.
    @inlinable @inline(__always) public func stringEquals(at index: Int, _ other: UnsafeRawBufferPointer, in bytes: UnsafeRawBufferPointer) -> Bool {
        let e = self[index]
        guard e.kind == .string else { return false }
        if e.hasEscapes { return escapedStringEquals(e, other, bytes) }
        let n = other.count
        guard e.end - e.start == n else { return false }
        // Keys are short: a byte loop beats a call to memcmp.
        let p = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + e.start
        var i = 0
        while i < n {
            if p[i] != other.load(fromByteOffset: i, as: UInt8.self) { return false }
            i += 1
        }
        return true
    }

    /// Whether the string at `index` equals `other`.
    @inlinable @inline(__always) public func stringEquals(at index: Int, _ other: StaticString, in bytes: UnsafeRawBufferPointer) -> Bool {
        stringEquals(at: index, UnsafeRawBufferPointer(start: other.utf8Start, count: other.utf8CodeUnitCount), in: bytes)
    }

    @usableFromInline func escapedStringEquals(_ e: Entry, _ other: UnsafeRawBufferPointer, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var j = 0
        var ok = true
        JSONUnescape.forEachByte(bytes, e.start, e.end) { b in
            if j < other.count && other[j] == b { j += 1 } else { ok = false }
        }
        return ok && j == other.count
    }

    /// The unescaped UTF-8 bytes of the string at `index`, appended to `out` (no allocation once `out` has room).
    public func appendStringBytes(at index: Int, in bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let e = self[index]
        precondition(e.kind == .string, "entry \(index) is not a string")
        if !e.hasEscapes {
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[e.start..<e.end]))
        } else {
            JSONUnescape.forEachByte(bytes, e.start, e.end) { out.append($0) }
        }
    }

    /// The string at `index` as a Swift `String` (allocates), or `nil` when it is not a string.
    public func string(at index: Int, in bytes: UnsafeRawBufferPointer) -> String? {
        let e = self[index]
        guard e.kind == .string else { return nil }
        if !e.hasEscapes { return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[e.start..<e.end]), as: UTF8.self) }
        var out: [UInt8] = []
        appendStringBytes(at: index, in: bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The raw bytes of the value at `index` (for a string: between the quotes, still escaped).
    @inlinable @inline(__always) public func rawBytes(at index: Int, in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let e = self[index]
        return UnsafeRawBufferPointer(rebasing: bytes[e.start..<e.end])
    }

    /// The number at `index` as an `Int64` when it is an integer literal in range, else `nil`.
    public func int64(at index: Int, in bytes: UnsafeRawBufferPointer) -> Int64? {
        let e = self[index]
        guard e.kind == .number else { return nil }
        var i = e.start
        var negative = false
        if bytes[i] == UInt8(ascii: "-") { negative = true; i += 1 }
        var v: Int64 = 0
        while i < e.end {
            let c = bytes[i]
            guard c >= 0x30 && c <= 0x39 else { return nil }
            let d = Int64(c - 0x30)
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = negative ? m.subtractingReportingOverflow(d) : m.addingReportingOverflow(d)
            if o1 || o2 { return nil }
            v = s
            i += 1
        }
        return v
    }

    /// The number at `index` as a `Double`, or `nil` when it is not a number.
    public func double(at index: Int, in bytes: UnsafeRawBufferPointer) -> Double? {
        let e = self[index]
        guard e.kind == .number else { return nil }
        return Double(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[e.start..<e.end]), as: UTF8.self))
    }

    /// `true`/`false` at `index`, or `nil` when it is not a boolean.
    @inlinable @inline(__always) public func bool(at index: Int) -> Bool? {
        switch self[index].kind {
        case .true: return true
        case .false: return false
        default: return nil
        }
    }
}

/// Records entries straight into a tape's buffer, growing it when full.
struct TapeSink: JSONSink {
    let storage: JSONTape.Storage
    var base: UnsafeMutablePointer<JSONTape.Entry>
    var capacity: Int
    var used = 0

    init(storage: JSONTape.Storage) {
        self.storage = storage
        base = storage.base
        capacity = storage.capacity
    }

    @inline(__always) mutating func append(_ entry: JSONTape.Entry) -> Int {
        if used == capacity { grow() }
        base[used] = entry
        used += 1
        return used - 1
    }

    @inline(never) mutating func grow() {
        storage.grow(to: used + 1, keeping: used)
        base = storage.base
        capacity = storage.capacity
    }

    @inline(__always) mutating func open(_ kind: JSONKind, at offset: Int) -> Int {
        append(JSONTape.Entry(kind: kind, isKey: false, hasEscapes: false, start: offset, end: offset, next: 0, count: 0))
    }

    @inline(__always) mutating func close(_ token: Int, at offset: Int, count: Int) {
        base[token].end = offset
        base[token].next = used
        base[token].count = count
    }

    @inline(__always) mutating func scalar(_ kind: JSONKind, start: Int, end: Int, isKey: Bool, hasEscapes: Bool) {
        _ = append(JSONTape.Entry(kind: kind, isKey: isKey, hasEscapes: hasEscapes, start: start, end: end,
                                  next: used + 1, count: 0))
    }
}
