// The three payload encoder variants behind one protocol (docs/architecture.md):
//   foundation: resolve the template into Codable values and run JSONEncoder, as a typical provider does;
//   copy:       a hand-written tree walker that escapes into a reusable scratch buffer, then one memcpy;
//   zerocopy:   the compiled template written once, straight into the caller's slot.
// All three emit byte-identical payloads for the same request (tests check it).

import Foundation
import PushVocabulary

/// Which encoder (`--encoder`).
public enum EncoderVariant: String, Sendable, CaseIterable {
    /// JSONEncoder baseline; hand-written encoder plus a copy; compiled template written in place.
    case foundation, copy, zerocopy

    /// True when the bytes are written straight into the send slot, so the transport can send the
    /// slot with NGHTTP2_DATA_FLAG_NO_COPY; false when the transport copies them (nghttp2's
    /// ordinary read callback).
    public var writesInPlace: Bool { self == .zerocopy }
}

/// Encodes request k's payload into memory the caller owns.
///
///     let encoder = makePayloadEncoder(.zerocopy, template: .defaultAPNs())
///     guard let n = encoder.encode(ctx, into: slot) else { /* over the slot: PayloadTooLarge */ }
public protocol PayloadEncoder: AnyObject {
    /// The variant.
    var variant: EncoderVariant { get }
    /// The compiled template it encodes.
    var template: PayloadTemplate { get }
    /// Writes the payload for `request` at the start of `slot`; returns its length, or `nil` (and
    /// writes nothing) when it does not fit in `slot`. Use `template.wouldExceed` for the limit check.
    func encode(_ request: RequestContext, into slot: UnsafeMutableRawBufferPointer) -> Int?
}

/// The encoder of `variant` for `template`.
public func makePayloadEncoder(_ variant: EncoderVariant, template: PayloadTemplate) -> any PayloadEncoder {
    switch variant {
    case .foundation: return FoundationEncoder(template: template)
    case .copy: return CopyEncoder(template: template)
    case .zerocopy: return ZeroCopyEncoder(template: template)
    }
}

/// The zerocopy variant: one pass over the compiled template, static runs by memcpy, slots written
/// in place. No intermediate buffer and no allocation.
public final class ZeroCopyEncoder: PayloadEncoder, Sendable {
    /// The compiled template.
    public let template: PayloadTemplate
    /// `.zerocopy`.
    public var variant: EncoderVariant { .zerocopy }

    /// An encoder for `template`.
    public init(template: PayloadTemplate) { self.template = template }

    /// Writes the payload straight into `slot`; `nil` when it does not fit. Allocates nothing.
    @inline(__always)
    public func encode(_ request: RequestContext, into slot: UnsafeMutableRawBufferPointer) -> Int? {
        guard let base = slot.baseAddress else { return nil }
        if let bound = template.lengthBound, bound <= slot.count { return template.write(request, to: base) }
        guard template.encodedLength(request) <= slot.count else { return nil }
        return template.write(request, to: base)
    }
}

/// The copy variant: walks the template tree per request, escaping every key and string into a
/// reusable scratch buffer (what a hand-written provider encoder does), then copies it into `slot`.
/// Not thread-safe: one encoder per loop thread.
final class CopyEncoder: PayloadEncoder {
    /// The compiled template (its tree is walked per request).
    public let template: PayloadTemplate
    /// `.copy`.
    public var variant: EncoderVariant { .copy }
    // A growable scratch buffer, reused across requests: it grows (rarely) but never shrinks.
    private var buf: UnsafeMutableRawPointer
    private var capacity: Int
    private var length = 0
    private var uuidIndex = 0

    /// An encoder for `template`; the scratch buffer is reserved once and reused.
    init(template: PayloadTemplate) {
        self.template = template
        capacity = max(template.maxLength, 8192)
        buf = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { buf.deallocate() }

    // Encodes into the scratch buffer; the bytes are valid until the next call.
    private func encodeToScratch(_ request: RequestContext) -> UnsafeRawBufferPointer {
        length = 0
        uuidIndex = 0
        walk(template.root, request)
        return UnsafeRawBufferPointer(start: buf, count: length)
    }

    /// Encodes into the scratch buffer, then copies into `slot`; `nil` when it does not fit.
    public func encode(_ request: RequestContext, into slot: UnsafeMutableRawBufferPointer) -> Int? {
        let bytes = encodeToScratch(request)
        guard bytes.count <= slot.count else { return nil }
        if bytes.count > 0 { slot.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        return bytes.count
    }

    @inline(__always) private func reserve(_ n: Int) {
        if length + n <= capacity { return }
        var c = capacity * 2
        while c < length + n { c *= 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: c, alignment: 16)
        grown.copyMemory(from: buf, byteCount: length)
        buf.deallocate()
        buf = grown
        capacity = c
    }

    @inline(__always) private func byte(_ b: UInt8) {
        reserve(1)
        buf.storeBytes(of: b, toByteOffset: length, as: UInt8.self)
        length += 1
    }

    @inline(__always) private func bytes(_ src: UnsafeRawBufferPointer) {
        guard let base = src.baseAddress, src.count > 0 else { return }
        reserve(src.count)
        (buf + length).copyMemory(from: base, byteCount: src.count)
        length += src.count
    }

    private func bytes(_ s: StaticString) {
        bytes(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// Escapes every string on every request (the static parts too): what a hand-written encoder
    /// without a compiled template does.
    private func escaped(_ src: UnsafeRawBufferPointer) {
        reserve(6 * src.count)
        length += JSONWriting.writeEscaped(src, to: buf + length)
    }

    private func decimal(_ v: Int64) {
        reserve(20)
        length += JSONWriting.writeDecimal(v, to: buf + length)
    }

    private func decimal(_ v: UInt64) {
        reserve(20)
        length += JSONWriting.writeDecimal(v, to: buf + length)
    }

    private func uuid(_ u: PushUUID) {
        reserve(PushUUID.textLength)
        u.write(to: buf + length)
        length += PushUUID.textLength
    }

    private func slot(_ k: PlaceholderKind, _ r: RequestContext) {
        switch k {
        case .seq: decimal(r.seq)
        case .badge: decimal(r.badge)
        case .token: escaped(r.token)
        case .messageID: uuid(r.messageID)
        case .uuid: uuid(r.messageID.derived(uuidIndex)); uuidIndex += 1
        case .text: escaped(r.text)
        case .pipelineID:
            reserve(PipelineID.maxLength)
            length += PipelineID.write(r, to: buf + length)
        case .tokenList(let n):
            reserve(PipelineID.tokenListLength(r, count: n))
            length += PipelineID.writeTokenList(r, count: n, to: buf + length)
        }
    }

    private func walk(_ node: TemplateNode, _ r: RequestContext) {
        switch node {
        case .object(let members):
            byte(UInt8(ascii: "{"))
            // Index loops, not for-in: an unspecialized (debug) IndexingIterator over these
            // element types heap-allocates per element, which would break the zero-allocation test.
            for i in 0..<members.count {
                let m = members[i]
                if i > 0 { byte(UInt8(ascii: ",")) }
                byte(0x22)
                escaped(UnsafeRawBufferPointer(rebasing: template.literals[m.keyUTF8]))
                byte(0x22)
                byte(UInt8(ascii: ":"))
                walk(m.value, r)
            }
            byte(UInt8(ascii: "}"))
        case .array(let items):
            byte(UInt8(ascii: "["))
            for i in 0..<items.count {
                if i > 0 { byte(UInt8(ascii: ",")) }
                walk(items[i], r)
            }
            byte(UInt8(ascii: "]"))
        case .string(let parts):
            byte(0x22)
            for i in 0..<parts.count {
                switch parts[i] {
                case .literal(_, let b): escaped(UnsafeRawBufferPointer(rebasing: template.literals[b]))
                case .slot(let k): slot(k, r)
                }
            }
            byte(0x22)
        case .number(let n): bytes(UnsafeRawBufferPointer(rebasing: template.literals[n.canonical]))
        case .bool(let b): bytes(b ? "true" : "false")
        case .null: bytes("null")
        case .slot(let k): slot(k, r)
        }
    }
}

/// The foundation variant (baseline): per request, resolve the template into Codable values
/// (Strings, Ints, nested containers: the struct a provider would fill) and encode them with
/// JSONEncoder (`.sortedKeys`, `.withoutEscapingSlashes`), then copy the Data into `slot`.
final class FoundationEncoder: PayloadEncoder {
    /// The compiled template (its tree is resolved per request).
    public let template: PayloadTemplate
    /// `.foundation`.
    public var variant: EncoderVariant { .foundation }
    private let encoder: JSONEncoder

    /// An encoder for `template`, with one reused JSONEncoder.
    init(template: PayloadTemplate) {
        self.template = template
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    }

    // The payload as Data (what a provider hands its HTTP client).
    private func encodeData(_ request: RequestContext) -> Data {
        var uuidIndex = 0
        let value = FoundationValue.resolve(template.root, request, &uuidIndex)
        // Only non-finite doubles can fail, and the compiler rejected those.
        return try! encoder.encode(value)
    }

    /// Encodes with JSONEncoder, then copies the Data into `slot`; `nil` when it does not fit.
    public func encode(_ request: RequestContext, into slot: UnsafeMutableRawBufferPointer) -> Int? {
        let data = encodeData(request)
        guard data.count <= slot.count else { return nil }
        data.copyBytes(to: slot.bindMemory(to: UInt8.self), count: data.count)
        return data.count
    }
}

/// A resolved template value, Codable the way a provider's payload struct is.
enum FoundationValue: Encodable {
    case object([(String, FoundationValue)])
    case array([FoundationValue])
    case string(String)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case bool(Bool)
    case null

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let members):
            var c = encoder.container(keyedBy: Key.self)
            for (k, v) in members { try c.encode(v, forKey: Key(stringValue: k)) }
        case .array(let items):
            var c = encoder.unkeyedContainer()
            for v in items { try c.encode(v) }
        case .string(let s): var c = encoder.singleValueContainer(); try c.encode(s)
        case .int(let i): var c = encoder.singleValueContainer(); try c.encode(i)
        case .uint(let u): var c = encoder.singleValueContainer(); try c.encode(u)
        case .double(let d): var c = encoder.singleValueContainer(); try c.encode(d)
        case .bool(let b): var c = encoder.singleValueContainer(); try c.encode(b)
        case .null: var c = encoder.singleValueContainer(); try c.encodeNil()
        }
    }

    static func slotString(_ k: PlaceholderKind, _ r: RequestContext, _ uuidIndex: inout Int) -> String {
        switch k {
        case .seq: return String(r.seq)
        case .badge: return String(r.badge)
        case .token: return String(decoding: r.token, as: UTF8.self)
        case .messageID: return r.messageID.description
        case .uuid:
            defer { uuidIndex += 1 }
            return r.messageID.derived(uuidIndex).description
        case .text: return String(decoding: r.text, as: UTF8.self)
        case .pipelineID: return PipelineID.text(prefix: Array(r.pipelinePrefix), index: r.seq)
        case .tokenList: return ""  // unreachable: a bare placeholder, resolved in `resolve`
        }
    }

    static func resolve(_ node: TemplateNode, _ r: RequestContext, _ uuidIndex: inout Int) -> FoundationValue {
        switch node {
        case .object(let members):
            var out: [(String, FoundationValue)] = []
            out.reserveCapacity(members.count)
            for m in members { out.append((m.key, resolve(m.value, r, &uuidIndex))) }
            return .object(out)
        case .array(let items):
            var out: [FoundationValue] = []
            for i in items { out.append(resolve(i, r, &uuidIndex)) }
            return .array(out)
        case .string(let parts):
            if parts.count == 1, case .literal(let s, _) = parts[0] { return .string(s) }
            var s = ""
            for p in parts {
                switch p {
                case .literal(let t, _): s += t
                case .slot(let k): s += slotString(k, r, &uuidIndex)
                }
            }
            return .string(s)
        case .number(let n):
            switch n.value {
            case .int(let i): return .int(i)
            case .double(let d): return .double(d)
            }
        case .bool(let b): return .bool(b)
        case .null: return .null
        case .slot(let k):
            switch k {
            case .seq: return .uint(r.seq)
            case .badge: return .int(r.badge)
            case .tokenList(let n):
                guard let tokens = r.tokens, tokens.count > 0 else { return .array([]) }
                return .array((0..<n).map { j in
                    .string(String(decoding: tokens.token(PipelineID.fanOutTokenIndex(seq: r.seq, count: n, j: j, total: tokens.count)),
                                   as: UTF8.self))
                })
            default: return .string(slotString(k, r, &uuidIndex))  // unreachable: the compiler allows only numbers bare
            }
        }
    }
}

// Encoders with per-request state are confined to one thread (one per driver loop).
@available(*, unavailable) extension CopyEncoder: Sendable {}
@available(*, unavailable) extension FoundationEncoder: Sendable {}
