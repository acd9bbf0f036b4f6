import Testing
@testable import PushTransport

@Suite struct ByteStoreTests {
    @Test func appendsEveryLengthExactlyAcrossGrowth() {
        // Lengths 0-40 cover the byte loop, both overlapping-word copies and memcpy; the store starts
        // small so it also grows (and moves) between appends.
        var store = ByteStore(capacity: 16)
        defer { store.free() }
        var expected: [UInt8] = []
        var offsets: [Int] = []
        for length in 0...40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: length &* 31 &+ $0 &* 7 &+ 1) }
            offsets.append(bytes.withUnsafeBytes { store.append($0.baseAddress, length) })
            expected += bytes
        }
        #expect(Array(store.bytes) == expected)
        var at = 0
        for length in 0...40 {
            #expect(offsets[length] == at)
            at += length
        }
        // A copy never writes past its own bytes: what follows a short append is left alone.
        store.count = 0
        let wide = [UInt8](repeating: 0xAA, count: 32)
        _ = wide.withUnsafeBytes { store.append($0.baseAddress, 32) }
        store.count = 0
        for length in [1, 3, 5, 9] {
            let before = Array(store.bytes)
            _ = [UInt8](repeating: 0x11, count: length).withUnsafeBytes { store.append($0.baseAddress, length) }
            #expect(store.count == before.count + length)
            let tail = UnsafeRawBufferPointer(start: store.base + store.count, count: 32 - store.count)
            #expect(tail.allSatisfy { $0 == 0xAA }, "length \(length)")
        }
    }
}
