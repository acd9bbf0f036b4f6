// A strict RFC 8259 JSON parser over raw bytes, with no Foundation. Two entry points share one
// generic core: `JSON.validate` / `JSON.topLevelKind` (allocate nothing: the mock gateway calls one per
// request) and `JSONTape.parse` (records a flat tape of byte ranges into a reused buffer: the FCM
// route, the template compiler and the results reader walk it).

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
    init(code: Code, offset: Int, line: Int, column: Int) {
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
    static let maxDepth = 512

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

// MARK: - Core

/// What the core reports as it reads. `open` returns a token that the matching `close` gets back, so
/// a sink needs no stack of its own.
protocol JSONSink {
    mutating func open(_ kind: JSONKind, at offset: Int) -> Int
    mutating func close(_ token: Int, at offset: Int, count: Int)
    mutating func scalar(_ kind: JSONKind, start: Int, end: Int, isKey: Bool, hasEscapes: Bool)
}

/// Keeps only the kind of the top-level value.
struct NullSink: JSONSink {
    var first: JSONKind? = nil
    @inline(__always) mutating func open(_ kind: JSONKind, at offset: Int) -> Int {
        if first == nil { first = kind }
        return 0
    }
    @inline(__always) mutating func close(_ token: Int, at offset: Int, count: Int) {}
    @inline(__always) mutating func scalar(_ kind: JSONKind, start: Int, end: Int, isKey: Bool, hasEscapes: Bool) {
        if first == nil { first = kind }
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
        // Compact JSON has no whitespace between tokens: one compare settles the common case.
        while i < n {
            let c = p[i]
            if c > 0x20 { return }
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
        case UInt8(ascii: "{"): return parseContainer(.object, depth: depth + 1)
        case UInt8(ascii: "["): return parseContainer(.array, depth: depth + 1)
        case UInt8(ascii: "\""): return parseString(isKey: false)
        case UInt8(ascii: "t"): return parseLiteral(0x65_75_72_74, .true)  // "true"
        case UInt8(ascii: "f"): return parseFalse()
        case UInt8(ascii: "n"): return parseLiteral(0x6C_6C_75_6E, .null)  // "null"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return parseNumber()
        default: return fail(.expectedValue, i)
        }
    }

    /// `true` or `null` (`word` is its 4 bytes as a little-endian UInt32), or `false`.
    @inline(__always) mutating func parseLiteral(_ word: UInt32, _ kind: JSONKind) -> Bool {
        guard i + 4 <= n, load32(i) == word else { return fail(.invalidLiteral, i) }
        sink.scalar(kind, start: i, end: i + 4, isKey: false, hasEscapes: false)
        i += 4
        return true
    }

    @inline(__always) mutating func parseFalse() -> Bool {
        guard i + 5 <= n, load32(i + 1) == 0x65_73_6C_61 else { return fail(.invalidLiteral, i) }  // "alse"
        sink.scalar(.false, start: i, end: i + 5, isKey: false, hasEscapes: false)
        i += 5
        return true
    }

    @inline(__always) func load32(_ at: Int) -> UInt32 {
        UInt32(littleEndian: UnsafeRawPointer(p + at).loadUnaligned(as: UInt32.self))
    }

    /// An object or an array: its members or elements, then the closing bracket.
    mutating func parseContainer(_ kind: JSONKind, depth: Int) -> Bool {
        if depth > JSON.maxDepth { return fail(.tooDeep, i) }
        let isObject = kind == .object
        let closer = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        let token = sink.open(kind, at: i)
        i += 1
        skipWhitespace()
        var count = 0
        if i < n && p[i] == closer {
            i += 1
            sink.close(token, at: i, count: 0)
            return true
        }
        while true {
            if isObject {
                guard i < n else { return fail(.unexpectedEnd, i) }
                guard p[i] == UInt8(ascii: "\"") else { return fail(.expectedKey, i) }
                guard parseString(isKey: true) else { return false }
                skipWhitespace()
                guard i < n else { return fail(.unexpectedEnd, i) }
                guard p[i] == UInt8(ascii: ":") else { return fail(.expectedColon, i) }
                i += 1
                skipWhitespace()
            }
            guard parseValue(depth: depth) else { return false }
            count += 1
            skipWhitespace()
            guard i < n else { return fail(.unexpectedEnd, i) }
            if p[i] == UInt8(ascii: ",") {
                i += 1
                skipWhitespace()
                continue
            }
            guard p[i] == closer else { return fail(isObject ? .expectedCommaOrObjectEnd : .expectedCommaOrArrayEnd, i) }
            i += 1
            sink.close(token, at: i, count: count)
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
            // Plain printable ASCII, 8 bytes at a time: the lowest flagged byte of a word is exact, so
            // the scan jumps straight to it instead of walking the word again byte by byte.
            while i + 8 <= n {
                let mask = JSONBytes.specialBytes(UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self))
                if mask == 0 { i += 8; continue }
                i += mask.trailingZeroBitCount >> 3
                break
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

/// Reads the escapes of a string the parser has accepted (a tape entry's `start..<end`, or part of it
/// that begins and ends between escapes).
public enum JSONUnescape {
    @inline(__always) static func hexValue(_ c: UInt8) -> UInt32 {
        if c <= 0x39 { return UInt32(c - 0x30) }
        return UInt32((c | 0x20) - 0x61 + 10)
    }

    /// Calls `body` with each unescaped UTF-8 byte of an already validated string body
    /// `[start, end)`. A lone surrogate escape becomes U+FFFD, as Swift's String does.
    public static func forEachByte(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ body: (UInt8) -> Void) {
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
    public static func hasLoneSurrogate(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> Bool {
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
