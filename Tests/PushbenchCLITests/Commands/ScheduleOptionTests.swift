import Foundation
import Testing
@testable import LoadGenerator
@testable import PushbenchCLI

/// `--stages`, `--rps A..B`, `--rate-file`, `--segment`, `--start-at`: what they accept, what they refuse
/// (one line naming the option, before any traffic), and what they make of the rest.
@Suite struct ScheduleOptionTests {
    private func run(_ args: [String]) throws(UsageError) -> RunOptions {
        try RunCommand(arguments: ParsedArguments(args, options: RunCommand.options)).options
    }

    private func refused(_ args: [String]) -> String? {
        do throws(UsageError) { _ = try run(args); return nil } catch { return error.message }
    }

    @Test func stagesAndRampsBecomeSchedules() throws {
        let stages = try run(["--stages", "30s:10k,60s:50k,30s:0"])
        #expect(stages.schedule?.durationNs == 120_000_000_000)
        #expect(stages.durationSeconds == 120)
        #expect(stages.warmupSeconds == 0, "a schedule from 0 has nothing to warm up at")
        #expect(stages.scheduleSpec == "--stages 30s:10k,60s:50k,30s:0")
        let stepped = try run(["--stages", "0s:10k,30s:10k"])
        #expect(stepped.warmupSeconds == 2, "a step to 10k warms up at 10k")
        let ramp = try run(["--rps", "10k..200k", "--duration", "2m"])
        #expect(ramp.rate == .ramp(from: 10_000, to: 200_000))
        #expect(ramp.schedule == .ramp(from: 10_000, to: 200_000, durationNs: 120_000_000_000))
        #expect(try run(["--rps", "1.5k"]).rate == .perSecond(1_500))
        #expect(try run(["--rps", "2000"]).schedule == nil)
    }

    @Test func aScheduleRefusesWhatItReplaces() {
        #expect(refused(["--stages", "10s:1k", "--rps", "5k"]) == "--rps: --stages sets the rate and the length; leave --rps out")
        #expect(refused(["--stages", "10s:1k", "--duration", "5s"])?.hasPrefix("--duration:") == true)
        #expect(refused(["--rps", "1k..2k", "--requests", "100"])?.hasPrefix("--requests:") == true)
        #expect(refused(["--rps", "1k..2k", "--encoder", "copy,zerocopy"])?.hasPrefix("--encoder:") == true)
        #expect(refused(["--stages", "10s"]) == "--stages: stage 1 '10s' is not DURATION:RATE (as in 30s:10k)")
        #expect(refused(["--stages", "10s:0"]) == "--stages: the rate is 0 throughout: nothing would be sent")
        #expect(refused(["--rps", "0..0"]) == "--rps: '0..0' never rises above 0")
        #expect(refused(["--rate-file", "/nonexistent/curve.csv"]) == "--rate-file: /nonexistent/curve.csv: cannot read the file")
    }

    @Test func aRateFileIsReadWhenTheOptionsAre() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("curve-\(UUID().uuidString).csv")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data("second,rate\n0,100\n2,300\n".utf8).write(to: file)
        let o = try run(["--rate-file", file.path])
        #expect(o.schedule?.totalRequests == 500)
        #expect(o.durationSeconds == 3)
        try Data("0,100\n2,fast\n".utf8).write(to: file)
        #expect(refused(["--rate-file", file.path]) == "--rate-file: \(file.path):2: 'fast' is not a rate")
    }

    @Test func segmentsAndStartTimes() throws {
        let s = try run(["--segment", "2/4", "--rps", "max", "--connections", "10"])
        #expect(s.segment == SegmentOption(index: 2, count: 4))
        #expect(s.connectionsOfThisAgent == 2)
        #expect(try run(["--segment", "1/4", "--rps", "max", "--connections", "10"]).connectionsOfThisAgent == 3)
        #expect(try run(["--segment", "1/4", "--connections", "10"]).connectionsOfThisAgent == 10, "an open loop splits the rate, not the connections")
        #expect(refused(["--segment", "4/4"]) == "--segment: 4 is not an agent of 4 (0...3)")
        #expect(refused(["--segment", "1-4"]) == "--segment: '1-4' is not I/N (as in 0/4)")
        #expect(refused(["--segment", "0/8", "--rps", "max", "--connections", "4"])?.hasPrefix("--connections:") == true)
        #expect(refused(["--start-at", "2001-01-01T00:00:00Z"])?.hasPrefix("--start-at: 2001-01-01T00:00:00Z is ") == true)
        #expect(try run(["--start-at", "2001-01-01T00:00:00Z", "--start-late-ok"]).startAtUnixNs == 978_307_200_000_000_000)
        #expect(refused(["--start-late-ok"]) == "--start-late-ok: only with --start-at")
        #expect(refused(["--start-at", "tomorrow"])?.hasPrefix("--start-at: 'tomorrow' is not a time") == true)
    }

    @Test func startTimesAreReadToTheNanosecond() {
        #expect(StartTime.parse("1796119200") == 1_796_119_200_000_000_000)
        #expect(StartTime.parse("1796119200.000000001") == 1_796_119_200_000_000_001)
        #expect(StartTime.parse("1796119200.25") == 1_796_119_200_250_000_000)
        #expect(StartTime.parse("1970-01-01T00:00:00Z") == 0)
        #expect(StartTime.parse("2026-12-01T10:00:00.123456789Z") == 1_796_119_200_123_456_789)
        #expect(StartTime.parse("2026-12-01T11:30:00+01:30") == 1_796_119_200_000_000_000)
        #expect(StartTime.parse("2026-12-01 10:00:00z") == 1_796_119_200_000_000_000)
        #expect(StartTime.parse("2024-02-29T00:00:00Z") == 1_709_164_800_000_000_000)
        for bad in ["2023-02-29T00:00:00Z", "2026-12-01T10:00:00", "2026-12-01T25:00:00Z", "1796119200.", "-5", "1e9",
                    "2026-12-01T10:00:00.Z", "2026-12-01T10:00:00.1234567890Z"] {
            #expect(StartTime.parse(bad) == nil, "\(bad)")
        }
        #expect(StartTime.format(1_796_119_200_123_456_789) == "2026-12-01T10:00:00.123456789Z")
        #expect(StartTime.format(1_796_119_200_000_000_000) == "2026-12-01T10:00:00Z")
        #expect(StartTime.format(951_782_400_500_000_000) == "2000-02-29T00:00:00.5Z")
    }
}
