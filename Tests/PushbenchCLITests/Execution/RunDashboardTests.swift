import Foundation
@testable import LoadGenerator
import PushMetrics
import PushVocabulary
import Testing
@testable import PushbenchCLI

/// What `--dashboard` serves: the second's line with its exact percentiles, /seconds and /state as
/// `pushbench dashboard` reads them, the page whole from the binary.
@Suite struct RunDashboardTests {
    static func interval(second: Int, latencies: [Int64]) -> TimelineInterval {
        let h = HdrHistogram.latencyMicroseconds()
        for v in latencies { h.record(v) }
        return TimelineInterval(second: second, sent: Int64(latencies.count), completed: Int64(latencies.count),
                                succeeded: Int64(latencies.count) - 1, failed: 1, transportErrors: 0, latency: h,
                                serviceTime: HdrHistogram.latencyMicroseconds(), stealMs: 3, target: 100)
    }

    /// GET `path` on 127.0.0.1:`port`: the status and the body (one request per connection).
    static func get(_ port: Int, _ path: String) throws -> (Int, String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        try #require(rc == 0)
        let request = Array("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        for _ in 0..<1000 {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            data += chunk[0..<n]
        }
        let text = String(decoding: data, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let status = Int(parts[0].split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    @Test func theSecondsLineCarriesItsExactPercentilesAndStillParses() throws {
        let i = Self.interval(second: 4, latencies: Array(1...1000).map { Int64($0 * 10) })
        let h = i.latency.decode()
        let whole = h.copy()
        let line = RunDashboard.pageLine(LiveSecond(interval: i, startUnix: 1796400000.25, inFlight: 7, stage: "step 1: 100 rps"),
                                         second: h, whole: whole)
        let v = try JSONValue.parse(line)
        #expect(v["p50_us"]?.integer == h.valueAtPercentile(50) && v["p90_us"]?.integer == h.valueAtPercentile(90))
        #expect(v["p99_us"]?.integer == h.valueAtPercentile(99) && v["p999_us"]?.integer == h.valueAtPercentile(99.9))
        #expect(v["max_us"]?.integer == h.max && h.max >= 10_000)
        let curve = try #require(v["curve_us"]?.array)
        #expect(curve.count == RunDashboard.curvePercentiles.count)
        #expect(curve.last?.array?.last?.integer == whole.max)
        let back = try LiveSecond.parse(line: line)
        #expect(back.interval == i && back.inFlight == 7 && back.stage == "step 1: 100 rps")

        // A second with no answer has no percentiles, not a false 0.
        let empty = Self.interval(second: 5, latencies: [])
        let quiet = RunDashboard.pageLine(LiveSecond(interval: empty, startUnix: 0), second: empty.latency.decode(),
                                          whole: HdrHistogram.latencyMicroseconds())
        #expect(!quiet.contains("p50_us") && !quiet.contains("curve_us"))
    }

    @Test func secondsAndStateAnswerWhatWasPublished() throws {
        let source = RunDashboard.Source(kind: "run", label: "nightly", warmupSeconds: 2, measuredSeconds: 10, targetRPS: 100)
        let dashboard = try RunDashboard(address: MetricsAddress(host: "127.0.0.1", port: 0), viewers: 2, source: source)
        defer { dashboard.stop() }
        let start = Date(timeIntervalSince1970: 1796400000.5)
        dashboard.measuredStart(start)
        for s in 0..<3 { dashboard.publish(second: Self.interval(second: s, latencies: [100, 200, 300 * Int64(s + 1)])) }

        let (status, all) = try Self.get(dashboard.port, "/seconds")
        #expect(status == 200)
        let lines = all.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(try lines.map { try LiveSecond.parse(line: $0).interval.second } == [0, 1, 2])
        #expect(try LiveSecond.parse(line: lines[2]).startUnix == 1796400000.5)
        let (_, after) = try Self.get(dashboard.port, "/seconds?after=1")
        #expect(after.split(separator: "\n").count == 1 && after.hasPrefix("{\"second\":2,"))
        #expect(try Self.get(dashboard.port, "/seconds?after=2").1 == "")
        #expect(try Self.get(dashboard.port, "/seconds?after=two").0 == 400)

        let state = try JSONValue.parse(try Self.get(dashboard.port, "/state").1)
        #expect(state["kind"]?.string == "run" && state["label"]?.string == "nightly" && state["done"] == .bool(false))
        #expect(state["seconds"]?.integer == 3 && state["started_unix"]?.number == 1796400000.5 && state["warmup_s"]?.number == 2)
        dashboard.finish(summaryJSON: "{}")
        #expect(try JSONValue.parse(try Self.get(dashboard.port, "/state").1)["done"] == .bool(true))
        #expect(try Self.get(dashboard.port, "/nothing").0 == 404)
    }

    /// The steps of a capacity search continue one timeline: a later step's seconds count from the first
    /// start, so the warm-up between steps is a gap and no second is numbered twice.
    @Test func aLaterMeasuredPhaseContinuesTheTimeline() throws {
        let source = RunDashboard.Source(kind: "capacity", label: "c", warmupSeconds: 1, measuredSeconds: 2, targetRPS: nil)
        let dashboard = try RunDashboard(address: MetricsAddress(host: "127.0.0.1", port: 0), viewers: 2, source: source)
        defer { dashboard.stop() }
        dashboard.measuredStart(Date(timeIntervalSince1970: 1000))
        for s in 0..<2 { dashboard.publish(second: Self.interval(second: s, latencies: [100])) }
        dashboard.measuredStart(Date(timeIntervalSince1970: 1003.2))
        for s in 0..<2 { dashboard.publish(second: Self.interval(second: s, latencies: [100])) }
        // A start that rounds onto a second already published goes after it.
        dashboard.measuredStart(Date(timeIntervalSince1970: 1004.4))
        dashboard.publish(second: Self.interval(second: 0, latencies: [100]))
        let lines = try Self.get(dashboard.port, "/seconds").1.split(separator: "\n")
        #expect(try lines.map { try LiveSecond.parse(line: String($0)).interval.second } == [0, 1, 3, 4, 5])
        #expect(try lines.allSatisfy { try LiveSecond.parse(line: String($0)).startUnix == 1000 })
    }

    /// `/seconds?after=N&limit=K` pages through the kept seconds, the oldest K after N at a time.
    @Test func secondsArePagedWithLimit() throws {
        let source = RunDashboard.Source(kind: "run", label: "p", warmupSeconds: 0, measuredSeconds: 10, targetRPS: 100)
        let dashboard = try RunDashboard(address: MetricsAddress(host: "127.0.0.1", port: 0), viewers: 2, source: source)
        defer { dashboard.stop() }
        dashboard.measuredStart(Date(timeIntervalSince1970: 1000))
        for s in 0..<5 { dashboard.publish(second: Self.interval(second: s, latencies: [100])) }
        func seconds(_ query: String) throws -> [Int] {
            let (status, body) = try Self.get(dashboard.port, "/seconds" + query)
            #expect(status == 200, "\(query)")
            return try body.split(separator: "\n").map { try LiveSecond.parse(line: String($0)).interval.second }
        }
        #expect(try seconds("?limit=2") == [0, 1])
        #expect(try seconds("?after=1&limit=2") == [2, 3])
        #expect(try seconds("?after=3&limit=2") == [4])
        #expect(try seconds("?after=4&limit=2") == [])
        #expect(try seconds("?after=0") == [1, 2, 3, 4])
        #expect(try seconds("?limit=100") == [0, 1, 2, 3, 4])
        for bad in ["?limit=0", "?limit=-1", "?limit=two", "?after=1&limit="] {
            #expect(try Self.get(dashboard.port, "/seconds" + bad).0 == 400, "\(bad)")
        }
    }

    /// `/state`'s `seconds` counts the seconds `/seconds` holds, not the other events kept beside them;
    /// `viewers` and `max_viewers` tell a refused page why.
    @Test func stateCountsSecondsAndViewers() throws {
        let source = RunDashboard.Source(kind: "pipeline", label: "p", warmupSeconds: 0, measuredSeconds: 10, targetRPS: 100)
        let dashboard = try RunDashboard(address: MetricsAddress(host: "127.0.0.1", port: 0), viewers: 3, source: source)
        defer { dashboard.stop() }
        dashboard.measuredStart(Date(timeIntervalSince1970: 1000))
        for s in 0..<3 {
            dashboard.publish(second: Self.interval(second: s, latencies: [100]))
            dashboard.publish(event: "pipeline", json: "{\"second\":\(s)}", second: s)
        }
        dashboard.mark("held", second: 2)
        var state = try JSONValue.parse(try Self.get(dashboard.port, "/state").1)
        #expect(state["seconds"]?.integer == 3)
        #expect(state["viewers"]?.integer == 0 && state["max_viewers"]?.integer == 3)

        // A viewer holding its stream open is counted.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(dashboard.port).bigEndian)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        try #require(rc == 0)
        let request = Array("GET /events HTTP/1.1\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let deadline = Date().addingTimeInterval(5)
        repeat {
            state = try JSONValue.parse(try Self.get(dashboard.port, "/state").1)
            if state["viewers"]?.integer == 1 { break }
            usleep(20_000)
        } while Date() < deadline
        #expect(state["viewers"]?.integer == 1 && state["max_viewers"]?.integer == 3)
    }

    /// The gateway has no `second` events: its `/seconds` serves its `gateway` lines, and `/state`
    /// counts them.
    @Test func theGatewaysSecondsAreItsGatewayEvents() throws {
        let source = RunDashboard.Source(kind: "gateway", label: "--latency=2ms", warmupSeconds: 0)
        let dashboard = try RunDashboard(address: MetricsAddress(host: "127.0.0.1", port: 0), viewers: 2, source: source)
        defer { dashboard.stop() }
        for s in 0..<3 { dashboard.publish(event: "gateway", json: "{\"second\":\(s),\"requests\":7}", second: s) }
        let (status, body) = try Self.get(dashboard.port, "/seconds?after=0")
        #expect(status == 200 && body == "{\"second\":1,\"requests\":7}\n{\"second\":2,\"requests\":7}\n")
        #expect(try JSONValue.parse(try Self.get(dashboard.port, "/state").1)["seconds"]?.integer == 3)
    }

    /// A run a stop signal ended does not linger; one that ended by itself does (a short linger here).
    @Test func aRunEndedByASignalDoesNotLinger() throws {
        let source = RunDashboard.Source(kind: "run", label: "l", warmupSeconds: 0)
        let dashboard = try RunDashboard(address: MetricsAddress(host: "127.0.0.1", port: 0), viewers: 2, source: source)
        defer { dashboard.stop() }
        dashboard.finish(summaryJSON: "{}")
        #expect(!dashboard.linger(3, interrupted: true))
        #expect(dashboard.linger(0.2, interrupted: false))
    }

    /// After the end, a run someone follows (a client asked /state or /seconds) keeps answering a
    /// moment, so the follower sees `done`; a run nobody follows stops at once.
    @Test func aFollowedRunStillAnswersDoneAfterItsEnd() throws {
        let source = RunDashboard.Source(kind: "run", label: "f", warmupSeconds: 0)
        let lonely = try RunDashboard(address: MetricsAddress(host: "127.0.0.1", port: 0), viewers: 2, source: source)
        lonely.publish(second: Self.interval(second: 0, latencies: [100]))
        lonely.finish(summaryJSON: "{}")
        #expect(lonely.graceSeconds == 0)
        lonely.stop()

        let followed = try RunDashboard(address: MetricsAddress(host: "127.0.0.1", port: 0), viewers: 2, source: source)
        #expect(try JSONValue.parse(try Self.get(followed.port, "/state").1)["done"] == .bool(false))
        #expect(followed.graceSeconds == 0, "not before the end")
        followed.publish(second: Self.interval(second: 0, latencies: [100]))
        followed.finish(summaryJSON: "{}")
        #expect(followed.graceSeconds == RunDashboard.followerGraceSeconds)
        let stopped = DispatchSemaphore(value: 0)
        final class Stopping: @unchecked Sendable {
            let dashboard: RunDashboard
            init(_ dashboard: RunDashboard) { self.dashboard = dashboard }
        }
        let stopping = Stopping(followed)
        Thread { stopping.dashboard.stop(); stopped.signal() }.start()
        usleep(200_000)
        #expect(try JSONValue.parse(try Self.get(followed.port, "/state").1)["done"] == .bool(true))
        #expect(try Self.get(followed.port, "/seconds").1.split(separator: "\n").count == 1)
        #expect(stopped.wait(timeout: .now() + 10) == .success)
    }

    /// The busy share comes from the loops' idle time between two snapshots, averaged over threads.
    @Test func theBusyShareIsWhatTheLoopsWereNotIdle() {
        var a = LiveSnapshot(), b = LiveSnapshot()
        (a.idleSampledAt, a.idleNanoseconds) = (2_000_000_000, 500_000_000)     // two threads, summed
        (b.idleSampledAt, b.idleNanoseconds) = (4_000_000_000, 2_000_000_000)   // 1.5 s idle of 2 s
        #expect(RunDashboard.busy(from: a, to: b) == 0.25)
        #expect(RunDashboard.busy(from: LiveSnapshot(), to: b) == nil)
        #expect(RunDashboard.busy(from: b, to: b) == nil)
    }

    /// Each second of a schedule is marked with its stage; a step (a stage of no length) is never one.
    @Test func eachSecondOfAScheduleIsInItsStage() {
        let stages = [RateSchedule.Stage(seconds: 2, from: 1000, to: 1000), RateSchedule.Stage(seconds: 0, from: 1000, to: 5000),
                      RateSchedule.Stage(seconds: 3, from: 5000, to: 50000)]
        #expect(RunDashboard.stage(of: 0, in: stages) == "stage 1: 1,000 rps")
        #expect(RunDashboard.stage(of: 1, in: stages) == "stage 1: 1,000 rps")
        #expect(RunDashboard.stage(of: 2, in: stages) == "stage 3: 5,000 → 50,000 rps")
        #expect(RunDashboard.stage(of: 4, in: stages) == "stage 3: 5,000 → 50,000 rps")
        #expect(RunDashboard.stage(of: 5, in: stages) == nil)
        #expect(RunDashboard.stage(of: 0, in: []) == nil)
    }

    /// The page is whole: no script, style or image from anywhere else, and it draws from /events.
    @Test func thePageNeedsNothingFromTheNetwork() {
        let page = DashboardPage.html
        #expect(page.hasPrefix("<!DOCTYPE html>") && page.hasSuffix("</html>\n"))
        #expect(!page.contains("http://") && !page.contains("https://") && !page.contains("//cdn"))
        #expect(!page.contains("src=") && !page.contains("<link rel=\"stylesheet\""))
        #expect(page.contains("new EventSource(\"/events\")") && page.contains("fetch(\"/state\")"))
        // A stream refused past the limit is explained from /state's viewers and max_viewers.
        #expect(page.contains("s.viewers >= s.max_viewers") && page.contains("viewers at once (--dashboard-viewers)"))
    }
}
