/// Compact JSON text (no whitespace) written member by member, for the texts made off the request
/// path: the gateway's /stats, the token endpoint's answers, JWT headers and claims. Strings are
/// escaped by ``JSONWriting`` (as every writer here does) and numbers print as ``JSONValue`` prints them.
///
///     var w = JSONWriter()
///     w.object { o in
///         o.member("requests", 3)
///         o.member("by_status") { s in s.member("200", 2) }
///     }
///     w.text   // {"requests":3,"by_status":{"200":2}}
public struct JSONWriter: Sendable {
    /// The UTF-8 text so far.
    public private(set) var bytes: [UInt8] = []
    // Whether the next key or element follows a sibling and so needs a comma.
    private var afterValue = false

    /// An empty text.
    public init() {}

    /// The text so far.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The text `body` writes.
    public static func text(_ body: (inout JSONWriter) -> Void) -> String {
        var w = JSONWriter()
        body(&w)
        return w.text
    }

    /// An object whose members `body` writes.
    public mutating func object(_ body: (inout JSONWriter) -> Void) {
        open(0x7B)
        body(&self)
        close(0x7D)
    }

    /// An array whose elements `body` writes.
    public mutating func array(_ body: (inout JSONWriter) -> Void) {
        open(0x5B)
        body(&self)
        close(0x5D)
    }

    /// A member's name; the next value written is its value.
    public mutating func key(_ name: String) {
        separate()
        Self.appendQuoted(name, to: &bytes)
        bytes.append(0x3A)
    }

    /// A string value.
    public mutating func value(_ s: String) {
        separate()
        Self.appendQuoted(s, to: &bytes)
        afterValue = true
    }

    /// An integer value.
    public mutating func value(_ n: some BinaryInteger) { literal(String(n)) }

    /// A number (``format(_:)``).
    public mutating func value(_ d: Double) { literal(Self.format(d)) }

    /// `true` or `false`.
    public mutating func value(_ b: Bool) { literal(b ? "true" : "false") }

    /// Text that is already JSON (a payload read elsewhere), written as it is.
    public mutating func raw(_ json: String) { literal(json) }

    /// A member with a string value.
    public mutating func member(_ name: String, _ s: String) { key(name); value(s) }
    /// A member with an integer value.
    public mutating func member(_ name: String, _ n: some BinaryInteger) { key(name); value(n) }
    /// A member with a number value.
    public mutating func member(_ name: String, _ d: Double) { key(name); value(d) }
    /// A member with a boolean value.
    public mutating func member(_ name: String, _ b: Bool) { key(name); value(b) }
    /// A member whose value is the object `body` writes.
    public mutating func member(_ name: String, _ body: (inout JSONWriter) -> Void) { key(name); object(body) }

    /// A member whose value is an object of `counts`, in key order (`{"200":2,"410":1}`).
    public mutating func member<K: Comparable & CustomStringConvertible>(_ name: String, sortedByKey counts: [K: some BinaryInteger]) {
        key(name)
        object { o in for k in counts.keys.sorted() { o.member(k.description, counts[k]!) } }
    }

    private mutating func separate() {
        if afterValue { bytes.append(0x2C) }
        afterValue = false
    }

    private mutating func literal(_ s: String) {
        separate()
        bytes.append(contentsOf: s.utf8)
        afterValue = true
    }

    private mutating func open(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        afterValue = true
    }

    /// A number as the results files print it: a whole number under 10^15 with one decimal (`2.0`),
    /// otherwise the shortest text that reads back the same; NaN and infinities become `null`.
    public static func format(_ d: Double) -> String {
        guard d.isFinite else { return "null" }
        if d == d.rounded() && abs(d) < 1e15 { return (d.sign == .minus ? "-" : "") + String(Int64(d.magnitude)) + ".0" }
        return "\(d)"
    }

    /// Appends `s` as a quoted, escaped JSON string.
    static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        out.append(0x22)
        var s = s
        s.withUTF8 { JSONWriting.appendEscaped(UnsafeRawBufferPointer($0), to: &out) }
        out.append(0x22)
    }
}
