// A strict RFC 8259 JSON parser over raw bytes, with no Foundation. Two entry points share one
// generic core: `JSON.validate` (allocates nothing: the mock gateway calls it per request) and
// `JSONTape.parse` (records a flat tape of byte ranges, reusable across calls: the FCM gateway and
// the template compiler walk it).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a JSON value is.
public enum JSONKind: UInt8, Sendable {
    case object, array, string, number, `true`, `false`, null
}

/// Why a JSON text was rejected, where, and how to say it to a user.
public struct JSONError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The kinds of problems the parser reports.
    public enum Code: UInt8, Sendable {
        case emptyInput, unexpectedEnd, expectedValue, expectedKey, expectedColon
        case expectedCommaOrObjectEnd, expectedCommaOrArrayEnd, invalidLiteral, invalidNumber
        case controlCharacterInString, invalidEscape, invalidUnicodeEscape, invalidUTF8
        case unterminatedString, trailingData, tooDeep

        /// A short human sentence for the code.
        public var reason: String {
            switch self {
            case .emptyInput: return "empty input (expected a JSON value)"
            case .unexpectedEnd: return "unexpected end of input"
            case .expectedValue: return "expected a JSON value"
            case .expectedKey: return "expected a string key (or '}' for an empty object)"
            case .expectedColon: return "expected ':' after an object key"
            case .expectedCommaOrObjectEnd: return "expected ',' or '}' after an object member"
            case .expectedCommaOrArrayEnd: return "expected ',' or ']' after an array element"
            case .invalidLiteral: return "invalid literal (expected true, false or null)"
            case .invalidNumber: return "invalid number"
            case .controlCharacterInString: return "control character in a string (must be escaped)"
            case .invalidEscape: return "invalid escape sequence in a string"
            case .invalidUnicodeEscape: return "invalid \\u escape (expected 4 hex digits)"
            case .invalidUTF8: return "invalid UTF-8"
            case .unterminatedString: return "unterminated string"
            case .trailingData: return "unexpected data after the JSON value"
            case .tooDeep: return "nesting too deep"
            }
        }
    }

    /// The problem.
    public var code: Code
    /// Byte offset of the problem in the input.
    public var offset: Int
    /// 1-based line of `offset`.
    public var line: Int
    /// 1-based column of `offset`, counted in Unicode scalars (not bytes) from the line start.
    public var column: Int

    /// Creates an error; `line`/`column` are normally filled by `JSON.position(of:in:)`.
    public init(code: Code, offset: Int, line: Int, column: Int) {
        self.code = code
        self.offset = offset
        self.line = line
        self.column = column
    }

    /// `line:column: reason`, the way compilers print it.
    public var description: String { "\(line):\(column): \(code.reason)" }
}

/// Namespace for the allocation-free JSON entry points.
public enum JSON {
    /// Deepest nesting accepted; deeper input is rejected rather than risking the stack.
    public static let maxDepth = 512

    /// Validates `bytes` as one complete JSON text. Allocates nothing.
    ///
    ///     let ok = JSON.validate(body) == nil
    ///
    /// - Returns: `nil` when valid, else the first error (with line and column).
    public static func validate(_ bytes: UnsafeRawBufferPointer) -> JSONError? {
        var core = JSONCore(bytes, sink: NullSink())
        if core.parseDocument() { return nil }
        return core.error(in: bytes)
    }

    /// The kind of the top-level value when `bytes` is valid JSON, else `nil`. Allocates nothing.
    ///
    /// The mock gateway's "body is a JSON object" check is `JSON.topLevelKind(body) == .object`.
    public static func topLevelKind(_ bytes: UnsafeRawBufferPointer) -> JSONKind? {
        var core = JSONCore(bytes, sink: NullSink())
        guard core.parseDocument() else { return nil }
        return core.sink.first
    }

    /// Validates any contiguous bytes (`[UInt8]`, `ContiguousArray`, …).
    public static func validate<C: Collection>(_ bytes: C) -> JSONError? where C.Element == UInt8 {
        if let r = bytes.withContiguousStorageIfAvailable({ validate(UnsafeRawBufferPointer($0)) }) { return r }
        return Array(bytes).withUnsafeBytes { validate($0) }
    }

    /// 1-based line and column (in Unicode scalars) of a byte offset.
    public static func position(of offset: Int, in bytes: UnsafeRawBufferPointer) -> (line: Int, column: Int) {
        var line = 1, column = 1
        var i = 0
        let end = min(offset, bytes.count)
        while i < end {
            let c = bytes[i]
            if c == 0x0A {
                line += 1
                column = 1
            } else if c & 0xC0 != 0x80 {
                column += 1
            }
            i += 1
        }
        return (line, column)
    }
}

// MARK: - Tape

/// A parsed JSON text as a flat array of entries (one per value and per object key), in document
/// order. It holds byte ranges into the input, not copies, so the caller passes the same bytes to
/// the accessors. Reuse one tape across calls: once its storage has grown, `parse` allocates nothing.
///
///     var tape = JSONTape()
///     if let error = tape.parse(body) { … }
///     if let msg = tape.member("message", of: tape.root, in: body),
///        let tok = tape.member("token", of: msg, in: body) { let s = tape.string(at: tok, in: body) }
public struct JSONTape: Sendable {
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
    }

    /// The entries, in document order; `entries[0]` is the top-level value.
    public private(set) var entries: [Entry]
    private var stack: [Int]

    /// An empty tape; `capacity` entries are reserved up front.
    public init(capacity: Int = 64) {
        entries = []
        entries.reserveCapacity(capacity)
        stack = []
        stack.reserveCapacity(16)
    }

    /// Index of the top-level value.
    public var root: Int { 0 }

    /// Parses `bytes`, replacing the tape's contents. Returns `nil` on success, else the error.
    public mutating func parse(_ bytes: UnsafeRawBufferPointer) -> JSONError? {
        entries.removeAll(keepingCapacity: true)
        stack.removeAll(keepingCapacity: true)
        var core = JSONCore(bytes, sink: TapeSink(entries: entries, stack: stack))
        // Keep the storage uniquely referenced by the sink while it appends (no copy-on-write).
        entries = []
        stack = []
        let ok = core.parseDocument()
        entries = core.sink.entries
        stack = core.sink.stack
        if ok { return nil }
        entries.removeAll(keepingCapacity: true)
        return core.error(in: bytes)
    }

    /// Parses any contiguous bytes.
    public mutating func parse(_ bytes: [UInt8]) -> JSONError? {
        bytes.withUnsafeBytes { parse($0) }
    }

    /// The entry at `index`.
    @inlinable public subscript(index: Int) -> Entry { entries[index] }

    /// The indices of an array's elements, or of an object's values (use `members(of:)` for keys).
    public func children(of index: Int) -> [Int] {
        var out: [Int] = []
        forEachChild(of: index) { out.append($0) }
        return out
    }

    /// Calls `body` with the index of each array element, or each object *value*, without allocating.
    public func forEachChild(of index: Int, _ body: (Int) throws -> Void) rethrows {
        let e = entries[index]
        var i = index + 1
        if e.kind == .array {
            for _ in 0..<e.count { try body(i); i = entries[i].next }
        } else if e.kind == .object {
            for _ in 0..<e.count { try body(i + 1); i = entries[i + 1].next }
        }
    }

    /// Calls `body(keyIndex, valueIndex)` for each member of an object, without allocating.
    public func forEachMember(of index: Int, _ body: (Int, Int) throws -> Void) rethrows {
        let e = entries[index]
        guard e.kind == .object else { return }
        var i = index + 1
        for _ in 0..<e.count { try body(i, i + 1); i = entries[i + 1].next }
    }

    /// The `(key, value)` index pairs of an object, in document order.
    public func members(of index: Int) -> [(key: Int, value: Int)] {
        var out: [(key: Int, value: Int)] = []
        forEachMember(of: index) { out.append((key: $0, value: $1)) }
        return out
    }

    /// Index of the value of the last member named `key` in the object at `index` (JSON lets a key
    /// repeat; like FCM, the last one wins), or `nil`. Allocates nothing for unescaped keys.
    public func member(_ key: StaticString, of index: Int, in bytes: UnsafeRawBufferPointer) -> Int? {
        key.withUTF8Buffer { k in member(UnsafeRawBufferPointer(k), of: index, in: bytes) }
    }

    /// Same as `member(_:of:in:)` with the key as raw UTF-8 bytes.
    public func member(_ key: UnsafeRawBufferPointer, of index: Int, in bytes: UnsafeRawBufferPointer) -> Int? {
        var found: Int?
        forEachMember(of: index) { k, v in
            if stringEquals(at: k, key, in: bytes) { found = v }
        }
        return found
    }

    /// Whether the string at `index` equals `other` (UTF-8) after unescaping. Allocates nothing.
    public func stringEquals(at index: Int, _ other: UnsafeRawBufferPointer, in bytes: UnsafeRawBufferPointer) -> Bool {
        let e = entries[index]
        guard e.kind == .string else { return false }
        if !e.hasEscapes {
            guard e.end - e.start == other.count else { return false }
            return other.count == 0 || memcmp(bytes.baseAddress! + e.start, other.baseAddress!, other.count) == 0
        }
        var j = 0
        var ok = true
        JSONUnescape.forEachByte(bytes, e.start, e.end) { b in
            if j < other.count && other[j] == b { j += 1 } else { ok = false }
        }
        return ok && j == other.count
    }

    /// Whether the string at `index` equals `other`.
    public func stringEquals(at index: Int, _ other: StaticString, in bytes: UnsafeRawBufferPointer) -> Bool {
        other.withUTF8Buffer { stringEquals(at: index, UnsafeRawBufferPointer($0), in: bytes) }
    }

    /// The unescaped UTF-8 bytes of the string at `index`, appended to `out` (no allocation once `out` has room).
    public func appendStringBytes(at index: Int, in bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let e = entries[index]
        precondition(e.kind == .string, "entry \(index) is not a string")
        if !e.hasEscapes {
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[e.start..<e.end]))
        } else {
            JSONUnescape.forEachByte(bytes, e.start, e.end) { out.append($0) }
        }
    }

    /// The string at `index` as a Swift `String` (allocates), or `nil` when it is not a string.
    public func string(at index: Int, in bytes: UnsafeRawBufferPointer) -> String? {
        guard entries[index].kind == .string else { return nil }
        var out: [UInt8] = []
        appendStringBytes(at: index, in: bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The raw bytes of the value at `index` (for a string: between the quotes, still escaped).
    @inlinable public func rawBytes(at index: Int, in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let e = entries[index]
        return UnsafeRawBufferPointer(rebasing: bytes[e.start..<e.end])
    }

    /// The number at `index` as an `Int64` when it is an integer literal in range, else `nil`.
    public func int64(at index: Int, in bytes: UnsafeRawBufferPointer) -> Int64? {
        let e = entries[index]
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
        let e = entries[index]
        guard e.kind == .number else { return nil }
        return Double(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[e.start..<e.end]), as: UTF8.self))
    }

    /// `true`/`false` at `index`, or `nil` when it is not a boolean.
    @inlinable public func bool(at index: Int) -> Bool? {
        switch entries[index].kind {
        case .true: return true
        case .false: return false
        default: return nil
        }
    }
}

// MARK: - Core

protocol JSONSink {
    mutating func open(_ kind: JSONKind, at offset: Int)
    mutating func close(at offset: Int, count: Int)
    mutating func scalar(_ kind: JSONKind, start: Int, end: Int, isKey: Bool, hasEscapes: Bool)
}

struct NullSink: JSONSink {
    var first: JSONKind? = nil
    @inline(__always) mutating func open(_ kind: JSONKind, at offset: Int) { if first == nil { first = kind } }
    @inline(__always) mutating func close(at offset: Int, count: Int) {}
    @inline(__always) mutating func scalar(_ kind: JSONKind, start: Int, end: Int, isKey: Bool, hasEscapes: Bool) {
        if first == nil { first = kind }
    }
}

struct TapeSink: JSONSink {
    var entries: [JSONTape.Entry]
    // Open containers, as tape indices; owned by the tape so its storage is reused across parses.
    var stack: [Int]

    mutating func open(_ kind: JSONKind, at offset: Int) {
        stack.append(entries.count)
        entries.append(.init(kind: kind, isKey: false, hasEscapes: false, start: offset, end: offset, next: 0, count: 0))
    }

    mutating func close(at offset: Int, count: Int) {
        let i = stack.removeLast()
        entries[i].end = offset
        entries[i].next = entries.count
        entries[i].count = count
    }

    mutating func scalar(_ kind: JSONKind, start: Int, end: Int, isKey: Bool, hasEscapes: Bool) {
        entries.append(.init(kind: kind, isKey: isKey, hasEscapes: hasEscapes, start: start, end: end,
                             next: entries.count + 1, count: 0))
    }
}

struct JSONCore<Sink: JSONSink> {
    let p: UnsafePointer<UInt8>
    let n: Int
    var i = 0
    var sink: Sink
    var code: JSONError.Code = .emptyInput
    var at = 0

    init(_ bytes: UnsafeRawBufferPointer, sink: Sink) {
        // An empty buffer may have a nil base; point at a static byte so `p` is always valid.
        p = bytes.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? JSONCore.emptyByte
        n = bytes.count
        self.sink = sink
    }

    private static var emptyByte: UnsafePointer<UInt8> {
        UnsafePointer(bitPattern: 1)!  // never dereferenced: n == 0
    }

    func error(in bytes: UnsafeRawBufferPointer) -> JSONError {
        let (line, column) = JSON.position(of: at, in: bytes)
        return JSONError(code: code, offset: at, line: line, column: column)
    }

    @inline(__always) mutating func fail(_ c: JSONError.Code, _ offset: Int) -> Bool {
        code = c
        at = offset
        return false
    }

    @inline(__always) mutating func skipWhitespace() {
        while i < n {
            let c = p[i]
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { i += 1 } else { return }
        }
    }

    mutating func parseDocument() -> Bool {
        skipWhitespace()
        if i == n { return fail(.emptyInput, i) }
        guard parseValue(depth: 0) else { return false }
        skipWhitespace()
        if i != n { return fail(.trailingData, i) }
        return true
    }

    mutating func parseValue(depth: Int) -> Bool {
        guard i < n else { return fail(.unexpectedEnd, i) }
        switch p[i] {
        case UInt8(ascii: "{"): return parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return parseString(isKey: false)
        case UInt8(ascii: "t"): return parseLiteral("true", .true)
        case UInt8(ascii: "f"): return parseLiteral("false", .false)
        case UInt8(ascii: "n"): return parseLiteral("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return parseNumber()
        default: return fail(.expectedValue, i)
        }
    }

    mutating func parseLiteral(_ word: StaticString, _ kind: JSONKind) -> Bool {
        let len = word.utf8CodeUnitCount
        guard i + len <= n, memcmp(p + i, word.utf8Start, len) == 0 else { return fail(.invalidLiteral, i) }
        sink.scalar(kind, start: i, end: i + len, isKey: false, hasEscapes: false)
        i += len
        return true
    }

    mutating func parseObject(depth: Int) -> Bool {
        if depth > JSON.maxDepth { return fail(.tooDeep, i) }
        sink.open(.object, at: i)
        i += 1
        skipWhitespace()
        var count = 0
        if i < n && p[i] == UInt8(ascii: "}") {
            i += 1
            sink.close(at: i, count: 0)
            return true
        }
        while true {
            guard i < n else { return fail(.unexpectedEnd, i) }
            guard p[i] == UInt8(ascii: "\"") else { return fail(.expectedKey, i) }
            guard parseString(isKey: true) else { return false }
            skipWhitespace()
            guard i < n else { return fail(.unexpectedEnd, i) }
            guard p[i] == UInt8(ascii: ":") else { return fail(.expectedColon, i) }
            i += 1
            skipWhitespace()
            guard parseValue(depth: depth) else { return false }
            count += 1
            skipWhitespace()
            guard i < n else { return fail(.unexpectedEnd, i) }
            if p[i] == UInt8(ascii: ",") {
                i += 1
                skipWhitespace()
                continue
            }
            guard p[i] == UInt8(ascii: "}") else { return fail(.expectedCommaOrObjectEnd, i) }
            i += 1
            sink.close(at: i, count: count)
            return true
        }
    }

    mutating func parseArray(depth: Int) -> Bool {
        if depth > JSON.maxDepth { return fail(.tooDeep, i) }
        sink.open(.array, at: i)
        i += 1
        skipWhitespace()
        var count = 0
        if i < n && p[i] == UInt8(ascii: "]") {
            i += 1
            sink.close(at: i, count: 0)
            return true
        }
        while true {
            guard parseValue(depth: depth) else { return false }
            count += 1
            skipWhitespace()
            guard i < n else { return fail(.unexpectedEnd, i) }
            if p[i] == UInt8(ascii: ",") {
                i += 1
                skipWhitespace()
                continue
            }
            guard p[i] == UInt8(ascii: "]") else { return fail(.expectedCommaOrArrayEnd, i) }
            i += 1
            sink.close(at: i, count: count)
            return true
        }
    }

    @inline(__always) static func isDigit(_ c: UInt8) -> Bool { c &- 0x30 < 10 }

    mutating func parseNumber() -> Bool {
        let start = i
        if p[i] == UInt8(ascii: "-") { i += 1 }
        guard i < n, JSONCore.isDigit(p[i]) else { return fail(.invalidNumber, start) }
        if p[i] == UInt8(ascii: "0") {
            i += 1
            if i < n && JSONCore.isDigit(p[i]) { return fail(.invalidNumber, i) }  // leading zero
        } else {
            while i < n && JSONCore.isDigit(p[i]) { i += 1 }
        }
        if i < n && p[i] == UInt8(ascii: ".") {
            i += 1
            guard i < n, JSONCore.isDigit(p[i]) else { return fail(.invalidNumber, i) }
            while i < n && JSONCore.isDigit(p[i]) { i += 1 }
        }
        if i < n && (p[i] | 0x20) == UInt8(ascii: "e") {
            i += 1
            if i < n && (p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-")) { i += 1 }
            guard i < n, JSONCore.isDigit(p[i]) else { return fail(.invalidNumber, i) }
            while i < n && JSONCore.isDigit(p[i]) { i += 1 }
        }
        sink.scalar(.number, start: start, end: i, isKey: false, hasEscapes: false)
        return true
    }

    @inline(__always) static func isHex(_ c: UInt8) -> Bool {
        (c &- 0x30) < 10 || ((c | 0x20) &- 0x61) < 6
    }

    mutating func parseString(isKey: Bool) -> Bool {
        let open = i
        i += 1
        let start = i
        var escapes = false
        while true {
            // Fast path: plain printable ASCII, 8 bytes at a time, then byte by byte.
            while i + 8 <= n {
                let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                if w & 0x8080_8080_8080_8080 != 0 || JSONWriting.wordNeedsEscape(w) { break }
                i += 8
            }
            while i < n {
                let c = p[i]
                if c == 0x22 || c == 0x5C || c < 0x20 || c >= 0x80 { break }
                i += 1
            }
            guard i < n else { return fail(.unterminatedString, open) }
            let c = p[i]
            if c == 0x22 {
                sink.scalar(.string, start: start, end: i, isKey: isKey, hasEscapes: escapes)
                i += 1
                return true
            }
            if c == 0x5C {
                escapes = true
                guard i + 1 < n else { return fail(.unterminatedString, open) }
                switch p[i + 1] {
                case 0x22, 0x5C, 0x2F, UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                     UInt8(ascii: "r"), UInt8(ascii: "t"):
                    i += 2
                case UInt8(ascii: "u"):
                    guard i + 6 <= n, JSONCore.isHex(p[i + 2]), JSONCore.isHex(p[i + 3]),
                          JSONCore.isHex(p[i + 4]), JSONCore.isHex(p[i + 5])
                    else { return fail(.invalidUnicodeEscape, i) }
                    i += 6
                default:
                    return fail(.invalidEscape, i)
                }
                continue
            }
            if c < 0x20 { return fail(.controlCharacterInString, i) }
            guard validateUTF8Scalar() else { return false }
        }
    }

    /// Validates one multi-byte UTF-8 sequence at `i` (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF).
    @inline(__always) mutating func validateUTF8Scalar() -> Bool {
        let len = JSONBytes.utf8ScalarLength(p, at: i, count: n)
        guard len > 0 else { return fail(.invalidUTF8, i) }
        i += len
        return true
    }
}

// MARK: - Unescaping

enum JSONUnescape {
    @inline(__always) static func hexValue(_ c: UInt8) -> UInt32 {
        if c <= 0x39 { return UInt32(c - 0x30) }
        return UInt32((c | 0x20) - 0x61 + 10)
    }

    /// Calls `body` with each unescaped UTF-8 byte of an already validated string body
    /// `[start, end)`. A lone surrogate escape becomes U+FFFD, as Swift's String does.
    static func forEachByte(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ body: (UInt8) -> Void) {
        var i = start
        while i < end {
            let c = bytes[i]
            if c != 0x5C { body(c); i += 1; continue }
            let e = bytes[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): body(0x08)
            case UInt8(ascii: "f"): body(0x0C)
            case UInt8(ascii: "n"): body(0x0A)
            case UInt8(ascii: "r"): body(0x0D)
            case UInt8(ascii: "t"): body(0x09)
            case UInt8(ascii: "u"):
                var u = hex4(bytes, i)
                i += 4
                if u >= 0xD800 && u <= 0xDBFF, i + 6 <= end, bytes[i] == 0x5C, bytes[i + 1] == UInt8(ascii: "u") {
                    let lo = hex4(bytes, i + 2)
                    if lo >= 0xDC00 && lo <= 0xDFFF {
                        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
                        i += 6
                    }
                }
                if u >= 0xD800 && u <= 0xDFFF { u = 0xFFFD }
                for b in UTF8.encode(Unicode.Scalar(u)!)! { body(b) }
            default: body(e)  // " \ /
            }
        }
    }

    /// Whether the string body `[start, end)` holds a `\u` surrogate escape that is not part of a pair.
    static func hasLoneSurrogate(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> Bool {
        var i = start
        while i < end {
            guard bytes[i] == 0x5C else { i += 1; continue }
            guard bytes[i + 1] == UInt8(ascii: "u") else { i += 2; continue }
            let u = hex4(bytes, i + 2)
            i += 6
            if u >= 0xDC00 && u <= 0xDFFF { return true }
            if u >= 0xD800 && u <= 0xDBFF {
                guard i + 6 <= end, bytes[i] == 0x5C, bytes[i + 1] == UInt8(ascii: "u") else { return true }
                let lo = hex4(bytes, i + 2)
                guard lo >= 0xDC00 && lo <= 0xDFFF else { return true }
                i += 6
            }
        }
        return false
    }

    @inline(__always) static func hex4(_ bytes: UnsafeRawBufferPointer, _ i: Int) -> UInt32 {
        (hexValue(bytes[i]) << 12) | (hexValue(bytes[i + 1]) << 8) | (hexValue(bytes[i + 2]) << 4) | hexValue(bytes[i + 3])
    }
}
