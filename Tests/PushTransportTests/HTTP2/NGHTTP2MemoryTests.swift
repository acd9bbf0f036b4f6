import CNGHTTP2
@testable import PushTransport
import Testing

/// The pooled nghttp2 allocator behaves like malloc/calloc/realloc/free.
@Suite struct NGHTTP2MemoryTests {
    @Test func poolsReallocsAndZeroes() {
        let mem = NGHTTP2Memory()
        let t = mem.testTable
        let a = t.malloc(100, t.mem_user_data)!
        for i in 0..<100 { a.storeBytes(of: UInt8(i), toByteOffset: i, as: UInt8.self) }
        let b = t.realloc(a, 5000, t.mem_user_data)!   // grows past the largest class
        for i in 0..<100 { #expect(b.load(fromByteOffset: i, as: UInt8.self) == UInt8(i)) }
        let c = t.realloc(b, 10, t.mem_user_data)!     // shrinking keeps the first 10 bytes
        #expect(c.load(fromByteOffset: 9, as: UInt8.self) == 9)
        t.free(c, t.mem_user_data)
        let z = t.calloc(10, 10, t.mem_user_data)!
        for i in 0..<100 { #expect(z.load(fromByteOffset: i, as: UInt8.self) == 0) }
        t.free(z, t.mem_user_data)
        let before = mem.allocations
        let again = t.calloc(10, 10, t.mem_user_data)!  // the freed 128-byte block comes back
        #expect(mem.allocations == before)
        #expect(again == z)
        t.free(again, t.mem_user_data)
        t.free(nil, t.mem_user_data)
        #expect(mem.requests == 5)
        withExtendedLifetime(mem) {}
    }
}
