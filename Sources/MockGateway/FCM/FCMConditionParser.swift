/// Evaluates an FCM condition (`'A' in topics && ('B' in topics || !('C' in topics))`, at most 5
/// topics) to an estimate of the devices it reaches, looking topics up in `topics`: `||` adds, `&&`
/// takes the smaller side, `!` counts as a topic of the default size. Nil for a condition FCM refuses
/// (syntax, a bad topic name, more than 5 topics, nesting past 16).
struct ConditionParser {
    let text: UnsafeRawBufferPointer
    let topics: FCMTopicSizes
    private var i = 0
    private var topicCount = 0

    init(text: UnsafeRawBufferPointer, topics: FCMTopicSizes) {
        self.text = text
        self.topics = topics
    }

    /// The devices the whole text reaches, or nil when it is not a valid condition.
    mutating func evaluate() -> UInt64? {
        guard let v = expression(depth: 0) else { return nil }
        skip()
        return i == text.count && topicCount >= 1 ? v : nil
    }

    private mutating func skip() { while i < text.count, text[i] == 0x20 { i += 1 } }

    private mutating func eat(_ a: UInt8, _ b: UInt8) -> Bool {
        skip()
        guard i + 1 < text.count, text[i] == a, text[i + 1] == b else { return false }
        i += 2
        return true
    }

    private mutating func expression(depth: Int) -> UInt64? {
        guard depth < 16, var v = term(depth: depth) else { return nil }
        while eat(0x7C, 0x7C) {
            guard let r = term(depth: depth) else { return nil }
            v = v.addingReportingOverflow(r).overflow ? .max : v + r
        }
        return v
    }

    private mutating func term(depth: Int) -> UInt64? {
        guard var v = factor(depth: depth) else { return nil }
        while eat(0x26, 0x26) {
            guard let r = factor(depth: depth) else { return nil }
            v = min(v, r)
        }
        return v
    }

    private mutating func factor(depth: Int) -> UInt64? {
        skip()
        guard i < text.count else { return nil }
        switch text[i] {
        case UInt8(ascii: "!"):
            i += 1
            guard factor(depth: depth + 1) != nil else { return nil }
            return topics.defaultSize
        case UInt8(ascii: "("):
            i += 1
            guard let v = expression(depth: depth + 1) else { return nil }
            skip()
            guard i < text.count, text[i] == UInt8(ascii: ")") else { return nil }
            i += 1
            return v
        case UInt8(ascii: "'"):
            i += 1
            let start = i
            while i < text.count, text[i] != UInt8(ascii: "'") { i += 1 }
            guard i < text.count else { return nil }
            let name = UnsafeRawBufferPointer(rebasing: text[start..<i])
            i += 1
            guard FCMNames.isValidTopic(name) else { return nil }
            topicCount += 1
            guard topicCount <= 5 else { return nil }
            skip()
            guard i + 2 <= text.count, text[i] == UInt8(ascii: "i"), text[i + 1] == UInt8(ascii: "n") else { return nil }
            i += 2
            skip()
            let word: StaticString = "topics"
            guard i + 6 <= text.count, equals(UnsafeRawBufferPointer(rebasing: text[i..<(i + 6)]), word) else { return nil }
            i += 6
            return topics.subscribers(name)
        default:
            return nil
        }
    }
}
