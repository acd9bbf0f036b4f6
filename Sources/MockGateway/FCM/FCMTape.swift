import PushPayload

/// The FCM route's JSON tape: the same entries, in the same order, as PushPayload's ``JSONTape``, held in
/// a plain reused buffer. A fast parser covers the documents FCM senders actually send (no backslash
/// escapes, nesting ≤ 64, at most the buffer's entries); it accepts only what ``JSONTape`` accepts and
/// writes exactly the entries ``JSONTape`` would. Anything else — an error, an escape, a deeper or
/// bigger document — goes to ``JSONTape`` itself, whose entries are copied over (the buffer grows), so
/// errors (code, line, column) and unescaping are PushPayload's own. The fast path exists because
/// `JSONTape` appends to Swift arrays (uniqueness and capacity checks per entry): on the FCM bench
/// message it was about 7 % of the gateway's samples, the largest single FCM cost.
///
/// One per ``FCMEngine`` (one per event loop); not thread-safe. Copies share the buffer.
struct FCMTape {
    /// One value (or object key), as ``JSONTape/Entry``.
    struct Entry: Equatable {
        var kind: JSONKind
        var isKey: Bool
        var hasEscapes: Bool
        var start: Int
        var end: Int
        var next: Int
        var count: Int
    }

    /// Owns the entry buffer; copies of the tape share it.
    final class Memory {
        var base: UnsafeMutablePointer<Entry>
        var capacity: Int

        init(capacity: Int) {
            self.capacity = capacity
            base = .allocate(capacity: capacity)
        }

        func grow(to n: Int) {
            guard n > capacity else { return }
            let bigger = UnsafeMutablePointer<Entry>.allocate(capacity: n)
            base.deallocate()
            base = bigger
            capacity = n
        }

        deinit { base.deallocate() }
    }

    private let memory: Memory
    // The buffer as of the last parse (read once per parse, so entry reads need no class access).
    private var base: UnsafeMutablePointer<Entry>
    private(set) var count = 0
    /// PushPayload's tape, used for documents the fast parser leaves and for escaped strings.
    private var fallback = JSONTape(capacity: 64)
    /// Whether the last document went through `fallback` (its entries are then valid too).
    private(set) var usedFallback = false
    /// Nesting the fast parser takes (deeper documents go to `JSONTape`, which allows `JSON.maxDepth`).
    static let fastMaxDepth = 64

    /// An empty tape with room for `capacity` entries before the first growth.
    init(capacity: Int = 512) {
        memory = Memory(capacity: max(capacity, 8))
        base = memory.base
    }

    /// Index of the top-level value.
    var root: Int { 0 }

    /// Parses `bytes`, replacing the tape's contents. Returns `nil` on success, else ``JSONTape``'s error.
    mutating func parse(_ bytes: UnsafeRawBufferPointer) -> JSONError? {
        base = memory.base
        if bytes.count > 0 {
            var fast = FastJSON(p: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), n: bytes.count,
                                out: base, capacity: memory.capacity)
            if fast.parseDocument() {
                count = fast.used
                usedFallback = false
                return nil
            }
        }
        return parseWithFallback(bytes)
    }

    private mutating func parseWithFallback(_ bytes: UnsafeRawBufferPointer) -> JSONError? {
        usedFallback = true
        count = 0
        if let error = fallback.parse(bytes) { return error }
        let entries = fallback.entries
        if entries.count > memory.capacity { memory.grow(to: max(entries.count, memory.capacity * 2)) }
        base = memory.base
        for i in 0..<entries.count {
            let e = entries[i]
            base[i] = Entry(kind: e.kind, isKey: e.isKey, hasEscapes: e.hasEscapes, start: e.start, end: e.end,
                            next: e.next, count: e.count)
        }
        count = entries.count
        return nil
    }

    /// The entry at `index`.
    @inline(__always) subscript(index: Int) -> Entry {
        precondition(index >= 0 && index < count, "FCMTape index \(index) out of 0..<\(count)")
        return base[index]
    }

    /// The raw bytes of the value at `index` (for a string: between the quotes, still escaped).
    @inline(__always) func rawBytes(at index: Int, in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let e = self[index]
        return UnsafeRawBufferPointer(rebasing: bytes[e.start..<e.end])
    }

    /// `true`/`false` at `index`, or `nil` when it is not a boolean.
    @inline(__always) func bool(at index: Int) -> Bool? {
        switch self[index].kind {
        case .true: return true
        case .false: return false
        default: return nil
        }
    }

    /// Whether the string at `index` equals `other` (UTF-8) after unescaping.
    @inline(__always) func stringEquals(at index: Int, _ other: UnsafeRawBufferPointer, in bytes: UnsafeRawBufferPointer) -> Bool {
        let e = self[index]
        guard e.kind == .string else { return false }
        if e.hasEscapes { return fallback.stringEquals(at: index, other, in: bytes) }
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
    @inline(__always) func stringEquals(at index: Int, _ other: StaticString, in bytes: UnsafeRawBufferPointer) -> Bool {
        stringEquals(at: index, UnsafeRawBufferPointer(start: other.utf8Start, count: other.utf8CodeUnitCount), in: bytes)
    }

    /// Index of the value of the last member named `key` of the object at `index` (the last one wins), or nil.
    func member(_ key: UnsafeRawBufferPointer, of index: Int, in bytes: UnsafeRawBufferPointer) -> Int? {
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

    /// Same as ``member(_:of:in:)`` with a static key.
    @inline(__always) func member(_ key: StaticString, of index: Int, in bytes: UnsafeRawBufferPointer) -> Int? {
        member(UnsafeRawBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount), of: index, in: bytes)
    }

    /// The string at `index` as a Swift `String` (allocates), or `nil` when it is not a string.
    func string(at index: Int, in bytes: UnsafeRawBufferPointer) -> String? {
        let e = self[index]
        guard e.kind == .string else { return nil }
        if e.hasEscapes { return fallback.string(at: index, in: bytes) }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[e.start..<e.end]), as: UTF8.self)
    }
}

/// The fast parser: JSONCore's grammar without backslash escapes, writing tape entries into a fixed
/// buffer. Returns false (leaving the document to `JSONTape`) on anything it does not take.
private struct FastJSON {
    let p: UnsafePointer<UInt8>
    let n: Int
    let out: UnsafeMutablePointer<FCMTape.Entry>
    let capacity: Int
    var i = 0
    var used = 0

    init(p: UnsafePointer<UInt8>, n: Int, out: UnsafeMutablePointer<FCMTape.Entry>, capacity: Int) {
        self.p = p
        self.n = n
        self.out = out
        self.capacity = capacity
    }

    @inline(__always) mutating func skipWhitespace() {
        while i < n {
            let c = p[i]
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { i += 1 } else { return }
        }
    }

    @inline(__always) mutating func append(_ kind: JSONKind, isKey: Bool, start: Int, end: Int) -> Bool {
        guard used < capacity else { return false }
        out[used] = FCMTape.Entry(kind: kind, isKey: isKey, hasEscapes: false, start: start, end: end,
                                  next: used + 1, count: 0)
        used += 1
        return true
    }

    mutating func parseDocument() -> Bool {
        skipWhitespace()
        guard i < n, parseValue(depth: 0) else { return false }
        skipWhitespace()
        return i == n
    }

    mutating func parseValue(depth: Int) -> Bool {
        guard i < n else { return false }
        switch p[i] {
        case UInt8(ascii: "{"): return parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return parseString(isKey: false)
        case UInt8(ascii: "t"): return parseLiteral(0x65_75_72_74, 4, .true)        // "true"
        case UInt8(ascii: "f"): return parseFalse()
        case UInt8(ascii: "n"): return parseLiteral(0x6C_6C_75_6E, 4, .null)        // "null"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return parseNumber()
        default: return false
        }
    }

    @inline(__always) mutating func parseLiteral(_ word: UInt32, _ len: Int, _ kind: JSONKind) -> Bool {
        guard i + len <= n, UnsafeRawPointer(p + i).loadUnaligned(as: UInt32.self) == word else { return false }
        guard append(kind, isKey: false, start: i, end: i + len) else { return false }
        i += len
        return true
    }

    @inline(__always) mutating func parseFalse() -> Bool {
        guard i + 5 <= n, UnsafeRawPointer(p + i + 1).loadUnaligned(as: UInt32.self) == 0x65_73_6C_61 else { return false }  // "alse"
        guard append(.false, isKey: false, start: i, end: i + 5) else { return false }
        i += 5
        return true
    }

    mutating func parseObject(depth: Int) -> Bool {
        guard depth <= FCMTape.fastMaxDepth, used < capacity else { return false }
        let me = used
        out[me] = FCMTape.Entry(kind: .object, isKey: false, hasEscapes: false, start: i, end: i, next: 0, count: 0)
        used += 1
        i += 1
        skipWhitespace()
        var count = 0
        if i < n && p[i] == UInt8(ascii: "}") {
            i += 1
            close(me, count: 0)
            return true
        }
        while true {
            guard i < n, p[i] == UInt8(ascii: "\""), parseString(isKey: true) else { return false }
            skipWhitespace()
            guard i < n, p[i] == UInt8(ascii: ":") else { return false }
            i += 1
            skipWhitespace()
            guard parseValue(depth: depth) else { return false }
            count += 1
            skipWhitespace()
            guard i < n else { return false }
            if p[i] == UInt8(ascii: ",") {
                i += 1
                skipWhitespace()
                continue
            }
            guard p[i] == UInt8(ascii: "}") else { return false }
            i += 1
            close(me, count: count)
            return true
        }
    }

    mutating func parseArray(depth: Int) -> Bool {
        guard depth <= FCMTape.fastMaxDepth, used < capacity else { return false }
        let me = used
        out[me] = FCMTape.Entry(kind: .array, isKey: false, hasEscapes: false, start: i, end: i, next: 0, count: 0)
        used += 1
        i += 1
        skipWhitespace()
        var count = 0
        if i < n && p[i] == UInt8(ascii: "]") {
            i += 1
            close(me, count: 0)
            return true
        }
        while true {
            guard parseValue(depth: depth) else { return false }
            count += 1
            skipWhitespace()
            guard i < n else { return false }
            if p[i] == UInt8(ascii: ",") {
                i += 1
                skipWhitespace()
                continue
            }
            guard p[i] == UInt8(ascii: "]") else { return false }
            i += 1
            close(me, count: count)
            return true
        }
    }

    @inline(__always) mutating func close(_ index: Int, count: Int) {
        out[index].end = i
        out[index].next = used
        out[index].count = count
    }

    @inline(__always) static func isDigit(_ c: UInt8) -> Bool { c &- 0x30 < 10 }

    mutating func parseNumber() -> Bool {
        let start = i
        if p[i] == UInt8(ascii: "-") { i += 1 }
        guard i < n, Self.isDigit(p[i]) else { return false }
        if p[i] == UInt8(ascii: "0") {
            i += 1
            if i < n && Self.isDigit(p[i]) { return false }
        } else {
            while i < n && Self.isDigit(p[i]) { i += 1 }
        }
        if i < n && p[i] == UInt8(ascii: ".") {
            i += 1
            guard i < n, Self.isDigit(p[i]) else { return false }
            while i < n && Self.isDigit(p[i]) { i += 1 }
        }
        if i < n && (p[i] | 0x20) == UInt8(ascii: "e") {
            i += 1
            if i < n && (p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-")) { i += 1 }
            guard i < n, Self.isDigit(p[i]) else { return false }
            while i < n && Self.isDigit(p[i]) { i += 1 }
        }
        return append(.number, isKey: false, start: start, end: i)
    }

    /// Whether the 8 bytes hold a quote, a backslash, a control character or a non-ASCII byte
    /// (no false negatives; a hit is rechecked byte by byte).
    @inline(__always) static func wordStops(_ x: UInt64) -> Bool {
        x & 0x8080_8080_8080_8080 != 0 || JSONBytes.wordNeedsEscape(x)
    }

    @inline(__always) mutating func parseString(isKey: Bool) -> Bool {
        i += 1
        let start = i
        while true {
            while i + 8 <= n, !Self.wordStops(UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)) { i += 8 }
            while i < n {
                let c = p[i]
                if c == 0x22 || c == 0x5C || c < 0x20 || c >= 0x80 { break }
                i += 1
            }
            guard i < n else { return false }
            let c = p[i]
            if c == 0x22 {
                guard append(.string, isKey: isKey, start: start, end: i) else { return false }
                i += 1
                return true
            }
            // A backslash or a control character: JSONTape's business (its escapes, its errors).
            guard c >= 0x80, validateUTF8Scalar() else { return false }
        }
    }

    /// One multi-byte UTF-8 sequence at `i`, with PushPayload's rules (JSONBytes).
    @inline(__always) mutating func validateUTF8Scalar() -> Bool {
        let len = JSONBytes.utf8ScalarLength(p, at: i, count: n)
        guard len > 0 else { return false }
        i += len
        return true
    }
}
