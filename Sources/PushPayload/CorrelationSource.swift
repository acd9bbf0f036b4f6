/// Where a pipeline run's gateway looks for the correlation id (`--correlate`).
public enum CorrelationSource: Equatable, Sendable {
    /// The body, then every header value (`:path` included): wherever the service put it.
    case anywhere
    /// The body only.
    case body
    /// One header's value (`header:NAME`, the name in lower case).
    case header(String)
    /// The string at a JSON pointer into the body (RFC 6901, `/message/data/pipeline_id`), its
    /// reference tokens unescaped (`~1` is `/`, `~0` is `~`).
    case pointer([[UInt8]])

    /// The source a JSON pointer names; nil when `text` is not one (it must start with `/`).
    public static func pointer(_ text: String) -> CorrelationSource? {
        guard text.hasPrefix("/") else { return nil }
        var tokens: [[UInt8]] = []
        for part in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            var token: [UInt8] = []
            var bytes = Array(part.utf8)[...]
            while let b = bytes.popFirst() {
                if b == UInt8(ascii: "~") {
                    guard let n = bytes.popFirst(), n == UInt8(ascii: "0") || n == UInt8(ascii: "1") else { return nil }
                    token.append(n == UInt8(ascii: "0") ? UInt8(ascii: "~") : UInt8(ascii: "/"))
                } else {
                    token.append(b)
                }
            }
            tokens.append(token)
        }
        return .pointer(tokens)
    }
}
