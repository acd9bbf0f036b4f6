/// Fills one request inside `HTTP2ClientConnection.submit`: per-request header values and the body.
///
/// Body modes: write into `body` and call `setBodyLength` (zero-copy: the slot is sent with NO_COPY);
/// `copyBody` (caller memory copied by nghttp2's read callback, must stay valid until the stream ends);
/// `borrowBody` (caller memory sent with NO_COPY, must stay valid until the stream ends).
/// No body call = a request without body (END_STREAM on HEADERS).
public struct HTTP2RequestWriter: ~Copyable {
    enum Mode { case none, slot, copied, borrowed }
    let slot: UnsafeMutablePointer<ClientSlot>
    var mode = Mode.none
    var tooLarge = -1

    init(slot: UnsafeMutablePointer<ClientSlot>) { self.slot = slot }

    /// The stream slot's preallocated body memory (`HTTP2ClientConfiguration.slotBodyCapacity` bytes).
    public var body: UnsafeMutableRawBufferPointer { slot.pointee.body }

    /// Sends the first `length` bytes of `body` without copying. A length beyond the slot capacity
    /// makes `submit` throw `.bodyTooLarge`.
    public mutating func setBodyLength(_ length: Int) {
        if length < 0 || length > slot.pointee.body.count {
            tooLarge = length
            return
        }
        slot.pointee.cursor = BodyCursor(base: UnsafeRawPointer(slot.pointee.body.baseAddress), count: length, sent: 0)
        mode = .slot
    }

    /// Sends `bytes` through nghttp2's read callback (copied into its frame buffer when framed).
    public mutating func copyBody(_ bytes: UnsafeRawBufferPointer) {
        slot.pointee.cursor = BodyCursor(base: bytes.baseAddress, count: bytes.count, sent: 0)
        mode = .copied
    }

    /// Sends `bytes` without copying; they must stay valid and unchanged until the stream ends.
    public mutating func borrowBody(_ bytes: UnsafeRawBufferPointer) {
        slot.pointee.cursor = BodyCursor(base: bytes.baseAddress, count: bytes.count, sent: 0)
        mode = .borrowed
    }

    /// Sets per-request field `field` (copied into the slot).
    public mutating func setValue(_ field: Int, _ bytes: UnsafeRawBufferPointer) {
        precondition(field >= 0 && field < ClientSlot.maxValues, "per-request field \(field) out of range")
        let off = slot.pointee.values.append(bytes.baseAddress, bytes.count)
        slot.pointee.valueRefs[2 * field] = off
        slot.pointee.valueRefs[2 * field + 1] = bytes.count
    }

    /// Sets per-request field `field` from a static string.
    public mutating func setValue(_ field: Int, _ s: StaticString) {
        setValue(field, UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// Sets per-request field `field` from a String (no allocation for native strings).
    public mutating func setValue(_ field: Int, _ s: String) {
        var s = s
        s.withUTF8 { setValue(field, UnsafeRawBufferPointer($0)) }
    }

    /// Writes per-request field `field` in place: `write` gets up to `capacity` bytes and returns the length used.
    public mutating func setValue(_ field: Int, capacity: Int, _ write: (UnsafeMutableRawBufferPointer) -> Int) {
        precondition(field >= 0 && field < ClientSlot.maxValues, "per-request field \(field) out of range")
        slot.pointee.values.reserve(capacity)
        let off = slot.pointee.values.count
        let n = write(UnsafeMutableRawBufferPointer(start: slot.pointee.values.base + off, count: capacity))
        precondition(n >= 0 && n <= capacity, "value writer returned \(n) for capacity \(capacity)")
        slot.pointee.values.count += n
        slot.pointee.valueRefs[2 * field] = off
        slot.pointee.valueRefs[2 * field + 1] = n
    }
}
