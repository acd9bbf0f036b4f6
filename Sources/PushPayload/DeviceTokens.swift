// Device tokens (APNs: lowercase hex; FCM: registration tokens as written) kept in one block, ready to be written into a `:path`
// (`/3/device/<token>`) or a `{{token}}` with no per-request allocation.

import Foundation

/// An error in a token file: file, line and reason.
public struct TokenFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file.
    public var file: String
    /// 1-based line (0 when the problem is the whole file).
    public var line: Int
    /// What is wrong.
    public var reason: String

    /// `file:line: reason`.
    public var description: String { line > 0 ? "\(file):\(line): \(reason)" : "\(file): \(reason)" }
}

/// A list of device tokens as lowercase hex text, stored contiguously, each right after the APNs
/// path prefix `/3/device/`, so both the token and the whole `:path` value are ready-made bytes
/// (an nghttp2 header can point at them with NO_COPY). Immutable after creation.
///
///     let tokens = try DeviceTokens(path: "tokens.txt")      // or DeviceTokens(synthetic: 10_000, seed: 1)
///     tokens.token(k % tokens.count)                         // 64 bytes of lowercase hex
///     tokens.apnsPath(k % tokens.count)                      // "/3/device/<token>"
public final class DeviceTokens: @unchecked Sendable {
    // @unchecked: storage is written only in init and freed in deinit.
    private let storage: UnsafeMutableRawBufferPointer
    private let offsets: UnsafeMutableBufferPointer<Int>  // count + 1 entries: where each path starts (and the end)
    // The topic lists of `token topic[,topic...]` lines, as written: list i is topicStarts[i]..<topicStarts[i + 1]
    // of topicStorage, its first topic ends at firstTopicEnds[i]. Empty (no allocation) when no line has topics.
    private let topicStorage: UnsafeMutableRawBufferPointer
    private let topicStarts: UnsafeMutableBufferPointer<Int>
    private let firstTopicEnds: UnsafeMutableBufferPointer<Int>

    /// The `:path` prefix stored before every token.
    public static let apnsPathPrefix: StaticString = "/3/device/"
    static let prefixLength = 10

    /// Number of tokens.
    public let count: Int
    /// Length of the longest token in bytes (for template size checks).
    public let maxLength: Int
    /// Whether a line of the file gave topics (`token topic[,topic...]`).
    public let hasTopics: Bool

    /// `hex` holds the tokens back to back; `list[i]..<list[i+1]` is token i. `topics` holds their topic
    /// lists back to back, `topicList[i]..<topicList[i+1]` for token i (empty when its line had none);
    /// no topic list at all when no line had one.
    private init(hex: [UInt8], offsets list: [Int], topics: [UInt8] = [], topicList: [Int] = []) {
        count = list.count - 1
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count + count * DeviceTokens.prefixLength)
        var starts: [Int] = []
        starts.reserveCapacity(list.count)
        let prefix = UnsafeRawBufferPointer(start: DeviceTokens.apnsPathPrefix.utf8Start, count: DeviceTokens.prefixLength)
        var m = 0
        for i in 0..<count {
            starts.append(bytes.count)
            bytes.append(contentsOf: prefix)
            bytes.append(contentsOf: hex[list[i]..<list[i + 1]])
            m = max(m, list[i + 1] - list[i])
        }
        starts.append(bytes.count)
        storage = .allocate(byteCount: max(bytes.count, 1), alignment: 16)
        storage.copyBytes(from: bytes)
        offsets = .allocate(capacity: starts.count)
        _ = offsets.initialize(from: starts)
        maxLength = m
        hasTopics = topicList.count > 1 && topicList[count] > 0
        if hasTopics {
            topicStorage = .allocate(byteCount: topics.count, alignment: 1)
            topicStorage.copyBytes(from: topics)
            topicStarts = .allocate(capacity: topicList.count)
            _ = topicStarts.initialize(from: topicList)
            firstTopicEnds = .allocate(capacity: count)
            for i in 0..<count {
                var e = topicList[i]
                while e < topicList[i + 1] && topics[e] != UInt8(ascii: ",") { e += 1 }
                firstTopicEnds[i] = e
            }
        } else {
            topicStorage = UnsafeMutableRawBufferPointer(start: nil, count: 0)
            topicStarts = UnsafeMutableBufferPointer(start: nil, count: 0)
            firstTopicEnds = UnsafeMutableBufferPointer(start: nil, count: 0)
        }
    }

    deinit {
        storage.deallocate()
        offsets.deallocate()
        topicStorage.deallocate()
        topicStarts.deallocate()
        firstTopicEnds.deallocate()
    }

    /// The bytes of token `index` (valid as long as this object lives). Allocates nothing.
    @inline(__always)
    public func token(_ index: Int) -> UnsafeRawBufferPointer {
        precondition(index >= 0 && index < count, "token index \(index) out of 0..<\(count)")
        return UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(storage)[(offsets[index] + DeviceTokens.prefixLength)..<offsets[index + 1]])
    }

    /// The APNs `:path` of token `index`, `/3/device/<token>` (valid as long as this object lives).
    /// Allocates nothing.
    @inline(__always)
    public func apnsPath(_ index: Int) -> UnsafeRawBufferPointer {
        precondition(index >= 0 && index < count, "token index \(index) out of 0..<\(count)")
        return UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(storage)[offsets[index]..<offsets[index + 1]])
    }

    /// Calls `body` with the bytes of token `index`.
    @inline(__always)
    public func withToken<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(token(index))
    }

    /// Token `index` as a String (allocates; not for the hot path).
    public subscript(index: Int) -> String { String(decoding: token(index), as: UTF8.self) }

    /// The first topic on token `index`'s line, the `apns-topic` a run sends it with; empty when its line
    /// gave none. Allocates nothing.
    @inline(__always)
    public func topic(_ index: Int) -> UnsafeRawBufferPointer {
        precondition(index >= 0 && index < count, "token index \(index) out of 0..<\(count)")
        guard hasTopics else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(topicStorage)[topicStarts[index]..<firstTopicEnds[index]])
    }

    /// Every topic on token `index`'s line, in order (allocates; not for the hot path).
    public func topics(_ index: Int) -> [String] {
        precondition(index >= 0 && index < count, "token index \(index) out of 0..<\(count)")
        guard hasTopics else { return [] }
        let list = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(topicStorage)[topicStarts[index]..<topicStarts[index + 1]])
        return list.split(separator: UInt8(ascii: ",")).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `count` synthetic tokens of 64 lowercase hex characters (32 random bytes each), fully
    /// determined by `seed`.
    public convenience init(synthetic count: Int, seed: UInt64 = 0x5eed, length: Int = 64) {
        precondition(count > 0 && length > 0 && length % 2 == 0, "need count > 0 and an even length")
        var rng = PushRandom(seed: seed)
        var hex: [UInt8] = []
        hex.reserveCapacity(count * length)
        var offsets: [Int] = [0]
        offsets.reserveCapacity(count + 1)
        let digits = Array("0123456789abcdef".utf8)
        for _ in 0..<count {
            var word = 0 as UInt64
            for k in 0..<length {
                if k % 16 == 0 { word = rng.next() }
                hex.append(digits[Int(word & 0xF)])
                word >>= 4
            }
            offsets.append(hex.count)
        }
        self.init(hex: hex, offsets: offsets)
    }

    /// Tokens from `strings` (validated like a file; errors name `<list>` and the 1-based index).
    public convenience init(_ strings: [String]) throws(TokenFileError) {
        try self.init(bytes: Array(strings.joined(separator: "\n").utf8), file: "<list>")
    }

    /// What a token file holds: APNs device tokens (hex) or FCM registration tokens.
    public enum Kind: Sendable {
        /// APNs device tokens: hex digits, whole bytes; stored lower-case.
        case apns
        /// FCM registration tokens: 1...4096 characters of `[A-Za-z0-9_:.-]` (what FCM's send API
        /// accepts, e.g. `bk3RNwTe3H0:CI2k_HHwgIpoDKCIZvvDMExUdFQ3P1…`); stored as written.
        case fcm
    }

    /// Longest FCM registration token accepted (the FCM send API's bound; real ones are ~150-255 bytes).
    static let maxFCMTokenLength = 4096
    /// Longest APNs device token accepted, in hex digits: the most the gateway can be told to accept
    /// (`--token-length`); Apple's tokens are 64 today. A longer line is a mistake (a file that is not a
    /// token list), and taking it would size every request's memory after it.
    static let maxAPNsTokenLength = 1024

    /// Loads a token file: one token per line; blank lines and lines starting with `#` are
    /// skipped; surrounding spaces and `\r` are ignored. APNs (the default): hex, upper-case stored
    /// lower-case, optionally followed by spaces and the token's topics (`token topic[,topic...]`, see
    /// ``topic(_:)``). FCM: registration tokens, stored as written.
    /// With `requireTopics`, every line must name topics.
    public convenience init(path: String, kind: Kind = .apns, requireTopics: Bool = false) throws(TokenFileError) {
        let bytes: [UInt8]
        do throws(InputFileError) { bytes = try InputFile.bytes(path) } catch {
            throw TokenFileError(file: path, line: 0, reason: error.reason)
        }
        try self.init(bytes: bytes, file: path, kind: kind, requireTopics: requireTopics)
    }

    /// Parses token-file bytes (`file` names the source in errors).
    public convenience init(bytes: [UInt8], file: String, kind: Kind = .apns, requireTopics: Bool = false) throws(TokenFileError) {
        if kind == .fcm {
            try self.init(fcmBytes: bytes, file: file)
            return
        }
        var hex: [UInt8] = []
        hex.reserveCapacity(bytes.count)
        var offsets: [Int] = [0]
        var topics: [UInt8] = []
        var topicList: [Int] = [0]
        try DeviceTokens.forEachTokenLine(bytes) { (line, a, b) throws(TokenFileError) in
            var end = a
            while end < b && bytes[end] != 0x20 && bytes[end] != 0x09 { end += 1 }
            guard end - a <= DeviceTokens.maxAPNsTokenLength else {
                throw TokenFileError(file: file, line: line, reason:
                    "token is \(end - a) characters, over the \(DeviceTokens.maxAPNsTokenLength)-digit limit of an APNs device token")
            }
            for k in a..<end {
                let c = bytes[k]
                switch c {
                case 0x30...0x39, 0x61...0x66: hex.append(c)
                case 0x41...0x46: hex.append(c | 0x20)
                default:
                    let shown = DeviceTokens.describe(byte: c)
                    throw TokenFileError(file: file, line: line, reason:
                        "token has a non-hex character \(shown) at column \(k - a + 1)"
                        + (DeviceTokens.isFCMTokenByte(c) ? " (an FCM registration token needs --protocol fcm)" : ""))
                }
            }
            if (end - a) % 2 != 0 {
                throw TokenFileError(file: file, line: line, reason:
                    "token has an odd number of hex digits (\(end - a)); a token is whole bytes, e.g. 64 hex digits")
            }
            offsets.append(hex.count)
            var t = end
            while t < b && (bytes[t] == 0x20 || bytes[t] == 0x09) { t += 1 }
            if t < b {
                try DeviceTokens.appendTopics(bytes, t..<b, lineStart: a, into: &topics, file: file, line: line)
            } else if requireTopics {
                throw TokenFileError(file: file, line: line, reason: "token has no topic (a line is 'token topic[,topic...]')")
            }
            topicList.append(topics.count)
        }
        guard offsets.count > 1 else {
            throw TokenFileError(file: file, line: 0, reason: "no tokens (the file is empty or only blank lines and # comments)")
        }
        self.init(hex: hex, offsets: offsets, topics: topics, topicList: topicList)
    }

    /// Checks a line's topic list (`topic[,topic...]`: printable ASCII, no spaces, no empty topic) and
    /// appends it to `topics`.
    private static func appendTopics(_ bytes: [UInt8], _ range: Range<Int>, lineStart: Int, into topics: inout [UInt8],
                                     file: String, line: Int) throws(TokenFileError) {
        func fail(_ k: Int, _ why: String) -> TokenFileError {
            TokenFileError(file: file, line: line, reason: "\(why) at column \(k - lineStart + 1) (a line is 'token' or 'token topic[,topic...]')")
        }
        var topicStart = range.lowerBound
        for k in range {
            let c = bytes[k]
            if c == UInt8(ascii: ",") {
                if k == topicStart { throw fail(k, "empty topic") }
                topicStart = k + 1
            } else if c == 0x20 || c == 0x09 {
                throw fail(k, "a space inside the topics")
            } else if c < 0x20 || c >= 0x7F {
                throw fail(k, "topic has a character \(describe(byte: c))")
            }
        }
        if topicStart == range.upperBound { throw fail(range.upperBound - 1, "empty topic after the last comma") }
        topics.append(contentsOf: bytes[range])
    }

    /// Calls `body(line, start, end)` for each token line of a token file: lines split on LF, spaces,
    /// tabs and a trailing CR trimmed, blank lines and `#` comments skipped.
    static func forEachTokenLine<E: Error>(_ bytes: [UInt8], _ body: (Int, Int, Int) throws(E) -> Void) throws(E) {
        var line = 0
        var i = 0
        let n = bytes.count
        while i < n {
            line += 1
            var end = i
            while end < n && bytes[end] != 0x0A { end += 1 }
            var a = i, b = end
            while a < b && (bytes[a] == 0x20 || bytes[a] == 0x09) { a += 1 }
            while b > a && (bytes[b - 1] == 0x20 || bytes[b - 1] == 0x09 || bytes[b - 1] == 0x0D) { b -= 1 }
            i = end + 1
            if a == b || bytes[a] == UInt8(ascii: "#") { continue }
            try body(line, a, b)
        }
    }

    /// A byte as an error message shows it: the character in quotes when printable, else its hex value.
    static func describe(byte c: UInt8) -> String {
        c >= 0x20 && c < 0x7F ? "'\(Character(Unicode.Scalar(c)))'" : String(format: "byte 0x%02x", c)
    }

    @inline(__always) static func isFCMTokenByte(_ c: UInt8) -> Bool {
        switch c {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"),
             UInt8(ascii: "."): return true
        default: return false
        }
    }

    /// FCM registration tokens, one per line (same blank/comment/space rules as the hex format).
    private convenience init(fcmBytes bytes: [UInt8], file: String) throws(TokenFileError) {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count)
        var offsets: [Int] = [0]
        try DeviceTokens.forEachTokenLine(bytes) { (line, a, b) throws(TokenFileError) in
            for k in a..<b where !DeviceTokens.isFCMTokenByte(bytes[k]) {
                let c = bytes[k]
                let shown = DeviceTokens.describe(byte: c)
                throw TokenFileError(file: file, line: line, reason:
                    "FCM registration token has a character \(shown) at column \(k - a + 1); allowed: A-Z a-z 0-9 _ : . -")
            }
            guard b - a <= DeviceTokens.maxFCMTokenLength else {
                throw TokenFileError(file: file, line: line, reason:
                    "FCM registration token is \(b - a) bytes, over the \(DeviceTokens.maxFCMTokenLength)-byte limit")
            }
            text.append(contentsOf: bytes[a..<b])
            offsets.append(text.count)
        }
        guard offsets.count > 1 else {
            throw TokenFileError(file: file, line: 0, reason: "no tokens (the file is empty or only blank lines and # comments)")
        }
        self.init(hex: text, offsets: offsets)
    }
}
