import Testing
@testable import LoadGenerator

@Suite struct MachineNoiseTests {
    @Test func stealIsTheEighthValueOfTheCpuTotalLine() {
        let text = Array("cpu  1117026 31 165241 399087 3338 0 18424 8588 0 0\ncpu0 1 2 3 4 5 6 7 99 0 0\n".utf8)
        #expect(HostProbe.stealTicks(firstLine: text[...]) == 8588)
        // A kernel without the steal column, or something that is not /proc/stat: nothing to report.
        #expect(HostProbe.stealTicks(firstLine: Array("cpu  1 2 3 4 5 6 7\n".utf8)[...]) == nil)
        #expect(HostProbe.stealTicks(firstLine: Array("intr 1 2 3 4 5 6 7 8 9\n".utf8)[...]) == nil)
        #expect(HostProbe.stealTicks(firstLine: Array("cpu  1 2 x 4 5 6 7 8\n".utf8)[...]) == nil)
    }

    @Test func thisMachinesStealClockOnlyMovesForward() throws {
        let a = try #require(HostProbe.stealNanoseconds())
        let b = try #require(HostProbe.stealNanoseconds())
        #expect(b >= a)
        #expect(HostProbe.stealNanoseconds(procStat: "/nonexistent/stat") == nil)
    }
}
