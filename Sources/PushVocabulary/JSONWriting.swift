// Byte-level writers shared by the `copy` and `zerocopy` encoders, the template compiler, the gateway's
// FCM bodies and summary.json. The escaping is exactly Foundation's JSONEncoder with
// `.withoutEscapingSlashes` (checked by tests), which is what makes the three encoder variants
// byte-identical.

/// Escaping and number formatting straight into memory, with no allocation. Inlinable: the encoders
/// and the gateway call these per request from other modules.
public enum JSONWriting {
    // Bytes < 0x20, '"' and '\\' need escaping; everything else (including '/', DEL, U+2028) is raw.
    @inlinable @inline(__always) static func needsEscape(_ c: UInt8) -> Bool { c < 0x20 || c == 0x22 || c == 0x5C }

    @inlinable @inline(__always) static func escapedWidth(_ c: UInt8) -> Int {
        if !needsEscape(c) { return 1 }
        switch c {
        case 0x22, 0x5C, 0x08, 0x09, 0x0A, 0x0C, 0x0D: return 2
        default: return 6
        }
    }

    /// Bytes `src` (UTF-8) takes once escaped as the body of a JSON string (without quotes).
    @inlinable @inline(__always)
    public static func escapedLength(_ src: UnsafeRawBufferPointer) -> Int {
        guard let p = src.baseAddress else { return 0 }
        let count = src.count
        var n = 0
        var i = 0
        while i + 8 <= count {
            if JSONBytes.wordNeedsEscape(p.loadUnaligned(fromByteOffset: i, as: UInt64.self)) {
                for k in i..<(i + 8) { n &+= escapedWidth(p.load(fromByteOffset: k, as: UInt8.self)) }
            } else {
                n &+= 8
            }
            i += 8
        }
        while i < count {
            n &+= escapedWidth(p.load(fromByteOffset: i, as: UInt8.self))
            i += 1
        }
        return n
    }

    /// Writes `src` escaped (no quotes) at `dst`; returns the bytes written (`escapedLength(src)`).
    @inlinable @inline(__always)
    public static func writeEscaped(_ src: UnsafeRawBufferPointer, to dst: UnsafeMutableRawPointer) -> Int {
        guard let s = src.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return 0 }
        let d = dst.assumingMemoryBound(to: UInt8.self)
        let raw = UnsafeRawPointer(s)
        let n = src.count
        var i = 0, o = 0
        while i < n {
            // Find the longest clean run (8 bytes at a time), copy it with one memcpy.
            var j = i
            while j + 8 <= n && !JSONBytes.wordNeedsEscape(raw.loadUnaligned(fromByteOffset: j, as: UInt64.self)) { j += 8 }
            while j < n && !needsEscape(s[j]) { j += 1 }
            if j > i {
                (d + o).update(from: s + i, count: j - i)
                o += j - i
                i = j
                if i == n { break }
            }
            let c = s[i]
            d[o] = 0x5C
            switch c {
            case 0x22: d[o + 1] = 0x22; o += 2
            case 0x5C: d[o + 1] = 0x5C; o += 2
            case 0x08: d[o + 1] = UInt8(ascii: "b"); o += 2
            case 0x09: d[o + 1] = UInt8(ascii: "t"); o += 2
            case 0x0A: d[o + 1] = UInt8(ascii: "n"); o += 2
            case 0x0C: d[o + 1] = UInt8(ascii: "f"); o += 2
            case 0x0D: d[o + 1] = UInt8(ascii: "r"); o += 2
            default:
                d[o + 1] = UInt8(ascii: "u"); d[o + 2] = 0x30; d[o + 3] = 0x30
                d[o + 4] = hexDigit(c >> 4); d[o + 5] = hexDigit(c & 0xF)
                o += 6
            }
            i += 1
        }
        return o
    }

    /// Appends `src` escaped (no quotes) to `out`.
    public static func appendEscaped(_ src: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let len = escapedLength(src)
        let old = out.count
        out.append(contentsOf: repeatElement(0, count: len))
        out.withUnsafeMutableBytes { b in _ = writeEscaped(src, to: b.baseAddress! + old) }
    }

    @inlinable @inline(__always) static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x61 + v - 10 }

    /// Decimal digits of `v`.
    @inlinable @inline(__always) public static func decimalLength(_ v: UInt64) -> Int {
        var n = 1
        var x = v
        while x >= 10 { x /= 10; n += 1 }
        return n
    }

    /// Bytes of `v` in decimal, with a `-` when negative.
    @inlinable @inline(__always) public static func decimalLength(_ v: Int64) -> Int {
        v < 0 ? 1 + decimalLength(v.magnitude) : decimalLength(UInt64(v))
    }

    /// Writes `v` in decimal at `dst`; returns the bytes written.
    @inlinable @inline(__always) public static func writeDecimal(_ v: UInt64, to dst: UnsafeMutableRawPointer) -> Int {
        let len = decimalLength(v)
        let d = dst.assumingMemoryBound(to: UInt8.self)
        var x = v
        var k = len - 1
        while k >= 0 {
            d[k] = UInt8(truncatingIfNeeded: x % 10) &+ 0x30
            x /= 10
            k -= 1
        }
        return len
    }

    /// Writes `v` in decimal (with `-` when negative) at `dst`; returns the bytes written.
    @inlinable @inline(__always) public static func writeDecimal(_ v: Int64, to dst: UnsafeMutableRawPointer) -> Int {
        if v >= 0 { return writeDecimal(UInt64(v), to: dst) }
        dst.storeBytes(of: UInt8(ascii: "-"), as: UInt8.self)
        return 1 + writeDecimal(v.magnitude, to: dst + 1)
    }
}
