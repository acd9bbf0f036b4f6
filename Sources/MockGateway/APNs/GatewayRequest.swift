import PushTransport

/// One complete HTTP/2 request as the gateway's logic sees it: the headers it cares about and the body,
/// all borrowed (valid only during the call that receives it), so building one allocates nothing.
///
/// ```swift
/// var request = GatewayRequest()
/// request.setHeader(name: nameBytes, value: valueBytes)   // once per header, as the transport delivers them
/// request.body = bodyBytes
/// let action = machine.handle(request, connection: &state, now: now)
/// ```
public struct GatewayRequest {
    /// `:method`.
    var method: UnsafeRawBufferPointer?
    /// `:path`.
    public var path: UnsafeRawBufferPointer?
    /// `apns-id`.
    public var apnsID: UnsafeRawBufferPointer?
    /// `apns-topic`.
    public var topic: UnsafeRawBufferPointer?
    /// `apns-push-type`.
    public var pushType: UnsafeRawBufferPointer?
    /// `apns-priority`.
    public var priority: UnsafeRawBufferPointer?
    /// `apns-expiration`.
    public var expiration: UnsafeRawBufferPointer?
    /// `apns-collapse-id`.
    public var collapseID: UnsafeRawBufferPointer?
    /// `authorization`.
    var authorization: UnsafeRawBufferPointer?
    /// Whether a header the gateway reads was repeated (APNs answers `DuplicateHeaders`).
    var hasDuplicateHeader = false
    /// The request body (empty when there was none).
    public var body = UnsafeRawBufferPointer(start: nil, count: 0)

    /// An empty request.
    public init() {}

    /// Records header `name: value` (names are lower case in HTTP/2). Headers the gateway does not read
    /// (`host`, `:authority`, `content-type`, `content-length`, `user-agent`, …) are ignored.
    @inline(__always)
    public mutating func setHeader(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        switch name.count {
        case 5: if equals(name, ":path") { Self.put(&path, value, &hasDuplicateHeader) }
        case 7:
            if equals(name, ":method") { Self.put(&method, value, &hasDuplicateHeader) }
            else if equals(name, "apns-id") { Self.put(&apnsID, value, &hasDuplicateHeader) }
        case 10: if equals(name, "apns-topic") { Self.put(&topic, value, &hasDuplicateHeader) }
        case 13:
            if equals(name, "apns-priority") { Self.put(&priority, value, &hasDuplicateHeader) }
            else if equals(name, "authorization") { Self.put(&authorization, value, &hasDuplicateHeader) }
        case 14: if equals(name, "apns-push-type") { Self.put(&pushType, value, &hasDuplicateHeader) }
        case 15: if equals(name, "apns-expiration") { Self.put(&expiration, value, &hasDuplicateHeader) }
        case 16: if equals(name, "apns-collapse-id") { Self.put(&collapseID, value, &hasDuplicateHeader) }
        default: break
        }
    }

    @inline(__always)
    private static func put(_ field: inout UnsafeRawBufferPointer?, _ value: UnsafeRawBufferPointer, _ duplicate: inout Bool) {
        if field != nil { duplicate = true }
        field = value
    }
}

/// Whether `bytes` equal the ASCII text of `literal`.
@inline(__always)
func equals(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
    guard bytes.count == literal.utf8CodeUnitCount else { return false }
    return sameBytes(bytes, UnsafeRawPointer(literal.utf8Start), bytes.count)
}

/// Whether `bytes` start with the ASCII text of `literal`.
@inline(__always)
func hasPrefix(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
    let n = literal.utf8CodeUnitCount
    guard bytes.count >= n else { return false }
    return sameBytes(bytes, UnsafeRawPointer(literal.utf8Start), n)
}

/// Whether the first `n` bytes of `bytes` (at least `n` long) equal those at `p` (``bytesEqual``).
@inline(__always)
func sameBytes(_ bytes: UnsafeRawBufferPointer, _ p: UnsafeRawPointer, _ n: Int) -> Bool {
    guard n > 0, let a = bytes.baseAddress else { return n == 0 }
    return bytesEqual(a, p, count: n)
}

/// Whether every byte of `bytes` is visible ASCII (0x21-0x7E), as an `apns-topic` must be: 8 bytes per
/// step, the last word overlapping the one before.
@inline(__always)
func isVisibleASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
    let n = bytes.count
    if n < 8 {
        for c in bytes where c <= 0x20 || c >= 0x7F { return false }
        return true
    }
    let ones: UInt64 = 0x0101_0101_0101_0101, high: UInt64 = 0x8080_8080_8080_8080
    var i = 0
    while true {
        let w = bytes.loadUnaligned(fromByteOffset: min(i, n - 8), as: UInt64.self)
        // A byte of 0x80 or more; else (no byte can carry into the next) one below 0x21, or one of 0x7F
        // (plus one sets its high bit).
        if w & high != 0 || (w &- ones &* 0x21) & ~w & high != 0 || (w &+ ones) & high != 0 { return false }
        i += 8
        if i >= n { return true }
    }
}

@inline(__always)
func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: c &- 0x30
    case 0x61...0x66: c &- 0x61 &+ 10
    case 0x41...0x46: c &- 0x41 &+ 10
    default: nil
    }
}

/// The 8 lower-case hex digits of `x`, most significant first, as the bytes of a little-endian word.
@inline(__always)
func hex8(_ x: UInt32) -> UInt64 {
    var v = UInt64(x)
    // Spread the nibbles into bytes, most significant nibble in the lowest byte.
    v = ((v & 0xFFFF_0000) >> 16) | ((v & 0x0000_FFFF) << 32)
    v = ((v & 0x0000_FF00_0000_FF00) >> 8) | ((v & 0x0000_00FF_0000_00FF) << 16)
    v = ((v & 0x00F0_00F0_00F0_00F0) >> 4) | ((v & 0x000F_000F_000F_000F) << 8)
    // '0'...'9' for 0...9, 'a'...'f' for 10...15: +0x30, and +0x27 more where the nibble is above 9.
    let above9 = ((v &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
    return v &+ 0x3030_3030_3030_3030 &+ above9 &* 0x27
}

/// Whether every byte of `bytes` is a hex digit (either case), 8 bytes per step.
@inline(__always)
func isHex(_ bytes: UnsafeRawBufferPointer) -> Bool {
    let n = bytes.count
    var i = 0
    var ok: UInt64 = 0x8080_8080_8080_8080
    var high: UInt64 = 0
    while i + 8 <= n {
        let x = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        high |= x
        // Per byte (7-bit, so no carry crosses bytes): high bit set when lo <= byte <= hi.
        let digit = (x &+ 0x5050_5050_5050_5050) & ~(x &+ 0x4646_4646_4646_4646)
        let y = x | 0x2020_2020_2020_2020
        let letter = (y &+ 0x1F1F_1F1F_1F1F_1F1F) & ~(y &+ 0x1919_1919_1919_1919)
        ok &= digit | letter
        i += 8
    }
    guard high & 0x8080_8080_8080_8080 == 0, ok & 0x8080_8080_8080_8080 == 0x8080_8080_8080_8080 else { return false }
    while i < n {
        if hexValue(bytes[i]) == nil { return false }
        i += 1
    }
    return true
}

/// An `apns-id`: a UUID in its 36-character text form, stored inline (no allocation).
public struct APNsID: Equatable, Sendable, CustomStringConvertible {
    private var storage: (UInt64, UInt64, UInt64, UInt64, UInt32) = (0, 0, 0, 0, 0)

    /// The text length of a UUID.
    static let length = 36

    /// The id in `text` if it is a UUID (8-4-4-4-12 hex digits, either case), kept exactly as sent.
    public init?(validating text: UnsafeRawBufferPointer) {
        guard text.count == 36 else { return nil }
        for i in 0..<36 {
            let c = text[i]
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == 0x2D else { return nil }
            } else if hexValue(c) == nil {
                return nil
            }
        }
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: text[0..<36])) }
    }

    /// No id yet (all bytes zero): a placeholder the state machine overwrites.
    static let unset = APNsID()
    private init() {}

    /// A random (version 4) UUID in lower case from two random words.
    public init(random a: UInt64, _ b: UInt64) {
        // Version 4 and variant 10xx bits, as RFC 9562 asks.
        let hi = (a & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        let lo = (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        @inline(__always) func hex4(_ x: UInt64) -> UInt32 {
            UInt32(truncatingIfNeeded: hex8(UInt32(truncatingIfNeeded: x & 0xFFFF)) >> 32)
        }
        withUnsafeMutableBytes(of: &storage) { out in
            // 8-4-4-4-12, written as whole words of hex digits (unaligned stores).
            out.storeBytes(of: hex8(UInt32(truncatingIfNeeded: hi >> 32)), toByteOffset: 0, as: UInt64.self)
            out.storeBytes(of: 0x2D, toByteOffset: 8, as: UInt8.self)
            out.storeBytes(of: hex4(hi >> 16), toByteOffset: 9, as: UInt32.self)
            out.storeBytes(of: 0x2D, toByteOffset: 13, as: UInt8.self)
            out.storeBytes(of: hex4(hi), toByteOffset: 14, as: UInt32.self)
            out.storeBytes(of: 0x2D, toByteOffset: 18, as: UInt8.self)
            out.storeBytes(of: hex4(lo >> 48), toByteOffset: 19, as: UInt32.self)
            out.storeBytes(of: 0x2D, toByteOffset: 23, as: UInt8.self)
            out.storeBytes(of: hex4(lo >> 32), toByteOffset: 24, as: UInt32.self)
            out.storeBytes(of: hex8(UInt32(truncatingIfNeeded: lo)), toByteOffset: 28, as: UInt64.self)
        }
    }

    /// Calls `body` with the 36 bytes of the id.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: storage) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<36])) }
    }

    /// The id as text.
    public var description: String { withBytes { String(decoding: $0, as: UTF8.self) } }

    public static func == (l: APNsID, r: APNsID) -> Bool {
        l.storage.0 == r.storage.0 && l.storage.1 == r.storage.1 && l.storage.2 == r.storage.2
            && l.storage.3 == r.storage.3 && l.storage.4 == r.storage.4
    }
}
