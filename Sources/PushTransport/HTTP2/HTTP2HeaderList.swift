import Glibc

/// A header list received from the peer: name/value byte views, valid during the delegate callback.
///
/// Names are lowercase (HTTP/2 requires it). Iterate with `count` and `subscript`, or look one up
/// with `first(named:)`; nothing allocates.
public struct HTTP2HeaderList {
    let store: UnsafeRawPointer
    let refs: UnsafeBufferPointer<HeaderRef>

    /// Number of regular (non-pseudo) header fields.
    public var count: Int { refs.count }

    /// The `i`th field as (name, value) byte views.
    public subscript(i: Int) -> (name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let r = refs[i]
        return (UnsafeRawBufferPointer(start: store + Int(r.nameOffset), count: Int(r.nameLength)),
                UnsafeRawBufferPointer(start: store + Int(r.valueOffset), count: Int(r.valueLength)))
    }

    /// The value of the first field named `name` (lowercase), or nil.
    public func first(named name: StaticString) -> UnsafeRawBufferPointer? {
        let n = name.utf8CodeUnitCount
        var i = 0
        while i < refs.count {
            let r = refs[i]
            if Int(r.nameLength) == n && memcmp(store + Int(r.nameOffset), name.utf8Start, n) == 0 {
                return UnsafeRawBufferPointer(start: store + Int(r.valueOffset), count: Int(r.valueLength))
            }
            i += 1
        }
        return nil
    }
}
