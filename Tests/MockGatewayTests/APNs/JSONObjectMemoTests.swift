@testable import MockGateway
import Testing

/// The memo of the last JSON object body: a remembered body's verdict is reused only for the very same
/// bytes, never for a body that merely has its length.
@Suite struct JSONObjectMemoTests {
    func verdict(_ memo: inout JSONObjectMemo, _ text: String) -> Bool {
        Array(text.utf8).withUnsafeBytes { memo.isObject($0) }
    }

    @Test func sameLengthOtherBytesIsParsedAgain() {
        var memo = JSONObjectMemo()
        #expect(verdict(&memo, #"{"a":1}"#))
        #expect(verdict(&memo, #"{"a":1}"#), "the remembered object")
        for other in ["[1,2,3]", #""abcde""#, "{\"a\":12", "1234567", #"{"a":}}"#] {
            #expect(other.utf8.count == 7)
            #expect(!verdict(&memo, other), "\(other)")
        }
        #expect(verdict(&memo, #"{"a":1}"#), "still remembered after bodies that were not objects")
    }

    @Test func aNewObjectReplacesTheRememberedOne() {
        var memo = JSONObjectMemo()
        #expect(verdict(&memo, #"{"a":1}"#))
        #expect(verdict(&memo, #"{"b":2}"#))
        #expect(!verdict(&memo, #"{"b":2"#))
        #expect(verdict(&memo, #"{"a":1}"#))
    }

    @Test func bodiesLargerThanTheMemoAreAlwaysParsed() {
        var memo = JSONObjectMemo()
        let big = "{\"k\":\"" + String(repeating: "x", count: JSONObjectMemo.capacity) + "\"}"
        #expect(verdict(&memo, big))
        #expect(verdict(&memo, big))
        let broken = String(big.dropLast())
        #expect(!verdict(&memo, broken))
        #expect(!verdict(&memo, ""))
    }
}
