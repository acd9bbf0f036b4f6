import Testing
@testable import MockGateway

/// The FCM route's parts on their own: the condition parser over a topic lookup, and the quota window.
@Suite struct FCMPartsTests {
    let topics = FCMTopicSizes(["news": 10, "sport": 5, "weather": 7], default: 3)

    func devices(_ condition: String) -> UInt64? {
        var text = condition
        return text.withUTF8 { bytes in
            var parser = ConditionParser(text: UnsafeRawBufferPointer(bytes), topics: topics)
            return parser.evaluate()
        }
    }

    @Test func conditionsCountTheirTopicsThroughTheLookup() {
        #expect(devices("'news' in topics") == 10)
        #expect(devices("'other' in topics") == 3)
        #expect(devices("'news' in topics || 'sport' in topics") == 15)
        #expect(devices("'news' in topics && 'sport' in topics") == 5)
        #expect(devices("!('news' in topics)") == 3)
        #expect(devices("('news' in topics || 'sport' in topics) && 'weather' in topics") == 7)
        #expect(devices("  'news'  in  topics  ||  ( 'sport' in topics )  ") == 15)
        #expect(devices("'news' in topics && ('sport' in topics || !('weather' in topics))") == 8)
    }

    @Test func conditionsFCMRefusesAreNil() {
        for bad in ["", "'news' in topics &&", "'news' in topic", "'news' topics", "'news in topics", "('news' in topics",
                    "'bad name!' in topics", "'news' in topics ||| 'sport' in topics", "!", "()",
                    "'a' in topics || 'b' in topics || 'c' in topics || 'd' in topics || 'e' in topics || 'f' in topics",
                    String(repeating: "(", count: 17) + "'a' in topics" + String(repeating: ")", count: 17)] {
            #expect(devices(bad) == nil, "\(bad)")
        }
        #expect(devices("'a' in topics || 'b' in topics || 'c' in topics || 'd' in topics || 'e' in topics") == 15)
    }

    @Test func aConditionOverHugeTopicsSaturates() {
        let huge = FCMTopicSizes(["a": Int.max, "b": Int.max], default: 0)
        var text = "'a' in topics || 'b' in topics || 'a' in topics"
        let n = text.withUTF8 { bytes in
            var parser = ConditionParser(text: UnsafeRawBufferPointer(bytes), topics: huge)
            return parser.evaluate()
        }
        #expect(n == .max)
    }

    @Test func quotaWindowRefusesAtItsLimitAndForgetsWhatLeftTheWindow() {
        let second: UInt64 = 1_000_000_000
        var q = QuotaWindow(limit: 3, windowNanos: 60 * second)
        q.advance(now: 0)
        for _ in 0..<3 { #expect(!q.isExhausted); q.count() }
        #expect(q.isExhausted)
        q.advance(now: 59 * second)           // still inside the minute
        #expect(q.isExhausted)
        q.advance(now: 61 * second)           // the first slot left the window
        #expect(!q.isExhausted)
        q.count(); q.count()
        q.advance(now: 100 * second)
        #expect(!q.isExhausted)
        q.count()
        #expect(q.isExhausted)
        q.advance(now: 10_000 * second)       // a jump past the whole window forgets everything
        #expect(!q.isExhausted)
    }
}
