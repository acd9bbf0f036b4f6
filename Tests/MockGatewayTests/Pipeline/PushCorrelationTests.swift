import Testing
@testable import MockGateway
@testable import PushPayload

/// The correlation scanner and correlator without sockets: where an id may sit, split ids, repeated,
/// malformed and foreign ones.
@Suite struct PushCorrelationTests {
    let scanner = CorrelationScanner(prefix: Array("pb-7f3a-".utf8))

    func scan(_ text: String) -> CorrelationScanner.Found {
        Array(text.utf8).withUnsafeBytes { scanner.scan($0) }
    }

    @Test func findsTheIdAnywhereInTheBytes() {
        #expect(scan(#"{"aps":{"alert":"hi"},"pipeline_id":"pb-7f3a-000000123"}"#) == .match(123))
        #expect(scan("pb-7f3a-000000000") == .match(0))
        #expect(scan(#"{"aps":{"alert":{"body":"order pb-7f3a-000004567 shipped"}}}"#) == .match(4567))
        #expect(scan("collapse-pb-7f3a-1234567890123") == .match(1_234_567_890_123))
    }

    @Test func theRunsOwnIdWinsOverAnotherRunsAndMalformedOnes() {
        #expect(scan("pb-0000-000000001 then pb-7f3a-000000002") == .match(2))
        #expect(scan("pb-0000-000000001") == .foreign)
        #expect(scan("pb-7f3a-") == .none)
        #expect(scan("pb-7f3a-x00000001") == .none)
        #expect(scan("pb-7F3A-000000001") == .none)  // upper-case hex is not an id we write
        #expect(scan("pb-7f3-000000001") == .none)
        #expect(scan("ppb-pb-7f3a-000000009") == .match(9))
        #expect(scan("") == .none)
        #expect(scan("pb-7f3a-1") == .match(1))
    }

    @Test func aRepeatedIdIsOneMatch() {
        #expect(scan("pb-7f3a-000000042 and again pb-7f3a-000000042") == .match(42))
        // Two ids of the run in one push: the first names the request.
        #expect(scan("pb-7f3a-000000042 pb-7f3a-000000043") == .match(42))
    }

    @Test func anIdTooLongForAnIndexIsNotTakenForOne() {
        #expect(scan("pb-7f3a-" + String(repeating: "9", count: 25)) == .foreign)
    }

    @Test func anIdSplitAcrossChunksIsFound() {
        let text = Array(#"{"data":{"pipeline_id":"pb-7f3a-000000777"}}"#.utf8)
        for cut in 1..<text.count {
            for cut2 in cut..<text.count {
                let a = Array(text[0..<cut]), b = Array(text[cut..<cut2]), c = Array(text[cut2...])
                let found = a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in c.withUnsafeBytes { pc in scanner.scan([pa, pb, pc]) } } }
                #expect(found == .match(777), "cut at \(cut), \(cut2)")
            }
        }
        let one = Array("pb-7f3a-0000".utf8), two = Array("00888 tail".utf8)
        #expect(one.withUnsafeBytes { a in two.withUnsafeBytes { b in scanner.scan([a, b]) } } == .match(888))
    }

    @Test func theCorrelatorLooksWhereItIsTold() {
        let body = Array(#"{"x":"pb-7f3a-000000005"}"#.utf8)
        let headers: [(name: [UInt8], value: [UInt8])] = [(Array(":path".utf8), Array("/3/device/ab".utf8)),
                                                          (Array("apns-collapse-id".utf8), Array("pb-7f3a-000000006".utf8))]
        func arrival(_ source: CorrelationSource, body: [UInt8]) -> PushArrival? {
            let c = PushCorrelator(prefix: Array("pb-7f3a-".utf8), source: source, loops: 2)
            body.withUnsafeBytes { b in
                headers[0].name.withUnsafeBytes { n0 in headers[0].value.withUnsafeBytes { v0 in
                    headers[1].name.withUnsafeBytes { n1 in headers[1].value.withUnsafeBytes { v1 in
                        headers[0].value.withUnsafeBytes { path in
                            c.record(loop: 1, route: .apns, status: 200, arrivedAt: 7, path: path, body: b, headerCount: 2) {
                                $0 == 0 ? (n0, v0) : (n1, v1)
                            }
                        }
                    } }
                } }
            }
            var got: [PushArrival] = []
            c.drain { got.append($0) }
            return got.count == 1 ? got[0] : nil
        }
        #expect(arrival(.anywhere, body: body)?.index == 5)
        #expect(arrival(.anywhere, body: [])?.index == 6)
        #expect(arrival(.body, body: []) == PushArrival(index: PushArrival.noID, arrivedAt: 7, route: 0, status: 200,
                                                        token: PushTokenHash.of("AB")))
        #expect(arrival(.header("apns-collapse-id"), body: body)?.index == 6)
        #expect(arrival(.header("apns-id"), body: body)?.index == PushArrival.noID)
    }

    @Test func aFullRingRefusesAndCounts() {
        let c = PushCorrelator(prefix: Array("pb-7f3a-".utf8), loops: 1, capacity: 4)
        for _ in 0..<6 {
            c.record(loop: 0, route: .fcm, status: 500, arrivedAt: 1, body: UnsafeRawBufferPointer(start: nil, count: 0),
                     headerCount: 0) { _ in fatalError("no headers") }
        }
        #expect(c.refused == 2)
        var n = 0
        c.drain { #expect($0.route == 1 && $0.isRetryable); n += 1 }
        #expect(n == 4)
    }

    @Test func aJSONPointerNamesWhereTheIdIs() throws {
        func arrival(_ pointer: String, _ body: String) throws -> Int64? {
            let source = try #require(CorrelationSource.pointer(pointer))
            let c = PushCorrelator(prefix: Array("pb-7f3a-".utf8), source: source, loops: 1)
            Array(body.utf8).withUnsafeBytes { b in
                c.record(loop: 0, route: .fcm, status: 200, arrivedAt: 1, body: b, headerCount: 0) { _ in fatalError("no headers") }
            }
            var got: Int64?
            c.drain { got = $0.index }
            return got
        }
        let fcm = #"{"message":{"token":"t","data":{"pipeline_id":"pb-7f3a-000000042","other":"pb-7f3a-000000001"},"list":["x","pb-7f3a-000000007"]}}"#
        #expect(try arrival("/message/data/pipeline_id", fcm) == 42)
        #expect(try arrival("/message/list/1", fcm) == 7)
        #expect(try arrival("/message/list/2", fcm) == PushArrival.noID)
        #expect(try arrival("/message/data/missing", fcm) == PushArrival.noID)
        #expect(try arrival("/message/token", fcm) == PushArrival.noID)
        #expect(try arrival("/message/data/pipeline_id", "not json pb-7f3a-000000042") == PushArrival.noID)
        #expect(try arrival("/a~1b/c~0d", #"{"a/b":{"c~d":"pb-7f3a-9"}}"#) == 9)
        #expect(CorrelationSource.pointer("message/x") == nil && CorrelationSource.pointer("/a~2") == nil)
    }
}

