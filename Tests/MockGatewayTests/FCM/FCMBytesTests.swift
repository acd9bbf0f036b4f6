import Testing
@testable import MockGateway

/// The byte-level writers of the FCM route against plain reference formattings.
@Suite struct FCMBytesTests {
    func written(capacity: Int, _ body: (inout ByteWriter) -> Void) -> (bytes: [UInt8], count: Int) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(capacity, 1), alignment: 1)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0xEE)
        var w = ByteWriter(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<capacity]))
        body(&w)
        return (Array(buffer[0..<capacity]), w.count)
    }

    @Test func bytesCopiesEveryLengthAndStopsStoringAtTheCapacity() {
        let source = (0..<40).map { UInt8(0x41 + $0) }
        source.withUnsafeBytes { src in
            for n in 0...40 {
                let piece = UnsafeRawBufferPointer(rebasing: src[0..<n])
                let (bytes, count) = written(capacity: 64) { w in w.byte(0x2A); w.bytes(piece); w.byte(0x2B) }
                #expect(count == n + 2)
                #expect(bytes == [0x2A] + Array(source[0..<n]) + [0x2B] + Array(repeating: 0xEE, count: 62 - n), "length \(n)")
                // Too big: a piece that does not fit is not stored at all, its size still counted.
                let (cut, total) = written(capacity: 5) { w in w.byte(0x2A); w.bytes(piece) }
                #expect(total == n + 1)
                let stored = n + 1 <= 5 ? [0x2A] + Array(source[0..<n]) : [0x2A]
                #expect(cut == stored + Array(repeating: 0xEE, count: 5 - stored.count), "length \(n) in 5 bytes")
            }
        }
    }

    func referenceID(_ id: UInt64) -> String {
        let hex = String(mix(id), radix: 16)
        return "0:\(id)%" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    @Test func messageIDsMatchAPlainFormattingWhetherOrNotTheyFit() {
        var random = SeededRandom(seed: 5)
        var ids: [UInt64] = [0, 1, 9, 10, 99, 100, 1 << 48, (1 << 48) | 12345, .max, .max - 1]
        for _ in 0..<500 { ids.append(random.next() >> (random.next() % 64)) }
        for id in ids {
            let expected = Array(referenceID(id).utf8)
            let (bytes, count) = written(capacity: 64) { w in w.byte(0x22); FCMMessageID.write(id, to: &w); w.byte(0x22) }
            #expect(count == expected.count + 2)
            #expect(Array(bytes[0..<count]) == [0x22] + expected + [0x22], "\(id)")
            // Near the end of the buffer: what is stored and counted is what the byte-by-byte writer does.
            for room in [0, 1, 2, 3, 5, expected.count - 1, expected.count, expected.count + 1] {
                let fast = written(capacity: room) { w in w.byte(0x2A); FCMMessageID.write(id, to: &w) }
                let slow = written(capacity: room) { w in w.byte(0x2A); FCMMessageID.writeSlowly(id, to: &w) }
                #expect(fast.count == expected.count + 1 && fast.bytes == slow.bytes, "\(id) in \(room) bytes")
            }
        }
        #expect(fcmMessageID(1) == "0:1%" + referenceID(1).dropFirst(4))
        #expect(FCMMessageID.maxLength == referenceID(.max).utf8.count)
    }

    @Test func inlineTextCleansLikeTheByteRule() {
        var random = SeededRandom(seed: 6)
        let interesting: [UInt8] = [0x00, 0x1F, 0x20, 0x22, 0x5C, 0x7E, 0x7F, 0x80, 0xFF, 0x41, 0x2D]
        for round in 0..<2000 {
            let n = Int(random.next() % 70)
            let raw: [UInt8] = (0..<n).map { _ in
                round % 2 == 0 ? interesting[Int(random.next() % UInt64(interesting.count))] : UInt8(0x41 + random.next() % 26)
            }
            let expected = raw.prefix(FCMInlineText.capacity).map { c -> UInt8 in
                (c < 0x20 || c >= 0x7F || c == 0x22 || c == 0x5C) ? UInt8(ascii: "?") : c
            }
            let text = raw.withUnsafeBytes { FCMInlineText($0) }
            text.withBytes { #expect(Array($0) == expected, "\(raw)") }
        }
        #expect(FCMInlineText("pushbench-123").string == "pushbench-123")
        #expect(FCMInlineText("a\"b\\c\u{7F}d\u{e9}").string == "a?b?c?d??")
        #expect(FCMInlineText("") == FCMInlineText())
    }

    /// Without `--capture` the Apple payload is only counted: the same size, so the same answers at
    /// every length around APNs' limits (4096, 5120 for VoIP) and past the 16 KiB buffer.
    @Test func countedApplePayloadAnswersLikeTheWrittenOne() throws {
        var counted = Harness()
        var written = try Harness(["--capture", "100000"])
        var lengths = Array(3960...4010) + Array(4980...5030) + [16_300, 16_400, 40_000]
        lengths += [0, 1, 100]
        var flips = 0
        for n in lengths {
            let x = String(repeating: "x", count: n)
            for body in [fcmMessage(#""notification":{"title":"t"},"data":{"k":"\#(x)"}"#),
                         fcmMessage(#""apns":{"headers":{"apns-push-type":"voip"},"payload":{"aps":{"badge":2},"c":"\#(x)"}}"#),
                         fcmMessage(#""apns":{"payload":{"aps":{"alert":"\#(x)","content_available":true}}}"#, token: "a:b.c_d-e")] {
                let a = counted.fcm(fcmRequest(body)), b = written.fcm(fcmRequest(body))
                #expect(a == b, "\(n): \(a.body) vs \(b.body)")
                if a.problem == .payloadTooBig { flips += 1 }
            }
        }
        #expect(flips > 50 && flips < lengths.count * 3 - 50)
        // The written payloads are the captured ones, and their size is what the limit was checked on.
        #expect(written.stats.fcm.captured.allSatisfy { $0.payload.utf8.count <= 5120 })
    }

    @Test func expirationDigitsAreRewrittenWhenTheSecondChanges() {
        let storage = FCMStorage(appleTopic: "com.example")
        for seconds: UInt64 in [0, 7, 1_700_000_000, 1_700_000_000, 1_700_000_001, 99, .max, 0] {
            #expect(Array(storage.expirationDigits(seconds)) == Array(String(seconds).utf8))
        }
    }
}
