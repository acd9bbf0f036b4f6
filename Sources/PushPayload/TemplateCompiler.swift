import Foundation
import PushVocabulary

/// Compiles a template's text into the node tree and the static runs and slots the encoders walk.
struct TemplateCompiler {
    struct Placeholder {
        var start: Int, end: Int
        var kind: PlaceholderKind
        var inString: Bool
        /// For `{{pad:N}}`, N (expanded into static bytes at compile time); else nil.
        var pad: Int? = nil
    }

    let bytes: [UInt8]
    let file: String
    var placeholders: [Placeholder] = []
    var uuidCount = 0
    let pool = BytePool()
    var pads: [(start: Int, count: Int)] = []

    init(bytes: [UInt8], file: String) {
        self.bytes = bytes
        self.file = file
    }

    static let maxPad = 1 << 20
    static let knownNames = "{{seq}}, {{badge}}, {{token}}, {{message_id}}, {{uuid}}, {{text}}, {{pad:N}}, {{pipeline_id}}, {{tokens:N}}"
    /// The largest N of `{{tokens:N}}`.
    static let maxFanOut = 1000

    func error(at offset: Int, _ reason: String) -> TemplateError {
        let (line, column) = bytes.withUnsafeBytes { JSON.position(of: offset, in: $0) }
        return TemplateError(file: file, line: line, column: column, reason: reason)
    }

    struct Compiled {
        var root: TemplateNode
        var pool: BytePool
        var largestPadPosition: (Int, Int)?
    }

    mutating func compile() throws(TemplateError) -> Compiled {
        // 1. Find placeholders (tracking whether we are inside a string) and replace each with a
        //    same-length JSON stand-in, so the strict parser checks everything else with exact offsets.
        var standIn = bytes
        var inString = false
        var i = 0
        let n = bytes.count
        while i < n {
            let c = bytes[i]
            if inString {
                if c == 0x5C { i += 2; continue }
                if c == 0x22 { inString = false; i += 1; continue }
            } else if c == 0x22 {
                inString = true
                i += 1
                continue
            }
            // In "{{{seq}}" the first brace is JSON's; the placeholder starts at the last "{{".
            if c == UInt8(ascii: "{") && i + 2 < n && bytes[i + 1] == UInt8(ascii: "{") && bytes[i + 2] != UInt8(ascii: "{") {
                var j = i + 2
                while j + 1 < n && j - i < 80 && !(bytes[j] == UInt8(ascii: "}") && bytes[j + 1] == UInt8(ascii: "}"))
                    && bytes[j] != 0x0A && bytes[j] != 0x22 { j += 1 }
                guard j + 1 < n, bytes[j] == UInt8(ascii: "}"), bytes[j + 1] == UInt8(ascii: "}") else {
                    throw error(at: i, "unterminated placeholder: '{{' without '}}' (known: \(Self.knownNames))")
                }
                let name = String(decoding: bytes[(i + 2)..<j], as: UTF8.self)
                let end = j + 2
                if name.hasPrefix("pad:") {
                    guard inString else { throw error(at: i, "{{\(name)}} is a string filler; write it inside quotes: \"{{\(name)}}\"") }
                    guard let count = Int(name.dropFirst(4)), count >= 0, count <= Self.maxPad else {
                        throw error(at: i, "bad {{pad:N}}: N must be a whole number of bytes from 0 to \(Self.maxPad), not '\(name.dropFirst(4))'")
                    }
                    pads.append((start: i, count: count))
                    placeholders.append(Placeholder(start: i, end: end, kind: .text, inString: true, pad: count))
                } else if name.hasPrefix("tokens:") {
                    guard !inString else {
                        throw error(at: i, "{{\(name)}} is a JSON array of tokens; write it bare, without quotes: \"tokens\": {{\(name)}}")
                    }
                    guard let count = Int(name.dropFirst(7)), count >= 1, count <= Self.maxFanOut else {
                        throw error(at: i, "bad {{tokens:N}}: N must be a whole number of tokens from 1 to \(Self.maxFanOut), not '\(name.dropFirst(7))'")
                    }
                    placeholders.append(Placeholder(start: i, end: end, kind: .tokenList(count: count), inString: false))
                } else {
                    let kind: PlaceholderKind
                    switch name {
                    case "seq": kind = .seq
                    case "badge": kind = .badge
                    case "token": kind = .token
                    case "message_id": kind = .messageID
                    case "uuid": kind = .uuid(index: 0)
                    case "text": kind = .text
                    case "pipeline_id": kind = .pipelineID
                    default: throw error(at: i, "unknown placeholder {{\(name)}} (known: \(Self.knownNames))")
                    }
                    if !inString && !kind.isBare {
                        throw error(at: i, "{{\(name)}} is a string placeholder; write it inside quotes: \"{{\(name)}}\"")
                    }
                    placeholders.append(Placeholder(start: i, end: end, kind: kind, inString: inString))
                }
                for k in i..<end { standIn[k] = inString ? UInt8(ascii: "a") : UInt8(ascii: "0") }
                if !inString { standIn[i] = UInt8(ascii: "1") }
                i = end
                continue
            }
            i += 1
        }

        // 2. Strict JSON check of the stand-in text.
        var tape = JSONTape()
        if let e = standIn.withUnsafeBytes({ tape.parse($0) }) {
            if let p = placeholders.first(where: { $0.start == e.offset }), !p.inString, e.code == .expectedKey {
                throw error(at: e.offset, "a placeholder where an object key belongs (keys are fixed text)")
            }
            throw error(at: e.offset, e.code.reason)
        }
        guard tape[tape.root].kind == .object else {
            throw error(at: tape[tape.root].start, "a payload template must be a JSON object")
        }

        // 3. Every placeholder must be a whole number value, or sit inside a string value.
        for entry in tape where entry.kind == .string || entry.kind == .number {
            for p in placeholders where p.start >= entry.start && p.end <= entry.end {
                if entry.isKey { throw error(at: p.start, "a placeholder where an object key belongs (keys are fixed text)") }
                if entry.kind == .number && (p.start != entry.start || p.end != entry.end) {
                    throw error(at: p.start, "a bare placeholder must be the whole value, e.g. \"badge\": {{badge}}")
                }
            }
        }

        // 4. Build the tree (keys sorted) from the original bytes.
        let root: TemplateNode
        do {
            root = try bytes.withUnsafeBytes { buf in try build(tape.root, tape, buf) }
        } catch let e as TemplateError {
            throw e
        } catch {
            preconditionFailure("build throws only TemplateError")
        }
        var padPosition: (Int, Int)?
        if let big = pads.max(by: { $0.count < $1.count }), big.count > 0 {
            padPosition = bytes.withUnsafeBytes { JSON.position(of: big.start, in: $0) }
        }
        return Compiled(root: root, pool: pool, largestPadPosition: padPosition)
    }

    func build(_ index: Int, _ tape: JSONTape, _ buf: UnsafeRawBufferPointer) throws(TemplateError) -> TemplateNode {
        let e = tape[index]
        switch e.kind {
        case .object:
            var members: [(key: String, keyUTF8: Range<Int>, value: TemplateNode)] = []
            var err: TemplateError?
            tape.forEachMember(of: index) { k, v in
                guard err == nil else { return }
                do {
                    let ke = tape[k]
                    if JSONUnescape.hasLoneSurrogate(buf, ke.start, ke.end) {
                        throw error(at: ke.start, "a lone UTF-16 surrogate escape in a key")
                    }
                    var utf8: [UInt8] = []
                    tape.appendStringBytes(at: k, in: buf, to: &utf8)
                    let key = String(decoding: utf8, as: UTF8.self)
                    // Swift String equality is canonical equivalence: "é" and "e\u0301" are one key
                    // to JSONEncoder, so they are a duplicate here too.
                    if members.contains(where: { $0.key == key }) {
                        throw error(at: ke.start - 1, "duplicate key \"\(key)\"")
                    }
                    members.append((key: key, keyUTF8: pool.intern(utf8), value: try build(v, tape, buf)))
                } catch let e as TemplateError {
                    err = e
                } catch {}
            }
            if let err { throw err }
            members.sort { $0.key < $1.key }
            return .object(members)
        case .array:
            var items: [TemplateNode] = []
            var err: TemplateError?
            tape.forEachChild(of: index) { c in
                guard err == nil else { return }
                do { items.append(try build(c, tape, buf)) } catch let e as TemplateError { err = e } catch {}
            }
            if let err { throw err }
            return .array(items)
        case .string:
            if JSONUnescape.hasLoneSurrogate(buf, e.start, e.end) {
                throw error(at: e.start, "a lone UTF-16 surrogate escape in a string")
            }
            var parts: [StringPart] = []
            var pos = e.start
            var pending: [UInt8] = []
            func flushLiteral(upTo end: Int) {
                if end > pos { JSONUnescape.forEachByte(buf, pos, end) { pending.append($0) } }
            }
            for p in placeholders where p.start >= e.start && p.end <= e.end {
                flushLiteral(upTo: p.start)
                pos = p.end
                if let pad = p.pad {
                    pending.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: pad))
                    continue
                }
                if !pending.isEmpty { parts.append(.literal(String(decoding: pending, as: UTF8.self), pool.intern(pending))); pending = [] }
                parts.append(.slot(p.kind))
            }
            flushLiteral(upTo: e.end)
            if !pending.isEmpty { parts.append(.literal(String(decoding: pending, as: UTF8.self), pool.intern(pending))) }
            return .string(parts)
        case .number:
            if let p = placeholders.first(where: { $0.start == e.start && !$0.inString }) { return .slot(p.kind) }
            return .number(try number(e, buf))
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .null: return .null
        }
    }

    func number(_ e: JSONTape.Entry, _ buf: UnsafeRawBufferPointer) throws(TemplateError) -> NumberLiteral {
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: buf[e.start..<e.end]), as: UTF8.self)
        if let v = Int64(text) {
            var out = [UInt8](repeating: 0, count: 20)
            let len = out.withUnsafeMutableBytes { JSONWriting.writeDecimal(v, to: $0.baseAddress!) }
            return NumberLiteral(value: .int(v), canonical: pool.intern(Array(out[0..<len])))
        }
        guard let d = Double(text), d.isFinite else { throw error(at: e.start, "number out of range: \(text)") }
        // Format exactly as the Codable baseline will, so all encoders agree.
        guard let data = try? TemplateCompiler.doubleEncoder.encode([d]) else {
            throw error(at: e.start, "number cannot be encoded: \(text)")
        }
        return NumberLiteral(value: .double(d), canonical: pool.intern(Array(data.dropFirst().dropLast())))
    }

    static let doubleEncoder = JSONEncoder()

    /// Writes the canonical form of `node`: static bytes into `out`, and for each slot its kind and
    /// the offset where the static run before it ends. `{{uuid}}` slots are numbered here, in output order.
    static func emit(_ node: TemplateNode, pool: BytePool, into out: inout [UInt8], slots: inout [PlaceholderKind], ends: inout [Int]) {
        func slot(_ k: PlaceholderKind) {
            ends.append(out.count)
            if case .uuid = k {
                slots.append(.uuid(index: slots.reduce(0) { if case .uuid = $1 { return $0 + 1 } else { return $0 } }))
            } else {
                slots.append(k)
            }
        }
        func escaped(_ range: Range<Int>) {
            Array(pool[range]).withUnsafeBytes { JSONWriting.appendEscaped($0, to: &out) }
        }
        switch node {
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, m) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                out.append(0x22)
                escaped(m.keyUTF8)
                out.append(0x22)
                out.append(UInt8(ascii: ":"))
                emit(m.value, pool: pool, into: &out, slots: &slots, ends: &ends)
            }
            out.append(UInt8(ascii: "}"))
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                emit(item, pool: pool, into: &out, slots: &slots, ends: &ends)
            }
            out.append(UInt8(ascii: "]"))
        case .string(let parts):
            out.append(0x22)
            for p in parts {
                switch p {
                case .literal(_, let b): escaped(b)
                case .slot(let k): slot(k)
                }
            }
            out.append(0x22)
        case .number(let n): out.append(contentsOf: pool[n.canonical])
        case .bool(let b): out.append(contentsOf: Array((b ? "true" : "false").utf8))
        case .null: out.append(contentsOf: Array("null".utf8))
        case .slot(let k): slot(k)
        }
    }
}
