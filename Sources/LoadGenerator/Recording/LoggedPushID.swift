/// The id a push service gave a request, as the `--log` file's `push_id` column holds it for FCM: the
/// message id, the part of the answer's `"name": "projects/P/messages/ID"` after `/messages/` (the
/// project is the run's own on every line). Stored inline, up to ``capacity`` bytes, so a
/// ``RequestLogRecord`` carrying it stays a plain value the driver thread queues without allocating.
struct LoggedPushID: Sendable, Equatable {
    private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)
    private var length: UInt8 = 0
    /// The most bytes kept; a longer id is cut there (FCM's are about 35).
    static let capacity = 56

    /// No id.
    init() {}

    /// The message id in `body`, an FCM send's success answer (`{"name": "projects/P/messages/ID"}`);
    /// empty when the body names none. Bytes a CSV field or a terminal would trip on (`,`, `"`, control
    /// and non-ASCII bytes) become `?`. Allocates nothing.
    init(fcmAnswer body: UnsafeRawBufferPointer) {
        guard let (start, end) = Self.messageID(in: body) else { return }
        let n = min(end - start, Self.capacity)
        withUnsafeMutableBytes(of: &storage) { out in
            for i in 0..<n {
                let c = body[start + i]
                out[i] = (c <= 0x20 || c >= 0x7F || c == UInt8(ascii: ",") || c == UInt8(ascii: "\"")) ? UInt8(ascii: "?") : c
            }
        }
        length = UInt8(n)
    }

    /// `text`, cut and cleaned as an answer's id is.
    init(_ text: String) {
        let body = "{\"name\":\"projects/p/messages/" + text + "\"}"
        var copy = body
        self = copy.withUTF8 { LoggedPushID(fcmAnswer: UnsafeRawBufferPointer($0)) }
    }

    /// Whether there is no id.
    var isEmpty: Bool { length == 0 }

    /// Calls `body` with the id's bytes.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: storage) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<Int(length)])) }
    }

    /// The id as text.
    var text: String { withBytes { String(decoding: $0, as: UTF8.self) } }

    /// Whether the two ids have the same bytes.
    static func == (l: Self, r: Self) -> Bool {
        l.withBytes { a in r.withBytes { b in a.elementsEqual(b) } }
    }

    /// The byte range of the id in the string value of the first `"name"` key of `body`: what follows
    /// its last `/messages/` (all of the value when it has none). A byte scan, not a JSON parse: the
    /// answer is the service's short, flat success object.
    static func messageID(in body: UnsafeRawBufferPointer) -> (Int, Int)? {
        let key: StaticString = "\"name\""
        let k = key.utf8CodeUnitCount, keyBytes = key.utf8Start
        let n = body.count
        var i = 0
        search: while i + k <= n {
            for j in 0..<k where body[i + j] != keyBytes[j] { i += 1; continue search }
            break
        }
        guard i + k <= n else { return nil }
        i += k
        while i < n, body[i] == UInt8(ascii: " ") || body[i] == UInt8(ascii: "\t") || body[i] == UInt8(ascii: "\n")
                || body[i] == UInt8(ascii: "\r") || body[i] == UInt8(ascii: ":") { i += 1 }
        guard i < n, body[i] == UInt8(ascii: "\"") else { return nil }
        i += 1
        var start = i
        while i < n, body[i] != UInt8(ascii: "\"") {
            // "/messages/" ends here: the id starts after it.
            if body[i] == UInt8(ascii: "/"), Self.endsMessages(body, at: i) { start = i + 1 }
            i += 1
        }
        guard i < n, i > start else { return nil }
        return (start, i)
    }

    /// Whether `body[at - 9 ... at]` is `/messages/`.
    private static func endsMessages(_ body: UnsafeRawBufferPointer, at: Int) -> Bool {
        let word: StaticString = "/messages/"
        let w = word.utf8CodeUnitCount, bytes = word.utf8Start
        guard at + 1 >= w else { return false }
        for j in 0..<w where body[at + 1 - w + j] != bytes[j] { return false }
        return true
    }
}
