// UUIDs for apns-id, `{{uuid}}` and `{{message_id}}`, with no Foundation and no allocation.

/// A 128-bit UUID (RFC 9562 version 4 layout when made by `PushRandom.uuid()`), written in the
/// lowercase canonical 8-4-4-4-12 form APNs expects in `apns-id`.
public struct PushUUID: Hashable, Sendable, CustomStringConvertible {
    /// High 64 bits (the first 16 hex digits).
    public var high: UInt64
    /// Low 64 bits (the last 16 hex digits).
    public var low: UInt64

    /// Bytes of the canonical text form.
    public static let textLength = 36

    /// A UUID from its two halves, as they are (no version bits are set).
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A version-4 UUID from two random words (sets the version and variant bits).
    public init(random high: UInt64, _ low: UInt64) {
        self.high = (high & ~0xF000) | 0x4000
        self.low = (low & ~(0xC000_0000_0000_0000 as UInt64)) | 0x8000_0000_0000_0000
    }

    /// A UUID derived deterministically from this one and `index` (for the n-th `{{uuid}}` of a
    /// request: the same request gives the same bytes in every encoder).
    func derived(_ index: Int) -> PushUUID {
        var s = high ^ (low &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(truncatingIfNeeded: index &+ 1)
        let a = PushRandom.splitMix(&s)
        let b = PushRandom.splitMix(&s)
        return PushUUID(random: a, b)
    }

    /// Writes the 36-byte lowercase canonical form at `dst`. Branch-free (SWAR nibble spreading):
    /// this runs once per request for `apns-id` and `{{message_id}}`.
    @inline(__always) public func write(to dst: UnsafeMutableRawPointer) {
        let a = PushUUID.hex8(UInt32(truncatingIfNeeded: high >> 32))
        let b = PushUUID.hex8(UInt32(truncatingIfNeeded: high))
        let c = PushUUID.hex8(UInt32(truncatingIfNeeded: low >> 32))
        let d = PushUUID.hex8(UInt32(truncatingIfNeeded: low))
        let dash = UInt8(ascii: "-")
        dst.storeBytes(of: a, toByteOffset: 0, as: UInt64.self)
        dst.storeBytes(of: dash, toByteOffset: 8, as: UInt8.self)
        dst.storeBytes(of: UInt32(truncatingIfNeeded: b), toByteOffset: 9, as: UInt32.self)
        dst.storeBytes(of: dash, toByteOffset: 13, as: UInt8.self)
        dst.storeBytes(of: UInt32(truncatingIfNeeded: b >> 32), toByteOffset: 14, as: UInt32.self)
        dst.storeBytes(of: dash, toByteOffset: 18, as: UInt8.self)
        dst.storeBytes(of: UInt32(truncatingIfNeeded: c), toByteOffset: 19, as: UInt32.self)
        dst.storeBytes(of: dash, toByteOffset: 23, as: UInt8.self)
        dst.storeBytes(of: UInt32(truncatingIfNeeded: c >> 32), toByteOffset: 24, as: UInt32.self)
        dst.storeBytes(of: d, toByteOffset: 28, as: UInt64.self)
    }

    /// Eight lowercase hex digits of `v`, most significant first in memory order. (`write` splits
    /// these words with little-endian truncation: Linux on x86-64 and arm64.)
    @inline(__always) static func hex8(_ v: UInt32) -> UInt64 {
        var x = UInt64(v)
        x = ((x & 0xFFFF_0000) << 16) | (x & 0xFFFF)
        x = ((x & 0x0000_FF00_0000_FF00) << 8) | (x & 0x0000_00FF_0000_00FF)
        x = ((x & 0x00F0_00F0_00F0_00F0) << 4) | (x & 0x000F_000F_000F_000F)
        // Each byte now holds one nibble; add '0', plus 'a'-'0'-10 where the nibble is >= 10.
        let letters = ((x &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        x = x &+ 0x3030_3030_3030_3030 &+ letters &* 0x27
        return x.bigEndian  // most significant digit at the lowest address
    }

    /// The canonical text (allocates; not for the hot path).
    public var description: String {
        String(unsafeUninitializedCapacity: 36) { buf in
            write(to: UnsafeMutableRawPointer(buf.baseAddress!))
            return 36
        }
    }

    /// Parses a canonical UUID (either case), or returns `nil`.
    public init?(_ text: String) {
        let u = Array(text.utf8)
        guard u.count == 36, u[8] == 0x2D, u[13] == 0x2D, u[18] == 0x2D, u[23] == 0x2D else { return nil }
        var words: [UInt64] = [0, 0]
        var digits = 0
        for (i, c) in u.enumerated() where i != 8 && i != 13 && i != 18 && i != 23 {
            let v: UInt64
            switch c {
            case 0x30...0x39: v = UInt64(c - 0x30)
            case 0x61...0x66: v = UInt64(c - 0x57)
            case 0x41...0x46: v = UInt64(c - 0x37)
            default: return nil
            }
            words[digits / 16] = words[digits / 16] << 4 | v
            digits += 1
        }
        self.init(high: words[0], low: words[1])
    }
}

/// A small, fast, seedable PRNG (xoshiro256**, seeded through SplitMix64). Not cryptographic:
/// it makes message ids and synthetic tokens reproducible from a seed.
public struct PushRandom: RandomNumberGenerator, Sendable {
    private var s0, s1, s2, s3: UInt64

    /// A generator whose whole sequence is fixed by `seed`.
    public init(seed: UInt64) {
        var x = seed
        s0 = PushRandom.splitMix(&x)
        s1 = PushRandom.splitMix(&x)
        s2 = PushRandom.splitMix(&x)
        s3 = PushRandom.splitMix(&x)
    }

    @inline(__always) static func splitMix(_ x: inout UInt64) -> UInt64 {
        x &+= 0x9E37_79B9_7F4A_7C15
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The next 64 random bits.
    @inline(__always) public mutating func next() -> UInt64 {
        let result = ((s1 &* 5) << 7 | (s1 &* 5) >> 57) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = s3 << 45 | s3 >> 19
        return result
    }

    /// A fresh version-4 UUID.
    @inline(__always) public mutating func uuid() -> PushUUID {
        PushUUID(random: next(), next())
    }

    /// The version-4 UUID of request `index` under `seed`: a function of the two alone, so whichever
    /// driver thread or agent sends request `index` of a run gives it the same id as a single process
    /// would. Its two halves are SplitMix64 outputs of states no other index reaches.
    @inline(__always) public static func uuid(seed: UInt64, index: UInt64) -> PushUUID {
        var x = seed &+ (index &* 2) &* 0x9E37_79B9_7F4A_7C15
        return PushUUID(random: splitMix(&x), splitMix(&x))
    }
}
