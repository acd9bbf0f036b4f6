import CNGHTTP2

/// Adds response header fields inside `HTTP2ServerConnection.respond` (copied into the stream's storage).
public struct HTTP2ResponseHeaders: ResponseHeaderWriter, ~Copyable {
    let slot: UnsafeMutablePointer<ServerSlot>
    /// Whether a unique field's name is in the connection's dynamic table (one name per connection: a
    /// second name would only be Huffman-coded each time, still correct); the connection keeps it
    /// from one response to the next.
    var uniqueNameIndexed: Bool

    /// Adds a field (name must be lowercase).
    public mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let no = slot.pointee.respStore.append(name.baseAddress, name.count)
        let vo = slot.pointee.respStore.append(value.baseAddress, value.count)
        slot.pointee.respRefs.append(HeaderRef(nameOffset: Int32(no), nameLength: Int32(name.count),
                                       valueOffset: Int32(vo), valueLength: Int32(value.count)))
    }

    /// Adds a field whose value is new on every response (e.g. `apns-id`). The value is sent as a literal
    /// that is not indexed, so it does not churn the HPACK dynamic table; the name is indexed once per
    /// connection, with the first such field, so later responses refer to it by index instead of
    /// Huffman-coding it again.
    public mutating func addUnique(_ name: StaticString, _ value: UnsafeRawBufferPointer) {
        let no = slot.pointee.respStore.append(name.utf8Start, name.utf8CodeUnitCount)
        let vo = slot.pointee.respStore.append(value.baseAddress, value.count)
        let indexNow = !uniqueNameIndexed
        uniqueNameIndexed = true
        slot.pointee.respRefs.append(HeaderRef(nameOffset: Int32(no), nameLength: Int32(name.utf8CodeUnitCount),
                                               valueOffset: Int32(vo), valueLength: Int32(value.count),
                                               nvFlags: indexNow ? 0 : UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)))
    }
}
