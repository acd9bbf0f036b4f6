import PushVocabulary

/// The sections of summary.json a pushbench run writes after the core figures, typed. A section left
/// nil is not written; ``ResultsWriter/summaryJSON(_:runID:)`` renders them in this order, after
/// which come ``RunRecord/extra`` (what a reader kept of a file it had no type for) and the histograms.
///
/// ```swift
/// record.details.accounting = RunAccounting(consistent: true, retries: 0, notSent: 0, oversizeNotSent: 0)
/// record.details.reconciliation = Reconciliation(clientAttempts: 1000, clientAnswered: 1000, gatewayReceived: 1000)
/// ```
public struct RunDetails: Sendable, Equatable {
    /// `warmup`: the requests of the warm-up, counted apart from the figures.
    public var warmup: RequestCounts?
    /// `accounting`.
    public var accounting: RunAccounting?
    /// `backlog`.
    public var backlog: Backlog?
    /// `in_flight_max`: the most requests in flight at once.
    public var inFlightMax: Int?
    /// `connections`.
    public var connections: ConnectionCounts?
    /// `tls`: what the TLS handshakes settled and how long they took (absent over h2c).
    public var tls: TLSDetails?
    /// `cpu_process`: the whole process's CPU time (left out where the process ran more than this run).
    public var processCPU: CPUTime?
    /// `machine`.
    public var machine: MachineNoise?
    /// `pruned_tokens` and `tokens_exhausted`, with token churn.
    public var tokenPruning: TokenPruning?
    /// `gateway`: the embedded gateway's own counts.
    public var gateway: GatewayCounts?
    /// `reconciliation`: the gateway's counts against the client's.
    public var reconciliation: Reconciliation?
    /// `ab`: this run's part in an encoder A/B.
    public var encoderComparison: EncoderComparisonShare?
    /// `start`: t0 on the wall clock and how the first request met it.
    public var start: RunStart?
    /// `segment`: this agent's stripe of a schedule shared by several (`--segment I/N`).
    public var segment: RunSegment?
    /// `host`: the machine's name (which agent ran where).
    public var host: String?
    /// `provider_token`: the APNs provider tokens the run signed (`--auth-key`).
    public var providerToken: ProviderTokenUse?

    /// No sections.
    public init() {}

    /// The sections' summary.json members, in order.
    var members: [(String, JSONValue)] {
        var m: [(String, JSONValue)] = []
        if let warmup { m.append(("warmup", warmup.json)) }
        if let accounting { m.append(("accounting", accounting.json)) }
        if let backlog { m.append(("backlog", backlog.json)) }
        if let inFlightMax { m.append(("in_flight_max", .int(Int64(inFlightMax)))) }
        if let connections { m.append(("connections", connections.json)) }
        if let tls { m.append(("tls", tls.json)) }
        if let processCPU { m.append(("cpu_process", processCPU.json)) }
        if let machine { m.append(("machine", machine.json)) }
        if let tokenPruning {
            m.append(("pruned_tokens", .int(Int64(tokenPruning.pruned))))
            m.append(("tokens_exhausted", .bool(tokenPruning.exhausted)))
        }
        if let gateway { m.append(("gateway", gateway.json)) }
        if let reconciliation { m.append(("reconciliation", reconciliation.json)) }
        if let encoderComparison { m.append(("ab", encoderComparison.json)) }
        if let start { m.append(("start", start.json)) }
        if let segment { m.append(("segment", segment.json)) }
        if let host { m.append(("host", .string(host))) }
        if let providerToken { m.append(("provider_token", providerToken.json)) }
        return m
    }

    /// Equal when they render the same.
    public static func == (a: RunDetails, b: RunDetails) -> Bool { JSONValue.object(a.members) == .object(b.members) }
}

/// summary.json `accounting`: whether every request is counted once, and the requests outside the counts.
public struct RunAccounting: Sendable, Equatable {
    /// sent = completed + transport errors + unfinished held, measured and warm-up.
    var consistent: Bool
    /// Requests sent again after a lost connection.
    public var retries: Int
    /// Requests due but never handed to the transport.
    public var notSent: Int
    /// Requests over the payload limit, counted PayloadTooLarge and not sent.
    public var oversizeNotSent: Int
    /// Measured requests the corrected latency does not include: never sent (due, or oversize), cut off
    /// by the transport, or unanswered when the run ended (`not_in_latency`; nil: not written).
    public var notInLatency: Int?
    /// The measured phase's transport errors by cause (`reset_internal_error`, `refused_stream`,
    /// `goaway`, `connection_lost`, `protocol_error`, …): they add up to `requests.transport_errors`.
    public var transportErrorsByCause: [String: Int] = [:]
    /// Responses whose body was longer than the client keeps (its first bytes are enough for a reason);
    /// the rest was counted and dropped.
    public var truncatedResponseBodies = 0

    /// The accounting.
    public init(consistent: Bool, retries: Int, notSent: Int, oversizeNotSent: Int, notInLatency: Int? = nil) {
        self.consistent = consistent
        self.retries = retries
        self.notSent = notSent
        self.oversizeNotSent = oversizeNotSent
        self.notInLatency = notInLatency
    }

    var json: JSONValue {
        .object([("consistent", .bool(consistent)), ("retries", .int(Int64(retries))), ("not_sent", .int(Int64(notSent))),
                 ("oversize_not_sent", .int(Int64(oversizeNotSent))),
                 ("transport_errors_by_cause", .object(transportErrorsByCause.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
                 ("truncated_response_bodies", .int(Int64(truncatedResponseBodies)))]
                + (notInLatency.map { [("not_in_latency", JSONValue.int(Int64($0)))] } ?? []))
    }
}

/// summary.json `backlog`: requests due but waiting for a free stream.
public struct Backlog: Sendable, Equatable {
    /// The longest the backlog grew.
    public var max: Int
    /// Requests that waited.
    public var blocked: Int
    /// A backlog.
    public init(max: Int, blocked: Int) { self.max = max; self.blocked = blocked }
    var json: JSONValue { .object([("max", .int(Int64(max))), ("blocked", .int(Int64(blocked)))]) }
}

/// summary.json `connections`: the client's connection events.
public struct ConnectionCounts: Sendable, Equatable {
    /// Connections opened.
    public var opened: Int
    /// GOAWAYs received.
    public var goaways: Int
    /// Connections lost.
    public var lost: Int
    /// Connection attempts that failed.
    public var connectFailures: Int
    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS, when it sent one.
    public var peerMaxConcurrentStreams: Int?

    /// The counts.
    public init(opened: Int, goaways: Int, lost: Int, connectFailures: Int, peerMaxConcurrentStreams: Int?) {
        self.opened = opened
        self.goaways = goaways
        self.lost = lost
        self.connectFailures = connectFailures
        self.peerMaxConcurrentStreams = peerMaxConcurrentStreams
    }

    var json: JSONValue {
        .object([
            ("opened", .int(Int64(opened))), ("goaways", .int(Int64(goaways))), ("lost", .int(Int64(lost))),
            ("connect_failures", .int(Int64(connectFailures))),
            ("peer_max_concurrent_streams", peerMaxConcurrentStreams.map { .int(Int64($0)) } ?? .null),
        ])
    }
}

/// summary.json `tls`: the client's TLS handshakes: what the first settled (every connection of a run
/// uses the same settings against the same server) and the time each took, as a percentile block
/// (`handshake_us`) and the whole histogram (`handshake_histogram`, base64 like `histograms`).
public struct TLSDetails: Sendable, Equatable {
    /// `version`, e.g. `TLSv1.3`.
    public var version: String
    /// `cipher`, e.g. `TLS_AES_128_GCM_SHA256`.
    public var cipher: String
    /// `alpn`: the protocol ALPN selected, null when none was.
    public var alpn: String?
    /// `server_name`: the SNI sent, null for an IP address.
    public var serverName: String?
    /// `verified`: whether the server's certificate was checked and trusted (false with `--insecure`).
    public var verified: Bool
    /// `handshakes`: handshakes completed, reconnects included.
    public var handshakes: Int
    /// Handshake durations in µs (the histogram is built from them when rendered).
    var handshakeMicros: [Int64]

    /// The handshakes.
    public init(version: String, cipher: String, alpn: String?, serverName: String?, verified: Bool, handshakes: Int,
                handshakeMicros: [Int64]) {
        self.version = version
        self.cipher = cipher
        self.alpn = alpn
        self.serverName = serverName
        self.verified = verified
        self.handshakes = handshakes
        self.handshakeMicros = handshakeMicros
    }

    /// The durations as a µs histogram.
    public var histogram: HdrHistogram {
        let h = HdrHistogram.latencyMicroseconds()
        for v in handshakeMicros { h.record(max(1, v)) }
        return h
    }

    var json: JSONValue {
        let h = histogram
        return .object([
            ("version", .string(version)), ("cipher", .string(cipher)), ("alpn", alpn.map { .string($0) } ?? .null),
            ("server_name", serverName.map { .string($0) } ?? .null), ("verified", .bool(verified)),
            ("handshakes", .int(Int64(handshakes))), ("handshake_us", ResultsWriter.latencyJSON(h)),
            ("handshake_histogram", .string(HistogramCodec.encodeBase64(h))),
        ])
    }
}

/// CPU time in seconds, user and system.
public struct CPUTime: Sendable, Equatable {
    /// User seconds.
    var user: Double
    /// System seconds.
    public var system: Double
    /// A CPU time.
    public init(user: Double, system: Double) { self.user = user; self.system = system }
    var json: JSONValue { .object([("user_s", .double(user)), ("sys_s", .double(system))]) }
}

/// summary.json `machine`: what the host took that the percentiles cannot show; read p99 beside it.
public struct MachineNoise: Sendable, Equatable {
    /// Online CPUs.
    var cpus: Int
    /// The 1-minute load average when the run started (written to 2 decimals).
    public var loadAverageAtStart: Double?
    /// CPU time the hypervisor stole during the run, in seconds (written as ms to 3 decimals).
    public var stealSeconds: Double?
    /// Involuntary context switches of the driver threads.
    var driverInvoluntarySwitches: Int
    /// Seconds the driver threads were runnable but waited for a CPU that other threads held (their own
    /// process's or any other's), summed; nil where the kernel does not keep it.
    public var driverCPUWaitSeconds: Double?
    /// The same for the embedded gateway's loop threads; nil with `--target` (another process's threads).
    public var gatewayCPUWaitSeconds: Double?
    /// Whether the driver and embedded gateway threads ran real-time (`--realtime`).
    public var realtime: Bool

    /// The figures.
    public init(cpus: Int, loadAverageAtStart: Double?, stealSeconds: Double?, driverInvoluntarySwitches: Int,
                driverCPUWaitSeconds: Double? = nil, gatewayCPUWaitSeconds: Double? = nil, realtime: Bool = false) {
        self.cpus = cpus
        self.loadAverageAtStart = loadAverageAtStart
        self.stealSeconds = stealSeconds
        self.driverInvoluntarySwitches = driverInvoluntarySwitches
        self.driverCPUWaitSeconds = driverCPUWaitSeconds
        self.gatewayCPUWaitSeconds = gatewayCPUWaitSeconds
        self.realtime = realtime
    }

    var json: JSONValue {
        .object([
            ("cpus", .int(Int64(cpus))),
            ("load_average_1m_at_start", loadAverageAtStart.map { .double(($0 * 100).rounded() / 100) } ?? .null),
            ("steal_ms", stealSeconds.map { .double(($0 * 1e6).rounded() / 1e3) } ?? .null),
            ("driver_involuntary_switches", .int(Int64(driverInvoluntarySwitches))),
            ("driver_cpu_wait_ms", driverCPUWaitSeconds.map { .double(($0 * 1e6).rounded() / 1e3) } ?? .null),
            ("gateway_cpu_wait_ms", gatewayCPUWaitSeconds.map { .double(($0 * 1e6).rounded() / 1e3) } ?? .null),
            ("realtime", .bool(realtime)),
        ])
    }
}

/// Tokens the client stopped using because the gateway answered them gone.
public struct TokenPruning: Sendable, Equatable {
    /// Distinct tokens pruned.
    public var pruned: Int
    /// Whether every token was pruned, which stopped the run.
    var exhausted: Bool
    /// The pruning.
    public init(pruned: Int, exhausted: Bool) { self.pruned = pruned; self.exhausted = exhausted }
}

/// summary.json `provider_token`: how the run authenticated with APNs provider tokens. Ids and the key's
/// file name only: never the key or a token.
public struct ProviderTokenUse: Sendable, Equatable {
    /// `kid`.
    public var keyID: String
    /// `iss`.
    public var teamID: String
    /// The `.p8` file the key was read from.
    public var keyFile: String
    /// Seconds between two tokens of one driver.
    public var refreshSeconds: Double
    /// Tokens signed after the first (every driver re-signs on the schedule).
    public var refreshes: Int

    /// The section.
    public init(keyID: String, teamID: String, keyFile: String, refreshSeconds: Double, refreshes: Int) {
        self.keyID = keyID
        self.teamID = teamID
        self.keyFile = keyFile
        self.refreshSeconds = refreshSeconds
        self.refreshes = refreshes
    }

    var json: JSONValue {
        .object([("key_id", .string(keyID)), ("team_id", .string(teamID)), ("key_file", .string(keyFile)),
                 ("refresh_s", .double(refreshSeconds)), ("refreshes", .int(Int64(refreshes)))])
    }
}

/// summary.json `ab`: one variant's share of an encoder A/B (the other variants ran in the same process,
/// in interleaved rounds).
public struct EncoderComparisonShare: Sendable, Equatable {
    /// Every variant, in the order given; the first is the reference.
    public var variants: [String]
    /// Rounds this variant ran.
    public var rounds: Int
    /// Length of a round in seconds.
    var roundSeconds: Double
    /// Requests this variant sent.
    public var pushes: Int
    /// Driver threads' CPU seconds in this variant's rounds (written to 3 decimals).
    public var driverCPUSeconds: Double
    /// Driver CPU seconds per million pushes.
    public var cpuSecondsPerMillion: Double?
    /// The process's CPU seconds in this variant's rounds.
    public var processCPUSeconds: Double
    /// The test-only spin per payload of a deliberately slowed variant, in µs.
    var testSlowdownMicroseconds: Double?

    /// The share.
    public init(variants: [String], rounds: Int, roundSeconds: Double, pushes: Int, driverCPUSeconds: Double,
                cpuSecondsPerMillion: Double?, processCPUSeconds: Double, testSlowdownMicroseconds: Double? = nil) {
        self.variants = variants
        self.rounds = rounds
        self.roundSeconds = roundSeconds
        self.pushes = pushes
        self.driverCPUSeconds = driverCPUSeconds
        self.cpuSecondsPerMillion = cpuSecondsPerMillion
        self.processCPUSeconds = processCPUSeconds
        self.testSlowdownMicroseconds = testSlowdownMicroseconds
    }

    var json: JSONValue {
        var m: [(String, JSONValue)] = [
            ("variants", .array(variants.map { .string($0) })), ("reference", .string(variants.first ?? "")),
            ("rounds", .int(Int64(rounds))), ("round_s", .double(roundSeconds)), ("pushes", .int(Int64(pushes))),
            ("driver_cpu_s", .double(ResultsWriter.round3(driverCPUSeconds))),
            ("cpu_s_per_million", cpuSecondsPerMillion.map { .double(ResultsWriter.round3($0)) } ?? .null),
            ("process_cpu_s", .double(ResultsWriter.round3(processCPUSeconds))),
        ]
        if let testSlowdownMicroseconds { m.append(("test_slowdown_us", .double(testSlowdownMicroseconds))) }
        return .object(m)
    }
}

/// The run settings `pushbench run` adds to summary.json `config` after the contract's keys.
public struct RunSettings: Sendable, Equatable {
    /// `requests`: the measured request count asked for, if any.
    public var requests: Int?
    /// `warmup_s`.
    public var warmupSeconds: Double
    /// `tokens`: how many device tokens.
    public var tokens: Int
    /// `payload`: the template file, or "default".
    public var payload: String
    /// `retry`.
    var retry: Int
    /// `send_oversize`.
    public var sendOversize: Bool
    /// `apns_id`: whether requests carried an apns-id.
    public var apnsID: Bool
    /// `schedule`: the rate schedule, when the rate changes over time.
    public var schedule: ScheduleSettings?
    /// `http`: the HTTP version requests went over, `"2"` or `"1.1"` (`--http1`).
    public var http = "2"
    /// `credentials`: whether requests carried an OAuth2 access token from a service account (`--credentials`).
    public var credentials = false

    /// The settings.
    public init(requests: Int?, warmupSeconds: Double, tokens: Int, payload: String, retry: Int, sendOversize: Bool,
                apnsID: Bool) {
        self.requests = requests
        self.warmupSeconds = warmupSeconds
        self.tokens = tokens
        self.payload = payload
        self.retry = retry
        self.sendOversize = sendOversize
        self.apnsID = apnsID
    }

    var members: [(String, JSONValue)] {
        (requests.map { [("requests", JSONValue.int(Int64($0)))] } ?? []) + [
            ("warmup_s", .double(warmupSeconds)), ("tokens", .int(Int64(tokens))), ("payload", .string(payload)),
            ("retry", .int(Int64(retry))), ("send_oversize", .bool(sendOversize)), ("apns_id", .bool(apnsID)),
            ("http", .string(http)), ("credentials", .bool(credentials)),
        ] + (schedule.map { [("schedule", $0.json)] } ?? [])
    }
}
