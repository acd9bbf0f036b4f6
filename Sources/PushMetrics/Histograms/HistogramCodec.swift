import CZlib
import Foundation

/// A histogram blob that could not be decoded, with the reason.
struct HistogramCodecError: Error, CustomStringConvertible {
    /// What was wrong with the blob.
    public let description: String
}

/// HdrHistogram's V2 compressed encoding (the `HISTFAAA…` blobs of .hlog files).
///
/// Layout (big-endian): `int32 0x1c849314 | int32 compressedLength | zlib(inner)`, where inner is
/// `int32 0x1c849313 | int32 payloadLength | int32 normalizingIndexOffset (0) | int32 significantDigits |
/// int64 lowestDiscernibleValue | int64 highestTrackableValue | float64 conversionRatio (1.0) |
/// ZigZag LEB128 counts` and a negative count −N means N consecutive empty buckets.
enum HistogramCodec {
    static let encodingCookie: UInt32 = 0x1c84_9303 | 0x10
    static let compressionCookie: UInt32 = 0x1c84_9304 | 0x10
    static let headerSize = 40
    /// Refuse blobs that would describe absurdly large histograms (bad input, not a crash).
    static let maxInflatedBytes = 64 << 20

    /// The compressed binary encoding (no base64).
    static func encodeCompressed(_ h: HdrHistogram) -> [UInt8] {
        var inner = [UInt8]()
        inner.reserveCapacity(headerSize + 256)
        appendBE(&inner, encodingCookie)
        appendBE(&inner, UInt32(0)) // payload length, patched below
        appendBE(&inner, UInt32(0))
        appendBE(&inner, UInt32(h.significantDigits))
        appendBE(&inner, UInt64(h.lowestDiscernibleValue))
        appendBE(&inner, UInt64(h.highestTrackableValue))
        appendBE(&inner, (1.0 as Double).bitPattern)

        let limit = h.totalCount == 0 ? 0 : h.countsIndex(for: h.maxRecorded) + 1
        var i = 0
        while i < limit {
            let c = h.counts[i]
            i += 1
            if c == 0 {
                var zeros: Int64 = 1
                while i < limit && h.counts[i] == 0 { zeros += 1; i += 1 }
                putZigZag(&inner, zeros > 1 ? -zeros : 0)
            } else {
                putZigZag(&inner, c)
            }
        }
        let payloadLength = UInt32(inner.count - headerSize)
        for k in 0..<4 { inner[4 + k] = UInt8(truncatingIfNeeded: payloadLength >> (24 - 8 * UInt32(k))) }

        var bound = compressBound(uLong(inner.count))
        var deflated = [UInt8](repeating: 0, count: Int(bound))
        let rc = deflated.withUnsafeMutableBufferPointer { out in
            inner.withUnsafeBufferPointer { src in
                compress2(out.baseAddress, &bound, src.baseAddress, uLong(src.count), Z_BEST_COMPRESSION)
            }
        }
        precondition(rc == Z_OK, "zlib compress2 failed: \(rc)")
        deflated.removeSubrange(Int(bound)...)

        var out = [UInt8]()
        out.reserveCapacity(8 + deflated.count)
        appendBE(&out, compressionCookie)
        appendBE(&out, UInt32(deflated.count))
        out += deflated
        return out
    }

    /// The base64 text of the compressed encoding, as written in .hlog interval lines.
    static func encodeBase64(_ h: HdrHistogram) -> String {
        Data(encodeCompressed(h)).base64EncodedString()
    }

    /// Decodes a base64 `HISTFAAA…` blob.
    public static func decode(base64 text: String) throws -> HdrHistogram {
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespaces)) else {
            throw HistogramCodecError(description: "not valid base64")
        }
        return try decode(compressed: [UInt8](data))
    }

    /// Decodes the compressed binary encoding.
    public static func decode(compressed bytes: [UInt8]) throws -> HdrHistogram {
        guard bytes.count >= 8 else { throw HistogramCodecError(description: "blob shorter than its 8-byte header") }
        let cookie = readBE32(bytes, 0)
        guard cookie & ~0xf0 == 0x1c84_9304 else {
            throw HistogramCodecError(description: String(format: "bad compression cookie 0x%08x (want 0x1c849314)", cookie))
        }
        let length = Int(readBE32(bytes, 4))
        guard length == bytes.count - 8 else {
            throw HistogramCodecError(description: "compressed length field says \(length) bytes, blob has \(bytes.count - 8)")
        }
        let inner = try inflate(Array(bytes[8...]))
        return try decode(uncompressed: inner)
    }

    static func decode(uncompressed inner: [UInt8]) throws -> HdrHistogram {
        guard inner.count >= headerSize else { throw HistogramCodecError(description: "inflated payload shorter than its 40-byte header") }
        let cookie = readBE32(inner, 0)
        guard cookie & ~0xf0 == 0x1c84_9303 else {
            throw HistogramCodecError(description: String(format: "bad encoding cookie 0x%08x (want 0x1c849313, V2)", cookie))
        }
        let payloadLength = Int(readBE32(inner, 4))
        guard payloadLength <= inner.count - headerSize else {
            throw HistogramCodecError(description: "payload length \(payloadLength) exceeds the \(inner.count - headerSize) bytes present")
        }
        let normalizingOffset = readBE32(inner, 8)
        guard normalizingOffset == 0 else {
            throw HistogramCodecError(description: "normalizingIndexOffset \(normalizingOffset) is not supported (only 0)")
        }
        let digits = Int(readBE32(inner, 12))
        let lowest = Int64(bitPattern: readBE64(inner, 16))
        let highest = Int64(bitPattern: readBE64(inner, 24))
        let h: HdrHistogram
        do {
            h = try HdrHistogram(lowestDiscernibleValue: lowest, highestTrackableValue: highest, significantDigits: digits)
        } catch let e as HdrHistogram.LayoutError {
            throw HistogramCodecError(description: "header: \(e.description)")
        }
        var pos = headerSize
        let end = headerSize + payloadLength
        var index = 0
        var minIndex = -1, maxIndex = -1
        var total: Int64 = 0
        while pos < end {
            let v = try getZigZag(inner, &pos, end)
            if v < 0 {
                guard v != Int64.min, index + Int(-v) <= h.countsLength else {
                    throw HistogramCodecError(description: "zero run of \(-v) overruns the \(h.countsLength) buckets")
                }
                index += Int(-v)
            } else {
                guard index < h.countsLength else {
                    throw HistogramCodecError(description: "more counts than the \(h.countsLength) buckets of the declared layout")
                }
                if v > 0 {
                    h.counts[index] = v
                    total &+= v
                    if minIndex < 0 && index > 0 { minIndex = index }
                    maxIndex = index
                }
                index += 1
            }
        }
        h.setDecodedTotals(total: total, minNonZeroIndex: minIndex, maxIndex: maxIndex)
        return h
    }

    // MARK: Pieces

    static func inflate(_ src: [UInt8]) throws -> [UInt8] {
        var capacity = Swift.max(4096, src.count * 8)
        while true {
            var out = [UInt8](repeating: 0, count: capacity)
            var outLength = uLong(capacity)
            let rc = out.withUnsafeMutableBufferPointer { o in
                src.withUnsafeBufferPointer { s in
                    uncompress(o.baseAddress, &outLength, s.baseAddress, uLong(s.count))
                }
            }
            if rc == Z_OK {
                out.removeSubrange(Int(outLength)...)
                return out
            }
            if rc == Z_BUF_ERROR && capacity < maxInflatedBytes {
                capacity *= 4
                continue
            }
            throw HistogramCodecError(description: rc == Z_DATA_ERROR ? "zlib data is corrupt" : "zlib inflate failed (code \(rc))")
        }
    }

    static func putZigZag(_ out: inout [UInt8], _ value: Int64) {
        var v = UInt64(bitPattern: (value << 1) ^ (value >> 63))
        // At most 9 bytes: eight 7-bit groups, then the last 8 bits whole.
        for _ in 0..<8 {
            if v >> 7 == 0 {
                out.append(UInt8(v))
                return
            }
            out.append(UInt8(v & 0x7f) | 0x80)
            v >>= 7
        }
        out.append(UInt8(truncatingIfNeeded: v))
    }

    static func getZigZag(_ b: [UInt8], _ pos: inout Int, _ end: Int) throws -> Int64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        for byteIndex in 0..<9 {
            guard pos < end else { throw HistogramCodecError(description: "counts end in the middle of a varint") }
            let byte = b[pos]
            pos += 1
            if byteIndex == 8 {
                result |= UInt64(byte) << 56
                break
            }
            result |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        return Int64(bitPattern: (result >> 1) ^ (0 &- (result & 1)))
    }

    static func appendBE(_ out: inout [UInt8], _ v: UInt32) {
        for s in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt32(s))) }
    }

    static func appendBE(_ out: inout [UInt8], _ v: UInt64) {
        for s in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(s))) }
    }

    static func readBE32(_ b: [UInt8], _ at: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { ($0 << 8) | UInt32(b[at + $1]) }
    }

    static func readBE64(_ b: [UInt8], _ at: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { ($0 << 8) | UInt64(b[at + $1]) }
    }
}

extension HdrHistogram {
    /// After decoding, min and max are known only to bucket precision (as in every HdrHistogram port).
    func setDecodedTotals(total: Int64, minNonZeroIndex: Int, maxIndex: Int) {
        setTotals(total: total,
                  maxRecorded: maxIndex >= 0 ? valueFromIndex(maxIndex) : 0,
                  minNonZero: minNonZeroIndex >= 0 ? valueFromIndex(minNonZeroIndex) : .max)
    }
}
