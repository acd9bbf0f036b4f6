/// Follows a client's frames as they arrive, so that DATA or HEADERS on a stream the client already
/// ended (END_STREAM) or reset (RST_STREAM) is answered STREAM_CLOSED (RFC 9113 §5.1) although nghttp2
/// keeps no record of closed streams.
///
/// nghttp2's own records cost a server about a tenth of its time per request (a stream object per
/// closed stream, up to SETTINGS_MAX_CONCURRENT_STREAMS of them, in its stream map), and without them
/// it drops such a frame silently. This reads only the 9-byte frame headers of the input, in order,
/// before nghttp2 sees it, and keeps one bit per client stream id over the last 1,024 (128 bytes a
/// connection). A frame on an older stream, on an id the client skipped, or on a stream the server
/// reset before the client ended it is left to nghttp2, which discards it quietly.
///
/// Plain Swift: the server connection hands it each read (``scan(_:)``) and cuts the input at the
/// offending frame.
struct PeerClosedStreams {
    /// Stream ids covered below the highest one opened (1,024 odd, client-initiated ids).
    static let window: Int32 = 2048
    private var bits: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                       UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    /// The highest stream id a HEADERS frame has opened.
    private(set) var highest: Int32 = 0
    /// Bytes of the client connection preface still to pass.
    private var prefaceLeft: Int
    /// Payload bytes of the current frame still to pass.
    private var payloadLeft = 0
    /// A frame header split across reads: its bytes so far.
    private var header: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0)
    private var headerHave = 0

    static let data: UInt8 = 0x0, headers: UInt8 = 0x1, rstStream: UInt8 = 0x3
    static let endStream: UInt8 = 0x1

    /// Starts before the 24-byte client preface (`expectingPreface`), or at a frame boundary.
    init(expectingPreface: Bool = true) {
        prefaceLeft = expectingPreface ? 24 : 0
    }

    /// Reads the frame headers in `bytes`, the next input from the client. Returns the offset of the
    /// first frame that is DATA or HEADERS on a stream the client closed its side of (0 when that frame's
    /// header began in an earlier read), or nil.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var i = 0
        let n = bytes.count
        if prefaceLeft > 0 {
            let k = min(prefaceLeft, n)
            prefaceLeft -= k
            i = k
        }
        while i < n {
            if payloadLeft > 0 {
                let k = min(payloadLeft, n - i)
                payloadLeft -= k
                i += k
                continue
            }
            let start = i - headerHave
            if headerHave == 0 && n - i >= 9 {
                let p = bytes.baseAddress! + i
                if frame(p.load(as: UInt8.self), p.load(fromByteOffset: 1, as: UInt8.self), p.load(fromByteOffset: 2, as: UInt8.self),
                         type: p.load(fromByteOffset: 3, as: UInt8.self), flags: p.load(fromByteOffset: 4, as: UInt8.self),
                         p.load(fromByteOffset: 5, as: UInt8.self), p.load(fromByteOffset: 6, as: UInt8.self),
                         p.load(fromByteOffset: 7, as: UInt8.self), p.load(fromByteOffset: 8, as: UInt8.self)) {
                    return start
                }
                i += 9
                continue
            }
            // A header split across reads: gather its bytes.
            withUnsafeMutableBytes(of: &header) { h in
                while headerHave < 9 && i < n {
                    h[headerHave] = bytes[i]
                    headerHave += 1
                    i += 1
                }
            }
            if headerHave < 9 { return nil }
            headerHave = 0
            let h = header
            if frame(h.0, h.1, h.2, type: h.3, flags: h.4, h.5, h.6, h.7, h.8) { return Swift.max(0, start) }
        }
        return nil
    }

    /// One frame header: its length bytes, type, flags and stream id bytes. True when it offends.
    @inline(__always)
    private mutating func frame(_ l0: UInt8, _ l1: UInt8, _ l2: UInt8, type: UInt8, flags: UInt8,
                                _ s0: UInt8, _ s1: UInt8, _ s2: UInt8, _ s3: UInt8) -> Bool {
        payloadLeft = Int(l0) << 16 | Int(l1) << 8 | Int(l2)
        let id = Int32(bitPattern: UInt32(s0 & 0x7F) << 24 | UInt32(s1) << 16 | UInt32(s2) << 8 | UInt32(s3))
        guard id & 1 == 1 else { return false }
        switch type {
        case Self.data, Self.headers:
            if id > highest {
                if type == Self.headers { open(id) } else { return false }
            } else if highest &- id < Self.window && test(id) {
                return true
            }
            if flags & Self.endStream != 0 { mark(id) }
        case Self.rstStream:
            mark(id)
        default:
            break
        }
        return false
    }

    private mutating func mark(_ id: Int32) {
        guard id <= highest, highest &- id < Self.window else { return }
        update(id) { $0 | $1 }
    }

    /// Opens `id`: its bit and those of the ids skipped on the way (closed without ever being used, RFC
    /// 9113 §5.1.1) start clear, since they held an id 2,048 lower.
    private mutating func open(_ id: Int32) {
        if id &- highest >= Self.window {
            bits = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        } else {
            var k = highest == 0 ? 1 : highest &+ 2
            while k <= id {
                update(k) { w, m in w & ~m }
                k &+= 2
            }
        }
        highest = id
    }

    @inline(__always) private func test(_ id: Int32) -> Bool {
        let i = Int(id >> 1) & 1023
        return withUnsafeBytes(of: bits) { $0.load(fromByteOffset: (i >> 6) * 8, as: UInt64.self) } & (1 << UInt64(i & 63)) != 0
    }

    @inline(__always) private mutating func update(_ id: Int32, _ f: (UInt64, UInt64) -> UInt64) {
        let i = Int(id >> 1) & 1023
        withUnsafeMutableBytes(of: &bits) { raw in
            let w = raw.load(fromByteOffset: (i >> 6) * 8, as: UInt64.self)
            raw.storeBytes(of: f(w, 1 << UInt64(i & 63)), toByteOffset: (i >> 6) * 8, as: UInt64.self)
        }
    }
}
