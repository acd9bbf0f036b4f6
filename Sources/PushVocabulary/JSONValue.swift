/// A JSON value whose objects keep their key order, so summary.json reads in the order of the
/// design's contract: the project's one general JSON reader (built on ``JSONTape``) for files and
/// answers read off the request path, with a pretty printer for results files. Compact text is
/// written with ``JSONWriter``.
public enum JSONValue: Equatable, Sendable {
    /// `null`.
    case null
    /// `true` / `false`.
    case bool(Bool)
    /// A number without fraction or exponent that fits in 64 bits.
    case int(Int64)
    /// Any other number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// Ordered key/value pairs.
    case object([(String, JSONValue)])

    /// Structural equality; `1` equals `1.0`.
    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.int(x), .int(y)): return x == y
        case let (.double(x), .double(y)): return x == y
        case let (.int(x), .double(y)), let (.double(y), .int(x)): return Double(x) == y
        case let (.string(x), .string(y)): return x == y
        case let (.array(x), .array(y)): return x == y
        case let (.object(x), .object(y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// The member named `key` of an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members.first { $0.0 == key }?.1 }
        return nil
    }

    /// Follows a dotted path such as `"latency_us.p99"`.
    public func value(atPath path: String) -> JSONValue? {
        var current: JSONValue? = self
        for part in path.split(separator: ".") { current = current?[String(part)] }
        return current
    }

    /// The value as a number, if it is one.
    public var number: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The value as an integer, if it is an integral number.
    public var integer: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 9e18: return Int64(d)
        default: return nil
        }
    }

    /// The value as a string, if it is one.
    public var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The members of an object (empty otherwise).
    public var members: [(String, JSONValue)] {
        if case .object(let m) = self { return m }
        return []
    }

    /// The members of an object by name, a repeated name keeping its last value; `nil` when this is
    /// not an object.
    public var object: [String: JSONValue]? {
        guard case .object(let m) = self else { return nil }
        return Dictionary(m, uniquingKeysWith: { _, last in last })
    }

    /// The elements of an array, or `nil` when this is not one.
    public var array: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The value as a boolean, if it is one.
    public var bool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// Sets (or appends) member `key` of an object.
    public mutating func set(_ key: String, _ value: JSONValue) {
        guard case .object(var m) = self else { return }
        if let i = m.firstIndex(where: { $0.0 == key }) { m[i].1 = value } else { m.append((key, value)) }
        self = .object(m)
    }

    /// Pretty-printed text with two-space indentation; small leaf objects stay on one line.
    public func render() -> String {
        var out = ""
        write(&out, indent: 0)
        out.append("\n")
        return out
    }

    private var isLeafContainer: Bool {
        switch self {
        case .object(let m): return m.allSatisfy { !$0.1.isContainer }
        case .array(let a): return a.allSatisfy { !$0.isContainer }
        default: return false
        }
    }

    private var isContainer: Bool {
        switch self {
        case .object, .array: return true
        default: return false
        }
    }

    private func write(_ out: inout String, indent: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d): out += JSONValue.format(d)
        case .string(let s): JSONValue.quote(s, into: &out)
        case .array(let a):
            if a.isEmpty { out += "[]"; return }
            if isLeafContainer && a.count <= 16 {
                out += "["
                for (i, v) in a.enumerated() { if i > 0 { out += ", " }; v.write(&out, indent: indent) }
                out += "]"
                return
            }
            out += "[\n"
            for (i, v) in a.enumerated() {
                out += String(repeating: " ", count: indent + 2)
                v.write(&out, indent: indent + 2)
                out += i + 1 < a.count ? ",\n" : "\n"
            }
            out += String(repeating: " ", count: indent) + "]"
        case .object(let m):
            if m.isEmpty { out += "{}"; return }
            if isLeafContainer && m.count <= 8 {
                out += "{ "
                for (i, (k, v)) in m.enumerated() {
                    if i > 0 { out += ", " }
                    JSONValue.quote(k, into: &out)
                    out += ": "
                    v.write(&out, indent: indent)
                }
                out += " }"
                return
            }
            out += "{\n"
            for (i, (k, v)) in m.enumerated() {
                out += String(repeating: " ", count: indent + 2)
                JSONValue.quote(k, into: &out)
                out += ": "
                v.write(&out, indent: indent + 2)
                out += i + 1 < m.count ? ",\n" : "\n"
            }
            out += String(repeating: " ", count: indent) + "}"
        }
    }

    static func format(_ d: Double) -> String { JSONWriter.format(d) }

    static func quote(_ s: String, into out: inout String) {
        var utf8: [UInt8] = []
        JSONWriter.appendQuoted(s, to: &utf8)
        out += String(decoding: utf8, as: UTF8.self)
    }

    // MARK: Parsing

    /// Parses JSON text (strict RFC 8259, the project's one JSON reader). A mistake throws the
    /// ``JSONError`` that says where (`line:column: reason`).
    public static func parse(_ text: String) throws(JSONError) -> JSONValue {
        var text = text
        return try text.withUTF8 { read(UnsafeRawBufferPointer($0)) }.get()
    }

    /// Parses JSON bytes (UTF-8); a mistake throws the ``JSONError`` that says where.
    public static func parse(_ bytes: [UInt8]) throws(JSONError) -> JSONValue {
        try bytes.withUnsafeBytes { read($0) }.get()
    }

    /// Parses JSON bytes (UTF-8); a mistake throws the ``JSONError`` that says where.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONError) -> JSONValue {
        try read(bytes).get()
    }

    private static func read(_ bytes: UnsafeRawBufferPointer) -> Result<JSONValue, JSONError> {
        var tape = JSONTape()
        if let error = tape.parse(bytes) { return .failure(error) }
        return .success(value(at: tape.root, tape, bytes))
    }

    private static func value(at index: Int, _ tape: JSONTape, _ bytes: UnsafeRawBufferPointer) -> JSONValue {
        switch tape[index].kind {
        case .null: return .null
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .string: return .string(tape.string(at: index, in: bytes)!)
        case .number:
            if let i = tape.int64(at: index, in: bytes) { return .int(i) }
            return .double(tape.double(at: index, in: bytes)!)
        case .array: return .array(tape.children(of: index).map { value(at: $0, tape, bytes) })
        case .object:
            return .object(tape.members(of: index).map { (tape.string(at: $0.key, in: bytes)!, value(at: $0.value, tape, bytes)) })
        }
    }
}
