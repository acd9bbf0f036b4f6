import PushVocabulary

/// One measured second of a live run, as a dashboard endpoint serves it to viewers and to
/// `pushbench dashboard`: the second's counts and encoded histograms (the same a run writes to
/// timeline.csv and latency.hlog), when the measured phase began, and the live figures of that moment.
///
/// On the wire a second is one line of compact JSON (``jsonLine()``), so a stream of seconds is
/// newline-delimited JSON:
///
///     {"second":3,"start_unix":1796400000.25,"sent":50000,"completed":50000,"succeeded":49990,
///      "failed":10,"transport_errors":0,"steal_ms":0,"target":50000,
///      "latency":"HISTFAAAA…","service_time":"HISTFAAAA…","errors":{"BadDeviceToken":10},
///      "in_flight":12,"connections":8,"peer_stream_limit":1000,"busy":0.41,"stage":"stage 2: 50,000 rps"}
///
/// `latency` and `service_time` are base64 compressed HdrHistogram V2 (µs), as in latency.hlog, so a
/// reader merges the seconds of several agents bucket by bucket (``TimelineInterval/merged(_:)``) and
/// reads exact percentiles of the whole. Members after `service_time` are optional: absent when the
/// source does not know them. A second merged from several agents adds `"agents":3` and
/// `"missing_agents":["10.0.0.7:8088"]` (``LiveMerge``).
public struct LiveSecond: Sendable, Equatable {
    /// The second's counts and histograms; `interval.second` counts from the start of the measured
    /// phase, as timeline.csv does.
    public var interval: TimelineInterval
    /// When the measured phase began, Unix seconds: second N covers `[startUnix + N, startUnix + N + 1)`,
    /// which is how seconds of agents sharing a `--start-at` line up.
    public var startUnix: Double
    /// Error answers of the second by reason (APNs reason, FCM status, or HTTP status when there is no
    /// reason); nil when unknown.
    public var errors: [String: Int64]?
    /// Requests in flight at the end of the second.
    public var inFlight: Int64?
    /// Connections open at the end of the second.
    public var connections: Int64?
    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS, when it sent one.
    public var peerStreamLimit: Int64?
    /// Share of the second the sending threads were busy (0 to 1, averaged over threads).
    public var busy: Double?
    /// What the schedule was doing: a stage of `--schedule`, or a capacity step, e.g. `stage 2: 50,000 rps` or `step 3: 50,000 rps`.
    public var stage: String?
    /// In a second merged from several agents (``LiveMerge``): how many agents' seconds it holds; nil in
    /// one agent's own second.
    public var agents: Int64?
    /// In a merged second: the agents expected for it whose second did not come in time (as
    /// `pushbench dashboard` names them, host:port), so a gap is shown, never hidden; nil in one agent's own.
    public var missingAgents: [String]?

    /// A second with only its interval and start known.
    public init(interval: TimelineInterval, startUnix: Double, errors: [String: Int64]? = nil, inFlight: Int64? = nil,
                connections: Int64? = nil, peerStreamLimit: Int64? = nil, busy: Double? = nil, stage: String? = nil) {
        self.interval = interval
        self.startUnix = startUnix
        self.errors = errors
        self.inFlight = inFlight
        self.connections = connections
        self.peerStreamLimit = peerStreamLimit
        self.busy = busy
        self.stage = stage
    }

    /// A merged second: `agents` seconds went into it, and `missingAgents` were expected but did not come.
    public init(interval: TimelineInterval, startUnix: Double, errors: [String: Int64]?, inFlight: Int64?,
                connections: Int64?, peerStreamLimit: Int64?, busy: Double?, stage: String?, agents: Int64,
                missingAgents: [String]) {
        self.init(interval: interval, startUnix: startUnix, errors: errors, inFlight: inFlight, connections: connections,
                  peerStreamLimit: peerStreamLimit, busy: busy, stage: stage)
        self.agents = agents
        self.missingAgents = missingAgents
    }

    /// The second as one line of compact JSON, without the trailing newline.
    public func jsonLine() -> String {
        JSONWriter.text { w in
            w.object { o in
                let i = interval
                o.member("second", i.second)
                o.member("start_unix", startUnix)
                o.member("sent", i.sent)
                o.member("completed", i.completed)
                o.member("succeeded", i.succeeded)
                o.member("failed", i.failed)
                o.member("transport_errors", i.transportErrors)
                if let s = i.stealMs { o.member("steal_ms", s) }
                if let t = i.target { o.member("target", t) }
                o.member("latency", i.latency.base64)
                o.member("service_time", i.serviceTime.base64)
                if let errors { o.member("errors", sortedByKey: errors) }
                if let inFlight { o.member("in_flight", inFlight) }
                if let connections { o.member("connections", connections) }
                if let peerStreamLimit { o.member("peer_stream_limit", peerStreamLimit) }
                if let busy { o.member("busy", busy) }
                if let stage { o.member("stage", stage) }
                if let agents { o.member("agents", agents) }
                if let missingAgents {
                    o.key("missing_agents")
                    o.array { a in for name in missingAgents { a.value(name) } }
                }
            }
        }
    }

    /// Why a line is not a second.
    public struct ParseError: Error, CustomStringConvertible, Equatable {
        /// What was wrong, naming the member.
        public let description: String
    }

    /// Reads a line ``jsonLine()`` wrote (members in any order; unknown members are ignored).
    public static func parse(line: String) throws(ParseError) -> LiveSecond {
        let v: JSONValue
        do { v = try JSONValue.parse(line) } catch { throw ParseError(description: "not JSON: \(error)") }
        guard v.object != nil else { throw ParseError(description: "not a JSON object") }
        func integer(_ key: String) throws(ParseError) -> Int64 {
            guard let n = v[key]?.integer else { throw ParseError(description: "'\(key)' is missing or not an integer") }
            return n
        }
        func optionalInteger(_ key: String) throws(ParseError) -> Int64? {
            guard let m = v[key], m != .null else { return nil }
            guard let n = m.integer else { throw ParseError(description: "'\(key)' is not an integer") }
            return n
        }
        func histogram(_ key: String) throws(ParseError) -> EncodedHistogram {
            guard let text = v[key]?.string else { throw ParseError(description: "'\(key)' is missing or not a string") }
            do { return try EncodedHistogram(base64: text) } catch {
                throw ParseError(description: "'\(key)' is not an encoded histogram: \(error)")
            }
        }
        guard let start = v["start_unix"]?.number else { throw ParseError(description: "'start_unix' is missing or not a number") }
        let interval = TimelineInterval(
            second: Int(try integer("second")), sent: try integer("sent"), completed: try integer("completed"),
            succeeded: try integer("succeeded"), failed: try integer("failed"),
            transportErrors: try integer("transport_errors"), latency: try histogram("latency"),
            serviceTime: try histogram("service_time"), stealMs: try optionalInteger("steal_ms"),
            target: try optionalInteger("target"))
        var errors: [String: Int64]?
        if let e = v["errors"], e != .null {
            guard let members = e.object else { throw ParseError(description: "'errors' is not an object") }
            var counts: [String: Int64] = [:]
            for (reason, count) in members {
                guard let n = count.integer else { throw ParseError(description: "'errors.\(reason)' is not an integer") }
                counts[reason] = n
            }
            errors = counts
        }
        var busy: Double?
        if let b = v["busy"], b != .null {
            guard let n = b.number else { throw ParseError(description: "'busy' is not a number") }
            busy = n
        }
        var stage: String?
        if let s = v["stage"], s != .null {
            guard let text = s.string else { throw ParseError(description: "'stage' is not a string") }
            stage = text
        }
        var missing: [String]?
        if let m = v["missing_agents"], m != .null {
            guard let names = m.array?.compactMap(\.string), names.count == m.array?.count else {
                throw ParseError(description: "'missing_agents' is not a list of names")
            }
            missing = names
        }
        var second = LiveSecond(interval: interval, startUnix: start, errors: errors, inFlight: try optionalInteger("in_flight"),
                                connections: try optionalInteger("connections"),
                                peerStreamLimit: try optionalInteger("peer_stream_limit"), busy: busy, stage: stage)
        second.agents = try optionalInteger("agents")
        second.missingAgents = missing
        return second
    }
}
