import Foundation
import LoadGenerator
import PushMetrics
import PushTransport
import PushVocabulary
import Synchronization

/// `--dashboard [HOST:]PORT`: the run watched in a browser. The endpoint (its own thread) serves the page
/// (``DashboardPage``), the event stream, the kept seconds and the state; the run's main thread publishes
/// what it already has each second (the merged second the timeline closes, the progress line's
/// snapshot), so no driver thread ever meets a viewer. docs/dashboard.md describes the events.
///
/// Main thread only, but for what the endpoint's handler reads (``Shared``).
final class RunDashboard {
    /// What the dashboard shows of the source: `/state`'s kind and label, and the live event's phases.
    struct Source: Sendable {
        /// `run`, `capacity`, `gateway` or `pipeline`.
        var kind: String
        var label: String
        var warmupSeconds: Double
        /// The measured time after the warm-up, when known (the drain follows it).
        var measuredSeconds: Double?
        var targetRPS: Int?
        /// The stages of `--stages`, `--rate-file` or a ramp, each second marked with the one it is in.
        var stages: [RateSchedule.Stage] = []
    }

    /// What the endpoint's thread reads: `/state`'s figures, under a lock.
    final class Shared: Sendable {
        struct State {
            var startedUnix: Double?
            var done = false
            var stage: String?
            var endpoint: EventStreamEndpoint?
            /// A client asked `/state` or `/seconds`: something (`pushbench dashboard`) follows the run and
            /// must get the chance to see it done.
            var followed = false
        }
        let source: Source
        let maxViewers: Int
        let state = Mutex(State())
        init(source: Source, maxViewers: Int) {
            self.source = source
            self.maxViewers = maxViewers
        }

        /// The event `/seconds` serves: the gateway's own `gateway` seconds, every other source's `second`.
        var secondsEvent: String { source.kind == "gateway" ? "gateway" : "second" }

        /// `/state`'s JSON.
        var stateJSON: String {
            let s = state.withLock { ($0.startedUnix, $0.done, $0.endpoint, $0.stage) }
            return JSONWriter.text { w in
                w.object { o in
                    o.member("kind", source.kind)
                    o.member("label", source.label)
                    o.member("done", s.1)
                    o.member("seconds", Int64(s.2?.keptCount(named: secondsEvent) ?? 0))
                    o.member("viewers", Int64(s.2?.viewers ?? 0))
                    o.member("max_viewers", Int64(maxViewers))
                    if let started = s.0 { o.member("started_unix", started) }
                    o.member("warmup_s", source.warmupSeconds)
                    if let m = source.measuredSeconds { o.member("measured_s", m) }
                    if let t = source.targetRPS { o.member("target_rps", Int64(t)) }
                    if let stage = s.3 { o.member("stage", stage) }
                }
            }
        }

        /// `/seconds?after=N&limit=K`'s NDJSON: the kept seconds after N (all without N), in order, at
        /// most the oldest K of them (all without K), so a follower can page through a long run.
        func seconds(after: Int?, limit: Int? = nil) -> String {
            let kept = state.withLock { $0.endpoint }?.kept(named: secondsEvent) ?? []
            var text = ""
            var lines = 0
            for e in kept where after.map({ (e.id ?? 0) > $0 }) ?? true {
                if let limit, lines >= limit { break }
                text += e.data + "\n"
                lines += 1
            }
            return text
        }

        /// Answers `/state`, `/seconds` and the page; nil for any other path.
        func answer(_ path: String, _ query: [String: String]) -> ScrapeEndpoint.Response? {
            switch path {
            case "/", "/index.html":
                return .init(status: 200, contentType: "text/html; charset=utf-8", body: DashboardPage.html)
            case "/state":
                state.withLock { $0.followed = true }
                return .init(status: 200, contentType: "application/json", body: stateJSON + "\n")
            case "/seconds":
                let after = query["after"].flatMap { Int($0) }
                if query["after"] != nil && after == nil {
                    return .init(status: 400, contentType: "text/plain", body: "after: not an integer\n")
                }
                let limit = query["limit"].flatMap { Int($0) }
                if query["limit"] != nil && (limit ?? 0) < 1 {
                    return .init(status: 400, contentType: "text/plain", body: "limit: not a whole number ≥ 1\n")
                }
                state.withLock { $0.followed = true }
                return .init(status: 200, contentType: "application/x-ndjson", body: seconds(after: after, limit: limit))
            default:
                return nil
            }
        }
    }

    let shared: Shared
    private let endpoint: EventStreamEndpoint
    private var startUnix: Double?
    private var last: LiveSnapshot?
    private var whole: HdrHistogram?
    private var offset = 0
    // The busy share of the sending threads over the last progress interval, from their idle time.
    private var busy: Double?
    /// The stage now (a capacity step and its verdict), sent with each second and live event.
    var stage: String? {
        didSet { shared.state.withLock { $0.stage = stage } }
    }

    /// The port listened on.
    var port: Int { endpoint.port }

    /// Listens on `address` before any traffic (the caller exits 2 when it cannot).
    init(address: MetricsAddress, viewers: Int, source: Source) throws(ScrapeEndpoint.Failure) {
        let shared = Shared(source: source, maxViewers: viewers)
        self.shared = shared
        let limits = EventStreamEndpoint.Limits(
            viewers: viewers, refusal: "the dashboard serves at most \(viewers) viewers at once (--dashboard-viewers)")
        endpoint = try EventStreamEndpoint.start(host: address.host, port: address.port, limits: limits) { path, query in
            shared.answer(path, query)
        }
        shared.state.withLock { $0.endpoint = endpoint }
    }

    /// A measured phase begins at `date`. The first is second 0 of the dashboard's timeline; a later one
    /// (the next step of a capacity search) continues it, its seconds counted from that first start, so
    /// the time between steps shows as a gap.
    func measuredStart(_ date: Date) {
        let t = date.timeIntervalSince1970
        guard let first = startUnix else {
            startUnix = t
            shared.state.withLock { $0.startedUnix = t }
            return
        }
        offset = max(Int((t - first).rounded()), nextSecond)
    }

    /// The timeline second after the last one published.
    private(set) var nextSecond = 0

    /// One merged second, as the timeline closes it, with its error answers by reason when known (main
    /// thread).
    func publish(second closed: TimelineInterval, errors: [String: Int64]? = nil) {
        var interval = closed
        interval.second += offset
        nextSecond = interval.second + 1
        let live = LiveSecond(interval: interval, startUnix: startUnix ?? 0, errors: errors, inFlight: last.map { Int64($0.inFlight) },
                              connections: last.map { Int64($0.connections) },
                              peerStreamLimit: last?.peerStreamLimit.map { Int64($0) }, busy: busy,
                              stage: stage ?? Self.stage(of: closed.second, in: shared.source.stages))
        publish(live)
    }

    /// One second as it is (numbered and dated already; `pushbench dashboard` publishes the seconds it
    /// merged this way): the `second` event with its percentiles and the curve of every second so far.
    func publish(_ live: LiveSecond) {
        let h = live.interval.latency.decode()
        if let whole { whole.add(h) } else { whole = h.copy() }
        let line = Self.pageLine(live, second: h, whole: whole!)
        endpoint.publish(.init(name: "second", data: line, id: live.interval.second), keeping: .history)
    }

    /// A `live` event whose figures were put together elsewhere (`pushbench dashboard`'s, from its agents):
    /// `json`, one object with the members ``publish(live:elapsed:)`` writes that the source knows.
    func publish(liveJSON json: String) {
        endpoint.publish(.init(name: "live", data: json), keeping: .latest)
    }

    /// The progress line's snapshot, `elapsed` seconds into the run (main thread, about once a second).
    func publish(live s: LiveSnapshot, elapsed: Double) {
        if let p = last {
            busy = Self.busy(from: p, to: s)
        }
        last = s
        let source = shared.source
        let phase = elapsed < source.warmupSeconds ? "warmup"
            : source.measuredSeconds.map { elapsed < source.warmupSeconds + $0 } ?? true ? "measure" : "drain"
        let text = JSONWriter.text { w in
            w.object { o in
                o.member("elapsed_s", (elapsed * 1000).rounded() / 1000)
                o.member("phase", phase)
                o.member("sent", Int64(s.sent))
                o.member("completed", Int64(s.completed))
                o.member("errors", Int64(s.errors))
                o.member("in_flight", Int64(s.inFlight))
                o.member("backlog", Int64(s.backlog))
                o.member("connections", Int64(s.connections))
                if let t = source.targetRPS { o.member("target_rps", Int64(t)) }
                if let stage { o.member("stage", stage) }
                if s.lastSecondCompleted > 0 {
                    o.member("p50_us", Int64(s.p50Micros))
                    o.member("p99_us", Int64(s.p99Micros))
                }
            }
        }
        endpoint.publish(.init(name: "live", data: text), keeping: .latest)
    }

    /// A source's own event once a second (the gateway's `gateway`, a pipeline's `pipeline`), numbered
    /// `second` and kept for viewers that connect later.
    func publish(event name: String, json: String, second: Int) {
        endpoint.publish(.init(name: name, data: json, id: second), keeping: .history)
    }

    /// A mark on the time axis at timeline second `second` (the next one when nil): a capacity step's
    /// verdict.
    func mark(_ text: String, second: Int? = nil) {
        let json = JSONWriter.text { w in
            w.object { o in
                o.member("second", Int64(second ?? nextSecond))
                o.member("text", text)
            }
        }
        endpoint.publish(.init(name: "mark", data: json), keeping: .history)
    }

    /// The run ended: its summary.json (`final`), then the `done` phase.
    func finish(summaryJSON: String) {
        endpoint.publish(.init(name: "final", data: summaryJSON), keeping: .latest)
        shared.state.withLock { $0.done = true }
    }

    /// Serves the final page `seconds` longer, stopped early by a stop signal; not at all when a stop
    /// signal already ended the run (`interrupted`: the user asked to stop, not to wait). Whether it
    /// lingered.
    @discardableResult
    func linger(_ seconds: Double, interrupted: Bool = interruptRequested.load(ordering: .relaxed)) -> Bool {
        guard !interrupted else { return false }
        let until = Date().addingTimeInterval(seconds)
        let previous = catchInterrupts()
        defer { restoreInterrupts(previous) }
        while Date() < until && !interruptRequested.load(ordering: .relaxed) { usleep(100_000) }
        lingered = true
        return true
    }

    private var lingered = false

    /// Seconds the endpoint still answers after the end when nothing lingered: a follower (a client that
    /// asked `/state` or `/seconds`) polls about once a second and must see `done` and the last seconds.
    static let followerGraceSeconds = 2.0

    /// How long ``stop()`` keeps serving first: ``followerGraceSeconds`` once the end is published, a
    /// client follows and nothing lingered; else 0, so a run nobody follows exits at once.
    var graceSeconds: Double {
        let (done, followed) = shared.state.withLock { ($0.done, $0.followed) }
        return done && followed && !lingered ? Self.followerGraceSeconds : 0
    }

    /// Stops serving (after ``graceSeconds``; what is queued goes out first, within a second).
    func stop() {
        let grace = graceSeconds
        if grace > 0 {
            lingered = true
            usleep(UInt32(grace * 1_000_000))
        }
        endpoint.stop()
    }

    /// The `second` event's line: the ``LiveSecond`` with the second's corrected-latency percentiles (µs)
    /// and the percentile curve of every second so far (`curve_us`: [percentile, µs] pairs), so a page
    /// shows exact figures without decoding a histogram. `pushbench dashboard` sends its merged seconds
    /// the same way.
    static func pageLine(_ live: LiveSecond, second h: HdrHistogram, whole: HdrHistogram) -> String {
        var line = live.jsonLine()
        guard line.hasSuffix("}") else { return line }
        line.removeLast()
        if h.totalCount > 0 {
            line += ",\"p50_us\":\(h.valueAtPercentile(50)),\"p90_us\":\(h.valueAtPercentile(90)),\"p99_us\":\(h.valueAtPercentile(99))"
            line += ",\"p999_us\":\(h.valueAtPercentile(99.9)),\"max_us\":\(h.max)"
        }
        if whole.totalCount > 0 {
            let points = curvePercentiles.map { "[\($0),\($0 == 100 ? whole.max : whole.valueAtPercentile($0))]" }
            line += ",\"curve_us\":[" + points.joined(separator: ",") + "]"
        }
        return line + "}"
    }

    /// The sending threads' busy share between two snapshots (0 to 1, averaged over threads), from their
    /// loops' idle time; nil when it was not measured or no time passed.
    static func busy(from a: LiveSnapshot, to b: LiveSnapshot) -> Double? {
        let wall = b.idleSampledAt - a.idleSampledAt, idle = b.idleNanoseconds - a.idleNanoseconds
        guard a.idleSampledAt > 0, wall > 0, idle >= 0 else { return nil }
        return (max(0, min(1, 1 - Double(idle) / Double(wall))) * 1000).rounded() / 1000
    }

    /// The stage of a schedule measured second `second` is in, named by its number and rate
    /// (`stage 2: 50,000 rps`, `stage 1: 1,000 → 50,000 rps`); nil without stages or past the last.
    static func stage(of second: Int, in stages: [RateSchedule.Stage]) -> String? {
        var start: UInt64 = 0
        let at = UInt64(max(second, 0)) * 1_000_000_000
        for (k, s) in stages.enumerated() {
            let end = start + s.durationNs
            if at >= start && at < end {
                let rate = s.from == s.to ? CapacitySearch.grouped(s.to)
                    : "\(CapacitySearch.grouped(s.from)) → \(CapacitySearch.grouped(s.to))"
                return "stage \(k + 1): \(rate) rps"
            }
            start = end
        }
        return nil
    }

    /// The percentiles of the curve so far.
    static let curvePercentiles: [Double] = [0, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100]
}
