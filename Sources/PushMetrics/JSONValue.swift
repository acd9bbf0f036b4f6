import Foundation

/// A JSON value whose objects keep their key order, so summary.json reads in the order of the
/// design's contract. Parsing and printing are self-contained (no JSONSerialization number quirks).
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

    /// Shortest decimal that round-trips, never exponent-free garbage: NaN/inf become null.
    static func format(_ d: Double) -> String {
        guard d.isFinite else { return "null" }
        if d == d.rounded() && abs(d) < 1e15 { return String(format: "%.1f", d) }
        return "\(d)"
    }

    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 { out += String(format: "\\u%04x", u.value) } else { out.unicodeScalars.append(u) }
            }
        }
        out += "\""
    }

    // MARK: Parsing

    /// A parse error with the byte offset and line where it happened.
    public struct ParseError: Error, CustomStringConvertible {
        /// What went wrong and where.
        public let description: String
    }

    /// Parses JSON text.
    public static func parse(_ text: String) throws -> JSONValue {
        var p = Parser(bytes: Array(text.utf8))
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        guard p.pos == p.bytes.count else { throw p.error("unexpected text after the JSON value") }
        return v
    }

    private struct Parser {
        let bytes: [UInt8]
        var pos = 0

        func error(_ what: String) -> ParseError {
            let line = bytes[..<min(pos, bytes.count)].reduce(1) { $1 == 10 ? $0 + 1 : $0 }
            return ParseError(description: "\(what) at line \(line) (byte \(pos))")
        }

        mutating func skipSpace() {
            while pos < bytes.count, [9, 10, 13, 32].contains(bytes[pos]) { pos += 1 }
        }

        mutating func expect(_ literal: String) throws {
            let l = Array(literal.utf8)
            guard pos + l.count <= bytes.count, Array(bytes[pos..<pos + l.count]) == l else { throw error("expected \(literal)") }
            pos += l.count
        }

        mutating func value(depth: Int) throws -> JSONValue {
            guard depth < 200 else { throw error("nesting too deep") }
            guard pos < bytes.count else { throw error("unexpected end of input") }
            switch bytes[pos] {
            case UInt8(ascii: "{"):
                pos += 1
                var m: [(String, JSONValue)] = []
                skipSpace()
                if pos < bytes.count && bytes[pos] == UInt8(ascii: "}") { pos += 1; return .object(m) }
                while true {
                    skipSpace()
                    guard pos < bytes.count, bytes[pos] == UInt8(ascii: "\"") else { throw error("expected a member name") }
                    let k = try string()
                    skipSpace()
                    try expect(":")
                    skipSpace()
                    m.append((k, try value(depth: depth + 1)))
                    skipSpace()
                    guard pos < bytes.count else { throw error("unterminated object") }
                    if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
                    if bytes[pos] == UInt8(ascii: "}") { pos += 1; return .object(m) }
                    throw error("expected , or } in object")
                }
            case UInt8(ascii: "["):
                pos += 1
                var a: [JSONValue] = []
                skipSpace()
                if pos < bytes.count && bytes[pos] == UInt8(ascii: "]") { pos += 1; return .array(a) }
                while true {
                    skipSpace()
                    a.append(try value(depth: depth + 1))
                    skipSpace()
                    guard pos < bytes.count else { throw error("unterminated array") }
                    if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
                    if bytes[pos] == UInt8(ascii: "]") { pos += 1; return .array(a) }
                    throw error("expected , or ] in array")
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "n"): try expect("null"); return .null
            default: return try number()
            }
        }

        mutating func number() throws -> JSONValue {
            let start = pos
            var isInteger = true
            while pos < bytes.count {
                let c = bytes[pos]
                if (c >= 48 && c <= 57) || c == UInt8(ascii: "-") || c == UInt8(ascii: "+") { pos += 1; continue }
                if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") { isInteger = false; pos += 1; continue }
                break
            }
            let text = String(decoding: bytes[start..<pos], as: UTF8.self)
            if isInteger, let i = Int64(text) { return .int(i) }
            if let d = Double(text), !text.isEmpty { return .double(d) }
            pos = start
            throw error("invalid value")
        }

        mutating func string() throws -> String {
            pos += 1
            var out = [UInt8]()
            while pos < bytes.count {
                let c = bytes[pos]
                pos += 1
                if c == UInt8(ascii: "\"") { return String(decoding: out, as: UTF8.self) }
                if c != UInt8(ascii: "\\") { out.append(c); continue }
                guard pos < bytes.count else { break }
                let e = bytes[pos]
                pos += 1
                switch e {
                case UInt8(ascii: "n"): out.append(10)
                case UInt8(ascii: "t"): out.append(9)
                case UInt8(ascii: "r"): out.append(13)
                case UInt8(ascii: "b"): out.append(8)
                case UInt8(ascii: "f"): out.append(12)
                case UInt8(ascii: "u"):
                    guard pos + 4 <= bytes.count, let code = UInt32(String(decoding: bytes[pos..<pos + 4], as: UTF8.self), radix: 16) else {
                        throw error("bad \\u escape")
                    }
                    pos += 4
                    var scalarValue = code
                    if (0xD800..<0xDC00).contains(code), pos + 6 <= bytes.count, bytes[pos] == UInt8(ascii: "\\"),
                       let low = UInt32(String(decoding: bytes[pos + 2..<pos + 6], as: UTF8.self), radix: 16) {
                        pos += 6
                        scalarValue = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    out += Array(String(Unicode.Scalar(scalarValue).map(Character.init) ?? "\u{FFFD}").utf8)
                default: out.append(e)
                }
            }
            throw error("unterminated string")
        }
    }
}
