/// What a server's answer takes its header fields through, over HTTP/2 (``HTTP2ResponseHeaders``) or
/// HTTP/1.1 (``HTTP1ResponseHeaders``): one way to add a field, and the forms with a static name built
/// on it once for both.
public protocol ResponseHeaderWriter: ~Copyable {
    /// Adds a field (lowercase for HTTP/2; HTTP/1.1 sends the name as given).
    mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
}

extension ResponseHeaderWriter where Self: ~Copyable {
    /// Adds a field with a static name.
    @inlinable
    public mutating func add(_ name: StaticString, _ value: UnsafeRawBufferPointer) {
        add(name: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), value: value)
    }

    /// Adds a field with static name and value.
    @inlinable
    public mutating func add(_ name: StaticString, _ value: StaticString) {
        add(name, UnsafeRawBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount))
    }

    /// Adds a field with a String value (no allocation for native strings).
    @inlinable
    public mutating func add(_ name: StaticString, _ value: String) {
        var v = value
        v.withUTF8 { add(name, UnsafeRawBufferPointer($0)) }
    }
}
