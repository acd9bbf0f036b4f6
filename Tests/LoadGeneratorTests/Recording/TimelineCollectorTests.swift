import Testing
@testable import PushMetrics
@testable import LoadGenerator

/// A sink that counts what it is given and keeps nothing.
private final class CountingSink: TimelineSink {
    var seconds: [Int] = []
    var completed: Int64 = 0
    var steal: [Int64?] = []
    var last: TimelineInterval?
    func append(_ second: TimelineInterval) {
        seconds.append(second.second)
        completed += second.completed
        steal.append(second.stealMs)
        last = second
    }
}

/// A sink that wants each second's error answers by reason, as the dashboard's does.
private final class ErrorsSink: TimelineSink {
    var errors: [Int: [String: Int64]?] = [:]
    var wantsErrors: Bool { true }
    func append(_ second: TimelineInterval) { append(second, errors: nil) }
    func append(_ second: TimelineInterval, errors: [String: Int64]?) { self.errors[second.second] = errors }
}

@Suite struct TimelineCollectorTests {
    /// One thread closes seconds 0-2, with two error answers in the last; the other closes 0-1 and
    /// ends (nothing happened on it in the last, partial second): the last second keeps its reasons.
    @Test func aThreadThatEndedEarlyAddsNoErrorsToTheLastSecond() {
        let a = IntervalOutbox(), b = IntervalOutbox()
        let h = HdrHistogram.latencyMicroseconds()
        h.record(100)
        let none = [Int](repeating: 0, count: Reasons.count), noStatus = [Int](repeating: 0, count: 600)
        var two = none
        two[1] = 2
        for s in 0...2 {
            a.failures.put(second: s, byReason: s == 2 ? two : none, byStatus: noStatus, any: s == 2)
            a.put(second: s, sent: 1, completed: 1, succeeded: s == 2 ? 0 : 1, failed: s == 2 ? 2 : 0, transportErrors: 0,
                  latency: h, serviceTime: h)
        }
        for s in 0...1 {
            b.failures.put(second: s, byReason: none, byStatus: noStatus, any: false)
            b.put(second: s, sent: 1, completed: 1, succeeded: 1, failed: 0, transportErrors: 0, latency: h, serviceTime: h)
        }
        a.end()
        b.end()
        let sink = ErrorsSink()
        let collector = TimelineCollector(outboxes: [a, b], target: nil, sink: sink)
        collector.collect(final: true)
        #expect(sink.errors.keys.sorted() == [0, 1, 2])
        #expect(sink.errors[2] == .some([Reasons.names[1]: 2]), "\(sink.errors)")
        #expect(sink.errors[0] == .some([:]))
    }

    /// Two driver threads (DriverCore, no sockets) over `seconds` seconds at 20 rps each, every request
    /// answered 2 ms later; the main thread collects every 100 ms and samples steal at each boundary.
    /// Returns what went on, and the most intervals held at once by the recorders' outboxes and the collector.
    static func simulate(seconds: Int, sink: TimelineSink?, everySecond: (Int) -> Void = { _ in }) -> (TimelineCollector, Int, [Recorder]) {
        let clock = ManualClock(1_000_000_000)
        let cores = (0..<2).map { t -> (DriverCore, FakePort) in
            let p = DriverPlan(rate: 40, threads: 2, thread: t, durationNs: UInt64(seconds) * 1_000_000_000, capacity: 8)
            let core = DriverCore(plan: p, clock: clock, recorder: Recorder())
            let port = FakePort(streams: 8)
            core.attach(port)
            return (core, port)
        }
        let collector = TimelineCollector(outboxes: cores.map(\.0.recorder.outbox), target: nil, sink: sink)
        let t0 = clock.time
        for (core, _) in cores { core.begin(at: t0) }
        collector.startSteal()
        var most = 0
        var finished = [false, false]
        var nextSecond = t0 + 1_000_000_000
        var second = 0
        while finished.contains(false) {
            clock.advance(2_000_000)
            for (k, (core, port)) in cores.enumerated() where !finished[k] {
                while !port.inFlight.isEmpty { core.responded(slot: port.takeOldest(), status: 200, reason: 0) }
                core.pump()
                if core.tick() == .finish {
                    core.finish()
                    finished[k] = true
                }
            }
            if clock.time >= nextSecond {
                collector.addSteal(Int64(second % 5))
                everySecond(second)
                second += 1
                nextSecond += 1_000_000_000
            }
            if (clock.time - t0) % 100_000_000 == 0 { collector.collect() }
            most = max(most, collector.retained)
        }
        collector.addSteal(Int64(second % 5))   // the last, partial second, as LoadRun samples it at the end
        collector.collect(final: true)
        return (collector, most, cores.map(\.0.recorder))
    }

    /// Ten minutes of seconds: the threads hand each second over as it closes and the collector passes
    /// it on once both have closed it, so only a few are ever held, never every second of the run.
    @Test func aLongRunHoldsOnlyAFewSeconds() {
        let sink = CountingSink()
        let seconds = 600
        let (collector, most, recorders) = Self.simulate(seconds: seconds, sink: sink)
        #expect(most <= 4, "held \(most) intervals at once")
        #expect(collector.retained == 0 && collector.kept.isEmpty)
        #expect(sink.seconds == Array(0..<sink.seconds.count) && sink.seconds.count >= seconds)
        #expect(sink.completed == recorders.reduce(0) { $0 + Int64($1.measured.completed) })
        #expect(sink.completed == Int64(seconds * 40))
        #expect(sink.steal.prefix(seconds).enumerated().allSatisfy { $0.element == Int64($0.offset % 5) })
    }

    /// Streamed or kept in memory, the seconds are the same.
    @Test func theSinkGetsWhatMemoryWouldKeep() {
        let sink = CountingSink()
        let (streamed, _, _) = Self.simulate(seconds: 12, sink: sink)
        let (memory, _, _) = Self.simulate(seconds: 12, sink: nil)
        #expect(streamed.kept.isEmpty)
        #expect(memory.kept.map(\.second) == sink.seconds)
        #expect(memory.kept.reduce(0) { $0 + $1.completed } == sink.completed)
        #expect(memory.kept.map(\.stealMs) == sink.steal)
        #expect(memory.kept.last == sink.last)
    }
}
