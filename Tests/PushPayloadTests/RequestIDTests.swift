import Testing
@testable import PushPayload

/// The id of request g is a function of the seed and g alone, so the agents of one run (each sending its
/// segment) and a single process give every request the same id.
@Suite struct RequestIDTests {
    @Test func theIdOfARequestDependsOnItsIndexAndTheSeedOnly() {
        #expect(PushRandom.uuid(seed: 7, index: 12_345) == PushRandom.uuid(seed: 7, index: 12_345))
        #expect(PushRandom.uuid(seed: 7, index: 12_345) != PushRandom.uuid(seed: 8, index: 12_345))
        var seen = Set<String>()
        for g in UInt64(0)..<50_000 { seen.insert(PushRandom.uuid(seed: 1, index: g).description) }
        #expect(seen.count == 50_000)
        // Version-4 form: 8-4-4-4-12 hex, version digit 4, variant 8/9/a/b.
        let text = PushRandom.uuid(seed: 1, index: 3).description
        let chars = Array(text)
        #expect(chars.count == 36 && chars[14] == "4" && "89ab".contains(chars[19]), "\(text)")
    }
}
