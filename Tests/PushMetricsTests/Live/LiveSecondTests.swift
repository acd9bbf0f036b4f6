import Foundation
import Testing
@testable import PushMetrics

/// The line a dashboard endpoint serves for each second: it reads back as written, two agents' lines
/// merge into the exact percentiles of the whole, and a broken line says which member is wrong.
@Suite struct LiveSecondTests {
    static func interval(second: Int, latencies: [Int64], target: Int64? = nil) -> TimelineInterval {
        let lat = HdrHistogram.latencyMicroseconds(), svc = HdrHistogram.latencyMicroseconds()
        for v in latencies { lat.record(v); svc.record(v / 2) }
        let n = Int64(latencies.count)
        return TimelineInterval(second: second, sent: n, completed: n, succeeded: n - 1, failed: 1, transportErrors: 0,
                                latency: lat, serviceTime: svc, stealMs: 3, target: target)
    }

    @Test func aLineReadsBackAsWritten() throws {
        let full = LiveSecond(interval: Self.interval(second: 7, latencies: [100, 200, 300], target: 3), startUnix: 1_796_400_000.25,
                              errors: ["BadDeviceToken": 1], inFlight: 4, connections: 8, peerStreamLimit: 1000, busy: 0.5,
                              stage: "50000 rps")
        let line = full.jsonLine()
        #expect(!line.contains("\n"))
        #expect(line.hasPrefix("{\"second\":7,\"start_unix\":1796400000.25,\"sent\":3,"), "\(line)")
        #expect(try LiveSecond.parse(line: line) == full)
        let bare = LiveSecond(interval: Self.interval(second: 0, latencies: [5]), startUnix: 1)
        #expect(!bare.jsonLine().contains("\"errors\":"))
        #expect(try LiveSecond.parse(line: bare.jsonLine()) == bare)
    }

    @Test func twoAgentsMergeIntoTheWholesPercentiles() throws {
        let a = (1...900).map { Int64($0) }, b = (1...100).map { Int64($0) * 1000 }
        let lines = [LiveSecond(interval: Self.interval(second: 2, latencies: a), startUnix: 10).jsonLine(),
                     LiveSecond(interval: Self.interval(second: 2, latencies: b), startUnix: 10).jsonLine()]
        let merged = TimelineInterval.merged(try lines.map { try LiveSecond.parse(line: $0).interval })
        #expect(merged.count == 1)
        let whole = HdrHistogram.latencyMicroseconds()
        for v in a + b { whole.record(v) }
        let h = merged[0].latency.decode()
        #expect(h.totalCount == 1000)
        #expect(h.valueAtPercentile(99) == whole.valueAtPercentile(99))
        #expect(h.valueAtPercentile(99) > 90_000, "the slow agent's tail, not an average")
    }

    @Test(arguments: [
        ("[1]", "not a JSON object"),
        ("{\"second\":1}", "'start_unix' is missing or not a number"),
        ("{\"second\":\"x\",\"start_unix\":1}", "'second' is missing or not an integer"),
    ])
    func aBrokenLineNamesWhatIsWrong(line: String, message: String) {
        #expect(throws: LiveSecond.ParseError(description: message)) { try LiveSecond.parse(line: line) }
    }

    @Test func aBrokenHistogramIsNamed() {
        var line = LiveSecond(interval: Self.interval(second: 0, latencies: [5]), startUnix: 1).jsonLine()
        line = line.replacingOccurrences(of: "\"latency\":\"", with: "\"latency\":\"!!")
        #expect { try LiveSecond.parse(line: line) } throws: { "\($0)".contains("'latency' is not an encoded histogram") }
    }
}
