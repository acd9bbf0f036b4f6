import PushVocabulary

/// The correlation id of a pipeline run's requests (`{{pipeline_id}}`): the run's prefix, `pb-` and four
/// hex digits and `-`, then the request's global index in at least ``digits`` decimal digits, e.g.
/// `pb-7f3a-000000123`. The service under test carries it into its pushes; the gateway finds it there
/// and so knows which request each push belongs to. Also writes `{{tokens:N}}`, the request's fan-out.
public enum PipelineID {
    /// The prefix's length: `pb-` + 4 hex digits + `-`.
    public static let prefixLength = 8
    /// The fewest digits of the index (zero-padded), so ids of one run have one length up to 10⁹ requests.
    static let digits = 9
    /// The longest id: the prefix and a 20-digit index.
    public static let maxLength = prefixLength + 20

    /// The prefix of a run whose tag is `tag` (its low 16 bits, as 4 lowercase hex digits).
    public static func prefix(tag: UInt16) -> [UInt8] {
        let hex = Array("0123456789abcdef".utf8)
        return Array("pb-".utf8) + (0..<4).map { hex[Int((tag >> (12 - 4 * UInt16($0))) & 0xF)] } + [UInt8(ascii: "-")]
    }

    /// The id of request `index` in a run with `prefix`, as text (tests and messages; the encoders write
    /// it in place).
    public static func text(prefix: [UInt8], index: UInt64) -> String {
        var out = [UInt8](repeating: 0, count: maxLength)
        let n = prefix.withUnsafeBytes { p in
            out.withUnsafeMutableBytes { write(prefix: p, index: index, to: $0.baseAddress!) }
        }
        return String(decoding: out[0..<n], as: UTF8.self)
    }

    @inline(__always)
    static func indexLength(_ index: UInt64) -> Int { max(digits, JSONWriting.decimalLength(index)) }

    /// The length of the request's id.
    @inline(__always)
    public static func length(_ request: RequestContext) -> Int {
        request.pipelinePrefix.count + indexLength(request.seq)
    }

    /// Writes `prefix` and `index` (zero-padded to ``digits``) at `dst`; returns the length.
    @inline(__always)
    public static func write(prefix: UnsafeRawBufferPointer, index: UInt64, to dst: UnsafeMutableRawPointer) -> Int {
        if let base = prefix.baseAddress, prefix.count > 0 { dst.copyMemory(from: base, byteCount: prefix.count) }
        let n = indexLength(index)
        var v = index
        var k = prefix.count + n - 1
        while k >= prefix.count {
            dst.storeBytes(of: UInt8(48 + v % 10), toByteOffset: k, as: UInt8.self)
            v /= 10
            k -= 1
        }
        return prefix.count + n
    }

    /// Writes the request's id at `dst`; returns the length.
    @inline(__always)
    static func write(_ request: RequestContext, to dst: UnsafeMutableRawPointer) -> Int {
        write(prefix: request.pipelinePrefix, index: request.seq, to: dst)
    }

    /// The token index of the `j`-th token of request `seq`'s fan-out of `count`, among `total` tokens.
    @inline(__always)
    static func fanOutTokenIndex(seq: UInt64, count: Int, j: Int, total: Int) -> Int {
        Int((seq &* UInt64(count) &+ UInt64(j)) % UInt64(total))
    }

    /// The longest `{{tokens:count}}` with tokens of at most `tokenLength` bytes (escaping included).
    static func tokenListLength(count: Int, tokenLength: Int) -> Int { 2 + count * (6 * tokenLength + 3) }

    /// The length of the request's `{{tokens:count}}`: `["t1","t2"]`, or `[]` without tokens.
    @inline(__always)
    static func tokenListLength(_ request: RequestContext, count: Int) -> Int {
        guard let tokens = request.tokens, tokens.count > 0 else { return 2 }
        var n = 2 + count * 3 - 1
        for j in 0..<count {
            n += JSONWriting.escapedLength(tokens.token(fanOutTokenIndex(seq: request.seq, count: count, j: j, total: tokens.count)))
        }
        return n
    }

    /// Writes the request's `{{tokens:count}}` at `dst`; returns the length.
    @inline(__always)
    static func writeTokenList(_ request: RequestContext, count: Int, to dst: UnsafeMutableRawPointer) -> Int {
        dst.storeBytes(of: UInt8(ascii: "["), as: UInt8.self)
        var o = 1
        if let tokens = request.tokens, tokens.count > 0 {
            for j in 0..<count {
                if j > 0 { dst.storeBytes(of: UInt8(ascii: ","), toByteOffset: o, as: UInt8.self); o += 1 }
                dst.storeBytes(of: UInt8(0x22), toByteOffset: o, as: UInt8.self)
                o += 1
                o += JSONWriting.writeEscaped(tokens.token(fanOutTokenIndex(seq: request.seq, count: count, j: j, total: tokens.count)),
                                              to: dst + o)
                dst.storeBytes(of: UInt8(0x22), toByteOffset: o, as: UInt8.self)
                o += 1
            }
        }
        dst.storeBytes(of: UInt8(ascii: "]"), toByteOffset: o, as: UInt8.self)
        return o + 1
    }
}

extension PlaceholderKind {
    /// Whether its text's length depends on the request beyond a fixed bound's worth of digits.
    var hasVariableLength: Bool {
        switch self {
        case .token, .text, .pipelineID, .tokenList: return true
        case .seq, .badge, .messageID, .uuid: return false
        }
    }
}
