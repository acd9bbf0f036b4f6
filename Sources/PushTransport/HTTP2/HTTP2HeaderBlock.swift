import CNGHTTP2

/// A prebuilt request header block: fixed fields stored once (nghttp2 reads them with
/// NO_COPY_NAME/NO_COPY_VALUE), plus numbered per-request fields whose values each request writes
/// into its stream slot (e.g. `:path` with the device token, `apns-id`).
///
/// Immutable after init, so it is safe to share between loops.
///
/// ```swift
/// let block = try HTTP2HeaderBlock.request(authority: "localhost", path: nil,  // :path is per-request field 0
///                                          headers: [("apns-topic", "com.example")], perRequestHeaders: ["apns-id"])
/// ```
public final class HTTP2HeaderBlock: @unchecked Sendable {
    // @unchecked: every stored property is written in init and only read afterwards.

    /// One field of a block.
    public enum Field: Sendable {
        /// A name and value fixed for every request.
        case fixed(name: String, value: String)
        /// A name whose value each request supplies (numbered 0, 1, … in order of appearance). Sent
        /// without HPACK indexing unless `indexed`: a value that changes per request would only churn
        /// both ends' dynamic tables (an insert and an eviction each, for no later hit).
        case perRequest(name: String, indexed: Bool = false)
        /// A per-request field (numbered with the others) whose value is new on every request, e.g.
        /// `apns-id`. Its value never enters the HPACK dynamic table, except with the first request of a
        /// connection: that puts the name in the table, so every later request refers to the name by
        /// index instead of Huffman-coding it again, and evicts nothing.
        case unique(name: String)
    }

    /// Why a block was rejected.
    public struct InvalidBlock: Error, Sendable, CustomStringConvertible {
        /// What was wrong, naming the field.
        public var description: String
    }

    let storage: UnsafeMutableRawPointer
    let template: UnsafeMutablePointer<nghttp2_nv>
    /// Number of fields (template entries).
    public let count: Int
    /// Template index of per-request field k.
    let dynamicIndex: [Int]
    /// Number of per-request fields.
    var perRequestFieldCount: Int { dynamicIndex.count }
    /// Template indices of the `.unique` fields (sent NO_INDEX except on a connection's first request).
    let uniqueIndex: [Int]
    /// How `ResponseMessageRules` starts judging the responses to this block's requests (it depends on
    /// the method); nil when `:method` is a per-request field, whose value each request sets.
    let responseMessage: ResponseMessage?

    /// Builds a block; pseudo-header fields (":method", …) must come first and names must be lowercase.
    public init(_ fields: [Field]) throws(InvalidBlock) {
        var total = 0
        var sawRegular = false
        for f in fields {
            let name: String
            switch f {
            case .fixed(let n, let v): name = n; total += n.utf8.count + v.utf8.count
            case .perRequest(let n, _), .unique(let n): name = n; total += n.utf8.count
            }
            if name.isEmpty { throw InvalidBlock(description: "empty header name") }
            if name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) {
                throw InvalidBlock(description: "header name '\(name)' must be lowercase in HTTP/2")
            }
            if name.hasPrefix(":") {
                if sawRegular { throw InvalidBlock(description: "pseudo-header '\(name)' after a regular header") }
            } else {
                sawRegular = true
            }
        }
        let store = UnsafeMutableRawPointer.allocate(byteCount: max(total, 1), alignment: 1)
        let tmpl = UnsafeMutablePointer<nghttp2_nv>.allocate(capacity: max(fields.count, 1))
        count = fields.count
        var dyn: [Int] = []
        var unique: [Int] = []
        var off = 0
        func put(_ s: String) -> (UnsafeMutablePointer<UInt8>, Int) {
            let p = (store + off).assumingMemoryBound(to: UInt8.self)
            var n = 0
            for b in s.utf8 { p[n] = b; n += 1 }
            off += n
            return (p, n)
        }
        let flags = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)
        for (i, f) in fields.enumerated() {
            switch f {
            case .fixed(let n, let v):
                let (np, nl) = put(n)
                let (vp, vl) = put(v)
                tmpl[i] = nghttp2_nv(name: np, value: vp, namelen: nl, valuelen: vl, flags: flags)
            case .perRequest(let n, let indexed):
                let (np, nl) = put(n)
                tmpl[i] = nghttp2_nv(name: np, value: nil, namelen: nl, valuelen: 0,
                                     flags: indexed ? flags : flags | UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue))
                dyn.append(i)
            case .unique(let n):
                let (np, nl) = put(n)
                tmpl[i] = nghttp2_nv(name: np, value: nil, namelen: nl, valuelen: 0,
                                     flags: flags | UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue))
                dyn.append(i)
                unique.append(i)
            }
        }
        dynamicIndex = dyn
        uniqueIndex = unique
        var method = 0
        while method < fields.count && !(tmpl[method].namelen == 7 && ResponseMessageRules.equals(tmpl[method].name, 7, ":method")) {
            method += 1
        }
        responseMessage = method == fields.count ? ResponseMessage(method: nil, 0)
            : tmpl[method].value.map { ResponseMessage(method: $0, tmpl[method].valuelen) }
        storage = store
        template = tmpl
    }

    /// A request block: `:method`, `:scheme`, `:authority`, `:path` (per-request field 0 when `path` is nil,
    /// HPACK-indexed when `indexPath`: worth it when few distinct paths recur), then fixed `headers`, then
    /// `perRequestHeaders` (numbered after `:path`'s field if it is per-request); those named in
    /// `uniqueHeaders` are `.unique` fields.
    public static func request(method: String = "POST", scheme: String = "http", authority: String, path: String?,
                               indexPath: Bool = false, headers: [(String, String)] = [],
                               perRequestHeaders: [String] = [], uniqueHeaders: Set<String> = []) throws(InvalidBlock) -> HTTP2HeaderBlock {
        var fields: [Field] = [.fixed(name: ":method", value: method), .fixed(name: ":scheme", value: scheme),
                               .fixed(name: ":authority", value: authority)]
        if let path { fields.append(.fixed(name: ":path", value: path)) } else {
            fields.append(.perRequest(name: ":path", indexed: indexPath))
        }
        for (n, v) in headers { fields.append(.fixed(name: n, value: v)) }
        for n in perRequestHeaders { fields.append(uniqueHeaders.contains(n) ? .unique(name: n) : .perRequest(name: n)) }
        return try HTTP2HeaderBlock(fields)
    }

    deinit {
        storage.deallocate()
        template.deallocate()
    }
}
