// Payload templates: ordinary JSON files with `{{…}}` placeholders, compiled once into static byte
// runs and slots (docs/payloads.md). The compiled form is what the zerocopy encoder walks; the
// node tree is what the `copy` and `foundation` encoders walk.
//
// Canonical output: compact JSON, object keys sorted (Swift String order, which is what
// Foundation's JSONEncoder `.sortedKeys` uses), strings escaped like JSONEncoder with
// `.withoutEscapingSlashes`, non-integer numbers formatted by JSONEncoder at compile time. That is
// the only way a Codable baseline can produce byte-identical output: JSONEncoder does not keep
// key order.

import Foundation
import PushVocabulary

/// An error in a payload template, with where it is and why.
public struct TemplateError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The template's file name (or `<template>` for text given directly).
    public var file: String
    /// 1-based line (0 when the problem is the whole file).
    public var line: Int
    /// 1-based column, in Unicode scalars.
    public var column: Int
    /// What is wrong.
    public var reason: String

    /// `file:line:column: reason`, or `file: reason` when the problem is the whole file (line 0).
    public var description: String { line > 0 ? "\(file):\(line):\(column): \(reason)" : "\(file): \(reason)" }
}

/// What a placeholder stands for.
enum PlaceholderKind: Equatable, Sendable {
    /// `{{seq}}`: the request number (a number; bare or inside a string).
    case seq
    /// `{{badge}}`: the badge number (a number; bare or inside a string).
    case badge
    /// `{{token}}`: the device token (inside a string).
    case token
    /// `{{message_id}}`: the request's message id, a UUID (inside a string).
    case messageID
    /// `{{uuid}}`: a UUID derived from the message id; the n-th `{{uuid}}` of a template gets the
    /// n-th derived UUID (inside a string).
    case uuid(index: Int)
    /// `{{text}}`: the request's free text, escaped (inside a string).
    case text
    /// `{{pipeline_id}}`: the request's correlation id, the run's prefix and its global index
    /// (`pb-7f3a-000000123`), which a pipeline run finds again in the pushes (inside a string).
    case pipelineID
    /// `{{tokens:N}}`: a JSON array of N device-token strings, the request's fan-out (a bare value).
    case tokenList(count: Int)

    var isNumber: Bool { self == .seq || self == .badge }
    /// Whether the placeholder stands for a whole value rather than text inside a string.
    var isBare: Bool {
        if case .tokenList = self { return true }
        return isNumber
    }
}

/// Bounds used to decide at load time whether a template's output can exceed the size limit.
public struct TemplateOptions: Sendable {
    /// The size limit in bytes (`PayloadLimits`), or `nil` for none.
    public var limit: Int?
    /// Longest device token `{{token}}` will carry (bytes).
    public var maxTokenLength: Int
    /// Longest `{{text}}` (bytes before escaping; the worst case assumes every byte needs `\u00XX`).
    var maxTextLength: Int
    /// Largest `{{seq}}`.
    var maxSeq: UInt64
    /// Load a template even when its output can exceed `limit` (the per-request check still applies).
    var allowOversize: Bool

    /// Options; the defaults are the APNs alert limit and 64-hex-character tokens.
    public init(limit: Int? = 4096, maxTokenLength: Int = 64, maxTextLength: Int = 0,
                maxSeq: UInt64 = UInt64(UInt32.max), allowOversize: Bool = false) {
        self.limit = limit
        self.maxTokenLength = maxTokenLength
        self.maxTextLength = maxTextLength
        self.maxSeq = maxSeq
        self.allowOversize = allowOversize
    }
}

/// A compiled payload template, immutable and shareable across threads.
///
///     let t = try PayloadTemplate(path: "payload.json", options: .init(limit: PayloadLimits.apns(.alert)))
///     let encoder = makePayloadEncoder(.zerocopy, template: t)
public final class PayloadTemplate: @unchecked Sendable {
    // @unchecked: every stored property is set in init and never mutated; the raw buffers are
    // owned by this object and freed in deinit.

    /// Where the template came from (for messages).
    public let file: String
    /// The node tree, for the tree-walking encoders.
    let root: TemplateNode
    /// Static bytes: every byte of the output that does not come from a slot.
    let staticBytes: UnsafeMutableRawBufferPointer
    /// Slots in output order; `staticEnds[k]` is where the static run before slot k ends.
    let slots: UnsafeMutableBufferPointer<PlaceholderKind>
    let staticEnds: UnsafeMutableBufferPointer<Int>
    /// The tree's pooled UTF-8 (keys, literal strings, numbers), indexed by the ranges in the nodes.
    let literals: UnsafeMutableRawBufferPointer
    /// Placeholders used, in output order.
    var placeholders: [PlaceholderKind] { Array(slots) }
    /// Bytes of output that never change.
    var staticLength: Int { staticBytes.count }
    /// The largest output under the options the template was loaded with.
    public let maxLength: Int
    /// The largest output for any request when the template has no variable-length string slot
    /// (`{{token}}`, `{{text}}`), else nil. When the slot is at least this big, the zerocopy
    /// encoder skips the length pass.
    let lengthBound: Int?

    /// The bytes of the default APNs template: Apple's and Firebase's example plus a message id.
    public static let defaultAPNsText = PushNotification.example.templateJSON()

    /// The default FCM HTTP v1 body: the same notification sent through FCM to an Apple device.
    public static let defaultFCMText = """
        {"message":{"token":"{{token}}","notification":{"title":"Portugal vs. Denmark","body":"great match!"},\
        "apns":{"payload":{"aps":{"badge":1}}},"data":{"customKey":"customValue","message_id":"{{message_id}}"}}}
        """

    /// The default APNs template, compiled.
    public static func defaultAPNs(options: TemplateOptions = .init()) -> PayloadTemplate {
        try! PayloadTemplate(text: defaultAPNsText, file: "<default apns template>", options: options)
    }

    /// The default FCM template, compiled (FCM registration tokens run to ~160 bytes).
    public static func defaultFCM(options: TemplateOptions = .init(maxTokenLength: 256)) -> PayloadTemplate {
        try! PayloadTemplate(text: defaultFCMText, file: "<default fcm template>", options: options)
    }

    /// The template of a run: the file at `path`, or the protocol's default template when `path` is
    /// nil, checked against the protocol's size limit.
    ///
    ///     let t = try PayloadTemplate.forRun(path: options.payload, protocol: .apns, pushType: .alert,
    ///                                        maxTokenLength: tokens.maxLength)
    public static func forRun(path: String?, protocol proto: PushProtocol, pushType: APNsPushType = .alert,
                              fcmTopic: Bool = false, maxTokenLength: Int, maxTextLength: Int = 0,
                              allowOversize: Bool = false) throws(TemplateError) -> PayloadTemplate {
        let options = TemplateOptions(limit: PayloadLimits.limit(for: proto, pushType: pushType, topic: fcmTopic),
                                      maxTokenLength: maxTokenLength, maxTextLength: maxTextLength,
                                      allowOversize: allowOversize)
        if let path { return try PayloadTemplate(path: path, options: options) }
        switch proto {
        case .apns: return try PayloadTemplate(text: defaultAPNsText, file: "<default apns template>", options: options)
        case .fcm: return try PayloadTemplate(text: defaultFCMText, file: "<default fcm template>", options: options)
        }
    }

    /// Loads and compiles a template file.
    public convenience init(path: String, options: TemplateOptions = .init()) throws(TemplateError) {
        let bytes: [UInt8]
        do throws(InputFileError) { bytes = try InputFile.bytes(path) } catch {
            throw TemplateError(file: path, line: 0, column: 0, reason: error.reason)
        }
        try self.init(bytes: bytes, file: path, options: options)
    }

    /// Compiles template text.
    public convenience init(text: String, file: String = "<template>", options: TemplateOptions = .init()) throws(TemplateError) {
        try self.init(bytes: Array(text.utf8), file: file, options: options)
    }

    /// Compiles template bytes.
    public init(bytes: [UInt8], file: String = "<template>", options: TemplateOptions = .init()) throws(TemplateError) {
        self.file = file
        var compiler = TemplateCompiler(bytes: bytes, file: file)
        let compiled = try compiler.compile()
        root = compiled.root
        var out: [UInt8] = []
        var slotList: [PlaceholderKind] = []
        var ends: [Int] = []
        TemplateCompiler.emit(compiled.root, pool: compiled.pool, into: &out, slots: &slotList, ends: &ends)
        literals = .allocate(byteCount: max(compiled.pool.bytes.count, 1), alignment: 16)
        literals.copyBytes(from: compiled.pool.bytes)
        staticBytes = .allocate(byteCount: max(out.count, 1), alignment: 16)
        staticBytes.copyBytes(from: out)
        slots = .allocate(capacity: max(slotList.count, 1))
        _ = slots.initialize(from: slotList)
        staticEnds = .allocate(capacity: max(ends.count, 1))
        _ = staticEnds.initialize(from: ends)
        staticCount = out.count
        slotCount = slotList.count

        var worst = out.count
        for s in slotList {
            switch s {
            case .seq: worst += JSONWriting.decimalLength(options.maxSeq)
            case .badge: worst += 20
            case .token: worst += options.maxTokenLength
            case .messageID, .uuid: worst += PushUUID.textLength
            case .text: worst += 6 * options.maxTextLength
            case .pipelineID: worst += PipelineID.maxLength
            case .tokenList(let n): worst += PipelineID.tokenListLength(count: n, tokenLength: options.maxTokenLength)
            }
        }
        maxLength = worst
        lengthBound = slotList.contains { $0.hasVariableLength } ? nil
            : out.count + slotList.reduce(0) { $0 + ($1.isNumber ? 20 : PushUUID.textLength) }
        if let limit = options.limit, worst > limit, !options.allowOversize {
            let (line, column) = compiled.largestPadPosition ?? (1, 1)
            throw TemplateError(file: file, line: line, column: column, reason:
                "output can reach \(worst) bytes (\(out.count) fixed), over the \(limit)-byte limit for this push type")
        }
    }

    // The exact counts (the allocations above are padded to at least 1 element).
    let staticCount: Int
    let slotCount: Int

    deinit {
        staticBytes.deallocate()
        slots.deallocate()
        staticEnds.deallocate()
        literals.deallocate()
    }

    /// The exact length of the payload for `request`. Allocates nothing.
    @inline(__always)
    public func encodedLength(_ request: RequestContext) -> Int {
        var n = staticCount
        for k in 0..<slotCount {
            switch slots[k] {
            case .seq: n += JSONWriting.decimalLength(request.seq)
            case .badge: n += JSONWriting.decimalLength(request.badge)
            case .token: n += JSONWriting.escapedLength(request.token)
            case .messageID, .uuid: n += PushUUID.textLength
            case .text: n += JSONWriting.escapedLength(request.text)
            case .pipelineID: n += PipelineID.length(request)
            case .tokenList(let count): n += PipelineID.tokenListLength(request, count: count)
            }
        }
        return n
    }

    /// Whether the template has a `{{pipeline_id}}`.
    public var hasPipelineID: Bool { placeholders.contains(.pipelineID) }
    /// The pushes a request asks for: the N of its `{{tokens:N}}` (the largest when there are several),
    /// else 1.
    public var fanOut: Int {
        placeholders.compactMap { if case .tokenList(let n) = $0 { n } else { nil } }.max() ?? 1
    }

    /// Whether the payload for `request` would be over `limit` bytes (count it as PayloadTooLarge
    /// and do not send it, unless the user asked to send oversize payloads).
    @inline(__always)
    func wouldExceed(_ limit: Int, _ request: RequestContext) -> Bool {
        encodedLength(request) > limit
    }

    /// Writes the payload at `dst` (which must have `encodedLength(request)` bytes); returns the length.
    /// This is the zerocopy encoder's whole job: one pass, static runs by memcpy, no allocation.
    @inline(__always)
    func write(_ request: RequestContext, to dst: UnsafeMutableRawPointer) -> Int {
        let src = staticBytes.baseAddress!
        var o = 0
        var s = 0
        for k in 0..<slotCount {
            let e = staticEnds[k]
            (dst + o).copyMemory(from: src + s, byteCount: e - s)
            o += e - s
            s = e
            switch slots[k] {
            case .seq: o += JSONWriting.writeDecimal(request.seq, to: dst + o)
            case .badge: o += JSONWriting.writeDecimal(request.badge, to: dst + o)
            case .token: o += JSONWriting.writeEscaped(request.token, to: dst + o)
            case .messageID: request.messageID.write(to: dst + o); o += PushUUID.textLength
            case .uuid(let index): request.messageID.derived(index).write(to: dst + o); o += PushUUID.textLength
            case .text: o += JSONWriting.writeEscaped(request.text, to: dst + o)
            case .pipelineID: o += PipelineID.write(request, to: dst + o)
            case .tokenList(let count): o += PipelineID.writeTokenList(request, count: count, to: dst + o)
            }
        }
        (dst + o).copyMemory(from: src + s, byteCount: staticCount - s)
        return o + staticCount - s
    }
}

// MARK: - Node tree

/// A template as a tree: what the `copy` and `foundation` encoders walk per request.
indirect enum TemplateNode {
    /// Members sorted by key (canonical order); keys kept as String and as UTF-8.
    case object([(key: String, keyUTF8: Range<Int>, value: TemplateNode)])
    case array([TemplateNode])
    /// Literal parts (unescaped UTF-8) and slots, in order.
    case string([StringPart])
    case number(NumberLiteral)
    case bool(Bool)
    case null
    /// A bare number placeholder (`{{seq}}`, `{{badge}}`).
    case slot(PlaceholderKind)
}

/// UTF-8 bytes of keys, literal strings and numbers, pooled so the tree holds plain ranges (walking
/// it touches no array buffers).
final class BytePool {
    var bytes: [UInt8] = []
    func intern(_ b: [UInt8]) -> Range<Int> {
        let start = bytes.count
        bytes.append(contentsOf: b)
        return start..<bytes.count
    }
    subscript(_ r: Range<Int>) -> ArraySlice<UInt8> { bytes[r] }
}

enum StringPart {
    case literal(String, Range<Int>)
    case slot(PlaceholderKind)
}

/// A literal number, typed the way Codable would hold it, with its canonical text.
struct NumberLiteral {
    enum Value { case int(Int64), double(Double) }
    var value: Value
    var canonical: Range<Int>
}
