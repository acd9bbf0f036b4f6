/// A request as REST clients write it in a `.http` file (VS Code's REST Client, JetBrains' HTTP client):
/// a request line `METHOD /path` (optionally followed by `HTTP/1.1`, and the path may be a whole URL),
/// header lines `Name: value`, a blank line, then the body, here a payload template
/// (`{{pipeline_id}}`, `{{tokens:N}}` and the other placeholders). Lines starting with `#` or `//`
/// before the request line are comments, and a `###` line ends the request (a file may hold several;
/// the first is used).
///
/// ```
/// POST /notify HTTP/1.1
/// content-type: application/json
///
/// {"id":"{{pipeline_id}}","tokens":{{tokens:3}},"title":"Score"}
/// ```
public struct RequestFile: Sendable {
    /// The method, e.g. `POST`.
    public var method: String
    /// The path and query, starting with `/`.
    public var path: String
    /// The header fields in file order (names as written), without `Host` and `Content-Length`, which
    /// the client writes itself.
    public var headers: [(name: String, value: String)]
    /// The body template's text (empty when the request has no body).
    public var body: [UInt8]
    /// The file's name (for messages).
    public var file: String
    /// The 1-based line the body starts on (for messages about the template).
    var bodyLine: Int

    /// Parses `bytes` read from `file`; throws a ``TemplateError`` naming the line and what is wrong.
    public init(bytes: [UInt8], file: String) throws(TemplateError) {
        self.file = file
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            line.hasSuffix("\r") ? line.dropLast() : line
        }
        if lines.last == "" { lines.removeLast() }
        func fail(_ line: Int, _ reason: String) -> TemplateError {
            TemplateError(file: file, line: line, column: 1, reason: reason)
        }
        var i = 0
        while i < lines.count, lines[i].allSatisfy({ $0 == " " || $0 == "\t" }) || Self.isComment(lines[i]) { i += 1 }
        guard i < lines.count else { throw fail(0, "no request line (expected 'METHOD /path', e.g. 'POST /notify HTTP/1.1')") }
        let parts = lines[i].split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2 || parts.count == 3 else {
            throw fail(i + 1, "'\(lines[i])' is not a request line (expected 'METHOD /path' or 'METHOD /path HTTP/1.1')")
        }
        let method = String(parts[0])
        guard method.utf8.allSatisfy({ Self.isTokenByte($0) }), method.uppercased() == method else {
            throw fail(i + 1, "'\(method)' is not an HTTP method (expected e.g. POST, PUT, GET)")
        }
        if parts.count == 3, !parts[2].hasPrefix("HTTP/") {
            throw fail(i + 1, "'\(parts[2])' after the path is not an HTTP version (expected HTTP/1.1 or nothing)")
        }
        var target = String(parts[1])
        for scheme in ["http://", "https://"] where target.hasPrefix(scheme) {
            // A whole URL: its host is --target's business; keep the path.
            let rest = target.dropFirst(scheme.count)
            target = rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? "/"
        }
        guard target.hasPrefix("/") else { throw fail(i + 1, "the path '\(target)' must start with '/'") }
        guard target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw fail(i + 1, "the path '\(target)' has a character that needs percent-encoding")
        }
        if target.contains("{{") { throw fail(i + 1, "placeholders belong in the body; the path is sent as written") }
        self.method = method
        path = target
        i += 1
        var headers: [(name: String, value: String)] = []
        while i < lines.count, !lines[i].isEmpty, lines[i] != "###" {
            let line = lines[i]
            guard let colon = line.firstIndex(of: ":") else {
                throw fail(i + 1, "'\(line)' is not a header line (expected 'Name: value', then a blank line before the body)")
            }
            let name = String(line[..<colon])
            let value = String(line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
            guard !name.isEmpty, name.utf8.allSatisfy({ Self.isTokenByte($0) }) else {
                throw fail(i + 1, "'\(name)' is not a header name")
            }
            if value.contains("{{") { throw fail(i + 1, "placeholders belong in the body; header \(name) is sent as written") }
            if value.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 }) { throw fail(i + 1, "header \(name) has a control character") }
            let lower = name.lowercased()
            if lower == "content-length" || lower == "host" || lower == "transfer-encoding" || lower == "connection" {
                // The client writes these itself (the body's length changes per request).
            } else {
                headers.append((name, value))
            }
            i += 1
        }
        self.headers = headers
        if i < lines.count, lines[i].isEmpty { i += 1 }
        bodyLine = i + 1
        var bodyLines: [Substring] = []
        while i < lines.count, !lines[i].hasPrefix("###") {
            bodyLines.append(lines[i])
            i += 1
        }
        while let last = bodyLines.last, last.allSatisfy({ $0 == " " || $0 == "\t" }) { bodyLines.removeLast() }
        body = Array(bodyLines.joined(separator: "\n").utf8)
    }

    /// Reads and parses the file at `path`.
    public init(path: String) throws(TemplateError) {
        let bytes: [UInt8]
        do throws(InputFileError) { bytes = try InputFile.bytes(path) } catch {
            throw TemplateError(file: path, line: 0, column: 0, reason: error.reason)
        }
        try self.init(bytes: bytes, file: path)
    }

    /// The body compiled as a payload template (a JSON object with placeholders); error positions are
    /// the file's lines. Nil when the request has no body.
    public func template(options: TemplateOptions) throws(TemplateError) -> PayloadTemplate? {
        guard !body.isEmpty else { return nil }
        do throws(TemplateError) {
            return try PayloadTemplate(bytes: body, file: file, options: options)
        } catch {
            var e = error
            if e.line > 0 { e.line += bodyLine - 1 }
            throw e
        }
    }

    static func isComment(_ line: Substring) -> Bool { line.hasPrefix("#") || line.hasPrefix("//") }

    /// RFC 9110 tchar.
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): return true
        default: return "!#$%&'*+-.^_`|~".utf8.contains(b)
        }
    }
}
