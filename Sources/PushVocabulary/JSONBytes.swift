/// Byte-level rules of JSON text shared by the parser, the writer and the gateway's inline texts, so
/// they agree on what needs escaping and what is valid UTF-8. Inlinable: they run per byte or per word
/// on hot paths in other modules.
public enum JSONBytes {
    /// Whether any of the 8 bytes of `x` needs escaping in a JSON string (SWAR: a byte below 0x20, or
    /// equal to '"' or '\\'). Exact as a yes/no for the word; the caller then looks at single bytes.
    @inlinable @inline(__always)
    public static func wordNeedsEscape(_ x: UInt64) -> Bool { escapeLanes(x) != 0 }

    /// The bytes of `x` (little-endian order) that end a plain run in a JSON string: below 0x20, '"',
    /// '\' or non-ASCII, each flagged by its high bit. A flag above a flagged byte may be spurious
    /// (a borrow), but the lowest flagged byte is always exact, which is all a scanner needs.
    @inlinable @inline(__always)
    static func specialBytes(_ x: UInt64) -> UInt64 {
        escapeLanes(x) | (x & 0x8080_8080_8080_8080)
    }

    /// The bytes of `x` below 0x20, equal to '"' or to '\', each flagged by its high bit (SWAR: a borrow
    /// may flag a byte above a flagged one, never below the lowest).
    @inlinable @inline(__always)
    static func escapeLanes(_ x: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let below20 = (x &- ones &* 0x20) & ~x
        let q = x ^ (ones &* 0x22)
        let quote = (q &- ones) & ~q
        let b = x ^ (ones &* 0x5C)
        let backslash = (b &- ones) & ~b
        return (below20 | quote | backslash) & 0x8080_8080_8080_8080
    }

    /// Length (2-4) of the well-formed multi-byte UTF-8 sequence starting at `p[i]`, or 0 when it is
    /// not one (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF, no truncation before `n`).
    @inlinable @inline(__always)
    static func utf8ScalarLength(_ p: UnsafePointer<UInt8>, at i: Int, count n: Int) -> Int {
        let c = p[i]
        var len = 0
        switch c {
        case 0xC2...0xDF: len = 2
        case 0xE0: if i + 1 < n && p[i + 1] >= 0xA0 && p[i + 1] <= 0xBF { len = 3 }
        case 0xE1...0xEC, 0xEE...0xEF: len = 3
        case 0xED: if i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9F { len = 3 }
        case 0xF0: if i + 1 < n && p[i + 1] >= 0x90 && p[i + 1] <= 0xBF { len = 4 }
        case 0xF1...0xF3: len = 4
        case 0xF4: if i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x8F { len = 4 }
        default: return 0
        }
        if len == 0 { return 0 }
        var k = 1
        while k < len {
            guard i + k < n, p[i + k] & 0xC0 == 0x80 else { return 0 }
            k += 1
        }
        return len
    }
}
