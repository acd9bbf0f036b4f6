#if canImport(Glibc)
import Glibc
#endif
import CHTTPParser

/// The `Date` header value (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`) of the current second, one per
/// loop: rewritten when the second changes, so a response copies 29 bytes instead of formatting a date.
final class HTTPDateCache {
    private(set) var second: Int = -1
    private let text = UnsafeMutableRawBufferPointer.allocate(byteCount: 29, alignment: 1)

    deinit { text.deallocate() }

    /// The value for now (valid until the next call).
    @inline(__always) func current() -> UnsafeRawBufferPointer {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &ts)
        if ts.tv_sec != second { format(ts.tv_sec) }
        return UnsafeRawBufferPointer(text)
    }

    private func format(_ seconds: Int) {
        second = seconds
        var t = time_t(seconds)
        var tm = Glibc.tm()
        gmtime_r(&t, &tm)
        let days: StaticString = "SunMonTueWedThuFriSat"
        let months: StaticString = "JanFebMarAprMayJunJulAugSepOctNovDec"
        var i = 0
        func put(_ b: UInt8) { text[i] = b; i += 1 }
        func two(_ v: Int32) { put(UInt8(48 + v / 10)); put(UInt8(48 + v % 10)) }
        for k in 0..<3 { put(days.utf8Start[Int(tm.tm_wday) * 3 + k]) }
        put(UInt8(ascii: ",")); put(0x20)
        two(tm.tm_mday); put(0x20)
        for k in 0..<3 { put(months.utf8Start[Int(tm.tm_mon) * 3 + k]) }
        put(0x20)
        let year = tm.tm_year + 1900
        two(year / 100); two(year % 100); put(0x20)
        two(tm.tm_hour); put(UInt8(ascii: ":")); two(tm.tm_min); put(UInt8(ascii: ":")); two(tm.tm_sec)
        put(0x20); put(UInt8(ascii: "G")); put(UInt8(ascii: "M")); put(UInt8(ascii: "T"))
    }
}

/// Writing HTTP/1.1 text into a `ByteStore`: status lines, header fields, decimal numbers. Nothing allocates
/// once the store has grown to its working size.
enum HTTP1Wire {
    /// `HTTP/1.1 <status> <reason>\r\n`, the reason phrase from libhttp-parser's table.
    static func appendStatusLine(_ out: inout ByteStore, _ status: Int) {
        append(&out, "HTTP/1.1 ")
        var digits: (UInt8, UInt8, UInt8) = (UInt8(48 + status / 100 % 10), UInt8(48 + status / 10 % 10), UInt8(48 + status % 10))
        withUnsafeBytes(of: &digits) { _ = out.append($0.baseAddress, 3) }
        out.appendByte(0x20)
        let reason = http_status_str(http_status(UInt32(status)))!
        out.append(reason, strlen(reason))
        append(&out, "\r\n")
    }

    @inline(__always) static func append(_ out: inout ByteStore, _ s: StaticString) {
        out.append(s.utf8Start, s.utf8CodeUnitCount)
    }

    /// `name: value\r\n`.
    @inline(__always) static func appendField(_ out: inout ByteStore, _ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        out.reserve(name.count + value.count + 4)
        out.append(name.baseAddress, name.count)
        out.appendByte(0x3A)
        out.appendByte(0x20)
        out.append(value.baseAddress, value.count)
        out.appendByte(0x0D)
        out.appendByte(0x0A)
    }

    /// The decimal digits of `v`.
    @inline(__always) static func appendDecimal(_ out: inout ByteStore, _ v: Int) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { d in
            var x = UInt64(max(v, 0))
            var n = 0
            repeat { d[23 - n] = UInt8(48 + x % 10); x /= 10; n += 1 } while x > 0
            _ = out.append(d.baseAddress! + 24 - n, n)
        }
    }
}

/// The libhttp-parser instance of one connection, in manually allocated memory (C keeps a pointer to it).
struct HTTP1Parser {
    let parser: UnsafeMutablePointer<http_parser>

    init(type: http_parser_type, owner: UnsafeMutableRawPointer) {
        parser = .allocate(capacity: 1)
        http_parser_init(parser, type)
        pb_hp_set_data(parser, owner)
    }

    func free() { parser.deallocate() }

    /// Back to the start of a message (a new connection's state).
    func reset(type: http_parser_type) {
        let data = pb_hp_data(parser)
        http_parser_init(parser, type)
        pb_hp_set_data(parser, data)
    }

    var errno: UInt32 { UInt32(pb_hp_errno(parser)) }
    var isPaused: Bool { errno == HPE_PAUSED.rawValue }
}

extension ByteStore {
    /// Appends one byte.
    @inline(__always) mutating func appendByte(_ b: UInt8) {
        reserve(1)
        base.storeBytes(of: b, toByteOffset: count, as: UInt8.self)
        count += 1
    }
}

/// The header fields of one HTTP/1.1 message as libhttp-parser hands them over (a name or value may come
/// in several pieces across reads): names lower-cased as HTTP/2 spells them, both copied into `store`,
/// located by `refs`. Kept by a connection and reset per message; no allocation once grown.
struct HTTP1HeaderCollector {
    var store = ByteStore(capacity: 1024)
    var refs = HeaderRefList(capacity: 16)
    private var lastWasValue = false

    func free() {
        store.free()
        refs.free()
    }

    mutating func reset() {
        store.count = 0
        refs.count = 0
        lastWasValue = false
    }

    /// A piece of a field name.
    mutating func name(_ at: UnsafePointer<CChar>, _ n: Int) {
        let off = store.count
        store.append(at, n)
        let p = store.base + off
        var i = 0
        while i < n {
            let c = p.load(fromByteOffset: i, as: UInt8.self)
            if c &- 0x41 < 26 { p.storeBytes(of: c | 0x20, toByteOffset: i, as: UInt8.self) }
            i += 1
        }
        if lastWasValue || refs.count == 0 {
            refs.append(HeaderRef(nameOffset: Int32(off), nameLength: Int32(n), valueOffset: Int32(store.count), valueLength: 0))
            lastWasValue = false
        } else {
            // The name went on from the previous read: the bytes are contiguous in the store.
            refs.base[refs.count - 1].nameLength += Int32(n)
        }
    }

    /// A piece of a field value.
    mutating func value(_ at: UnsafePointer<CChar>, _ n: Int) {
        guard refs.count > 0 else { return }
        let off = store.count
        store.append(at, n)
        if !lastWasValue {
            refs.base[refs.count - 1].valueOffset = Int32(off)
            refs.base[refs.count - 1].valueLength = Int32(n)
            lastWasValue = true
        } else {
            refs.base[refs.count - 1].valueLength += Int32(n)
        }
    }

    /// The fields as a list (valid until the next change).
    var list: HTTP2HeaderList { HTTP2HeaderList(store: UnsafeRawPointer(store.base), refs: refs.buffer) }
}

extension HTTP1Wire {
    /// An HTTP/2-only server's answer to an HTTP/1.1 request: its SETTINGS frame, then
    /// GOAWAY(PROTOCOL_ERROR, last stream 0, `debugData`).
    static func appendHTTP2Refusal(_ o: inout ByteStore, settings: [(id: UInt16, value: UInt32)],
                                   debugData: UnsafeRawBufferPointer) {
        func frameHeader(_ o: inout ByteStore, length: Int, type: UInt8) {
            o.appendByte(UInt8(truncatingIfNeeded: length >> 16))
            o.appendByte(UInt8(truncatingIfNeeded: length >> 8))
            o.appendByte(UInt8(truncatingIfNeeded: length))
            o.appendByte(type)
            o.appendByte(0)
            for _ in 0..<4 { o.appendByte(0) }
        }
        func u32(_ o: inout ByteStore, _ v: UInt32) {
            for shift in stride(from: 24, through: 0, by: -8) { o.appendByte(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
        }
        frameHeader(&o, length: settings.count * 6, type: 0x4)
        for s in settings {
            o.appendByte(UInt8(s.id >> 8))
            o.appendByte(UInt8(truncatingIfNeeded: s.id))
            u32(&o, s.value)
        }
        frameHeader(&o, length: 8 + debugData.count, type: 0x7)
        u32(&o, 0)
        u32(&o, 0x1)  // PROTOCOL_ERROR
        o.append(debugData.baseAddress, debugData.count)
    }
}

/// Whether `bytes` equal the lower-case ASCII `literal`, ignoring the case of `bytes`.
@inline(__always)
func asciiLowercaseEquals(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
    guard bytes.count == literal.utf8CodeUnitCount else { return false }
    let p = literal.utf8Start
    var i = 0
    while i < bytes.count {
        let c = bytes[i]
        if (c &- 0x41 < 26 ? c | 0x20 : c) != p[i] { return false }
        i += 1
    }
    return true
}
