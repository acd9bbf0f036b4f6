import Testing
@testable import PushbenchCLI

/// `max_rss_bytes` reads the kernel's per-address-space high-water mark, which starts afresh at exec.
@Suite struct PeakMemoryTests {
    @Test func theHighWaterMarkIsReadInBytes() {
        let status = "Name:\tpushbench\nVmPeak:\t  400000 kB\nVmHWM:\t    1972 kB\nVmRSS:\t    1900 kB\n"
        #expect(PeakMemory.highWaterMark(inStatus: status) == Int64(1972 * 1024))
    }

    @Test func aStatusWithoutOneGivesNil() {
        #expect(PeakMemory.highWaterMark(inStatus: "Name:\tx\nVmRSS:\t 12 kB\n") == nil)
        #expect(PeakMemory.highWaterMark(inStatus: "VmHWM:\t 12 MB\n") == nil)
    }

    /// This test process has touched memory of its own, so its figure is at least that.
    @Test func thisProcessHasAPeak() {
        let touched = [UInt8](repeating: 1, count: 8 << 20)
        #expect(PeakMemory.bytes() >= Int64(touched.count))
    }
}
