import CAllocCounter
import Testing

/// The allocation counter must see Swift heap traffic, or every zero-allocation test would pass vacuously.
@Suite struct AllocCounterTests {
    @Test func countsSwiftHeapAllocations() {
        #expect(pb_alloc_counter_active() == 1)
        let before = pb_alloc_count()
        var array: [Int] = []
        array.reserveCapacity(Int.random(in: 100...200))
        array.append(1)
        #expect(pb_alloc_count() > before)
        #expect(array.count == 1)
    }

    @Test func countsNothingForArithmetic() {
        var x = UInt64.random(in: 0...100)
        let before = pb_alloc_count()
        for i in 0..<1000 { x = x &* 31 &+ UInt64(i) }
        #expect(pb_alloc_count() == before)
        withExtendedLifetime(x) {}
    }
}
