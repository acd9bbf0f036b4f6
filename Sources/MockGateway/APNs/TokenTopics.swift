import PushPayload

/// Which topics device tokens belong to (`--token-topics FILE`, lines `token topic[,topic...]`): the
/// gateway answers 400 DeviceTokenNotForTopic to a listed token sent with a topic its line does not name,
/// as APNs does for a token of another app. Tokens not in the file are not checked. A token listed on
/// several lines belongs to every topic they name.
///
/// Read once at start; lookups hash the token and the topic into two open-addressing tables and
/// allocate nothing.
struct TokenTopics: Equatable, Sendable {
    private struct Span: Equatable, Sendable {
        var offset: Int32
        var length: Int32
    }

    private struct Entry: Equatable, Sendable {
        var token: Span
        var hash: UInt64
        /// The token's topic indexes are members[first..<first + count].
        var first: Int32
        var count: Int32
    }

    /// The file it was read from.
    let file: String
    /// Distinct tokens listed.
    var tokenCount: Int { entries.count }
    /// Distinct topics named.
    var topicCount: Int { topics.count }

    /// Lower-case token bytes, then topic bytes, back to back.
    private let bytes: [UInt8]
    private let topics: [Span]
    private let topicHashes: [UInt64]
    private let entries: [Entry]
    private let members: [Int32]
    /// Open addressing by hash; an entry index, or -1 for an empty slot. A power of two, at most half full.
    private let tokenSlots: [Int32]
    private let topicSlots: [Int32]

    /// Reads `path`, a token file whose every line names topics; a bad line throws `FILE:LINE: reason`.
    init(path: String) throws(TokenFileError) {
        self.init(tokens: try DeviceTokens(path: path, requireTopics: true), file: path)
    }

    /// The table for `tokens`' topics (a token whose line named none belongs to no topic).
    init(tokens: DeviceTokens, file: String) {
        self.file = file
        var bytes: [UInt8] = []
        var topics: [Span] = [], topicHashes: [UInt64] = []
        var topicIndex: [String: Int32] = [:]
        var topicsOfToken: [[Int32]] = []
        var tokenIndex: [String: Int] = [:]
        var tokenSpans: [Span] = [], tokenHashes: [UInt64] = []
        for i in 0..<tokens.count {
            let names = tokens.topics(i)
            let token = tokens[i]
            let k: Int
            if let seen = tokenIndex[token] {
                k = seen
            } else {
                k = tokenSpans.count
                tokenIndex[token] = k
                tokenSpans.append(Span(offset: Int32(bytes.count), length: Int32(token.utf8.count)))
                tokenHashes.append(tokenHash(tokens.token(i)))
                bytes.append(contentsOf: token.utf8)
                topicsOfToken.append([])
            }
            for name in names {
                let t: Int32
                if let seen = topicIndex[name] {
                    t = seen
                } else {
                    t = Int32(topics.count)
                    topicIndex[name] = t
                    topics.append(Span(offset: Int32(bytes.count), length: Int32(name.utf8.count)))
                    var n = name
                    topicHashes.append(n.withUTF8 { Self.topicHash(UnsafeRawBufferPointer($0)) })
                    bytes.append(contentsOf: name.utf8)
                }
                if !topicsOfToken[k].contains(t) { topicsOfToken[k].append(t) }
            }
        }
        var members: [Int32] = []
        var entries: [Entry] = []
        for k in tokenSpans.indices {
            entries.append(Entry(token: tokenSpans[k], hash: tokenHashes[k], first: Int32(members.count),
                                 count: Int32(topicsOfToken[k].count)))
            members += topicsOfToken[k]
        }
        self.bytes = bytes
        self.topics = topics
        self.topicHashes = topicHashes
        self.entries = entries
        self.members = members
        tokenSlots = Self.slots(entries.map(\.hash))
        topicSlots = Self.slots(topicHashes)
    }

    /// An open-addressing table for `hashes` (linear probing), at most half full.
    private static func slots(_ hashes: [UInt64]) -> [Int32] {
        var size = 8
        while size < hashes.count * 2 { size <<= 1 }
        var slots = [Int32](repeating: -1, count: size)
        for (i, h) in hashes.enumerated() {
            var s = Int(truncatingIfNeeded: h) & (size - 1)
            while slots[s] >= 0 { s = (s + 1) & (size - 1) }
            slots[s] = Int32(i)
        }
        return slots
    }

    @inline(__always)
    static func topicHash(_ topic: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for c in topic { h = (h ^ UInt64(c)) &* 0x100_0000_01B3 }
        return mix(h)
    }

    /// Whether `token` (hex, either case, whose ``tokenHash(_:)`` is `hash`) may be sent with `topic`:
    /// nil when the token is not listed. Allocates nothing.
    @inline(__always)
    func allows(token: UnsafeRawBufferPointer, hash: UInt64, topic: UnsafeRawBufferPointer) -> Bool? {
        bytes.withUnsafeBytes { all -> Bool? in
            // Listed tokens are lower case; a request's hex may be either (| 0x20 lower-cases A-F, keeps digits).
            guard let k = Self.probe(tokenSlots, hash, { k in
                entries[k].hash == hash && Self.same(token, all, entries[k].token, fold: 0x20)
            }) else { return nil }
            let topicHash = Self.topicHash(topic)
            guard let t = Self.probe(topicSlots, topicHash, { t in
                topicHashes[t] == topicHash && Self.same(topic, all, topics[t], fold: 0)
            }) else { return false }
            let e = entries[k]
            var i = Int(e.first)
            let end = i + Int(e.count)
            while i < end {
                if members[i] == Int32(t) { return true }
                i += 1
            }
            return false
        }
    }

    /// The index in `slots` (linear probing from `hash`) that `matches`, or nil at the first empty slot.
    @inline(__always)
    private static func probe(_ slots: [Int32], _ hash: UInt64, _ matches: (Int) -> Bool) -> Int? {
        let mask = slots.count - 1
        var s = Int(truncatingIfNeeded: hash) & mask
        while true {
            let k = slots[s]
            if k < 0 { return nil }
            if matches(Int(k)) { return Int(k) }
            s = (s + 1) & mask
        }
    }

    /// Whether `text`, each byte OR-ed with `fold`, equals the stored bytes of `span`.
    @inline(__always)
    private static func same(_ text: UnsafeRawBufferPointer, _ all: UnsafeRawBufferPointer, _ span: Span, fold: UInt8) -> Bool {
        guard Int(span.length) == text.count else { return false }
        let base = Int(span.offset)
        var j = 0
        while j < text.count && text[j] | fold == all[base + j] { j += 1 }
        return j == text.count
    }
}
