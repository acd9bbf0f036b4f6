import Foundation
import PushVocabulary

/// Everything a finished run measured: what the load generator hands to ``ResultsWriter``.
///
/// Fill it in at the end of a run (per-thread histograms already merged with
/// ``HdrHistogram/add(_:)``), then call `try ResultsWriter.write(record, root: outDir)`.
///
/// ```swift
/// var record = RunRecord(label: "nightly", startedAt: Date(), config: config)
/// record.counts = counts
/// record.measuredSeconds = 10.02
/// record.latency = mergedCorrected          // µs, HdrHistogram.latencyMicroseconds()
/// record.serviceTime = mergedService
/// record.intervals = perThreadSeconds       // entries with the same `second` are merged
/// record.details.backlog = Backlog(max: 42, blocked: 0)  // typed sections, RunDetails.swift
/// let folder = try ResultsWriter.write(record, root: URL(fileURLWithPath: "results"))
/// ```
public struct RunRecord {
    /// Part of the run id (`YYYYMMDD-HHMMSS-<label>`); characters outside `[A-Za-z0-9._-]` become `-`.
    public var label: String
    /// Wall-clock start of the measured phase.
    public var startedAt: Date
    /// Tool version written into summary.json.
    public var version: String
    /// The run's configuration (summary.json "config").
    public var config: RunConfig
    /// Request accounting (summary.json "requests").
    public var counts: RequestCounts
    /// Length of the measured phase in seconds (denominator of achieved_rps).
    public var measuredSeconds: Double
    /// Corrected latency in µs (from each request's intended send time), all threads merged.
    public var latency: HdrHistogram
    /// Service time in µs (from the actual send), all threads merged.
    public var serviceTime: HdrHistogram
    /// Per-second entries; several entries with the same `second` (one per thread) are merged.
    public var intervals: [TimelineInterval]
    /// CPU time of the process, user and system, in seconds.
    public var cpuUserSeconds: Double
    /// System CPU seconds.
    public var cpuSystemSeconds: Double
    /// Peak resident set size in bytes.
    public var maxRSSBytes: Int64
    /// True when the run was stopped early (SIGINT, error); what was measured is still written.
    public var interrupted: Bool
    /// Whether an open-loop run kept its rate (nil: closed loop, or not judged).
    public var rate: RateOutcome?
    /// The typed sections after the core figures (warm-up, accounting, connections, machine, gateway…).
    public var details: RunDetails
    /// The rate this run's own requests were scheduled at, when that is not `config.rps`: one agent of
    /// several (`--segment`) sends its share of the whole run's rate (summary.json `throughput.target_rps`).
    public var targetRPS: Double?
    /// More top-level summary.json sections, in order, after ``details``: what ``LoadedRun`` read from a
    /// file (it keeps sections as they were written) or a section only a merge writes.
    public var extra: [(String, JSONValue)]

    /// A record with empty histograms and zero counts.
    public init(label: String, startedAt: Date, config: RunConfig, version: String = PushbenchVersion.current) {
        self.label = label
        self.startedAt = startedAt
        self.version = version
        self.config = config
        counts = RequestCounts()
        measuredSeconds = 0
        latency = .latencyMicroseconds()
        serviceTime = .latencyMicroseconds()
        intervals = []
        cpuUserSeconds = 0
        cpuSystemSeconds = 0
        maxRSSBytes = 0
        interrupted = false
        rate = nil
        details = RunDetails()
        extra = []
    }

    /// Completed requests per measured second.
    public var achievedRPS: Double {
        measuredSeconds > 0 ? Double(counts.completed) / measuredSeconds : 0
    }
}

/// The run configuration as summary.json "config" reports it.
public struct RunConfig: Sendable, Equatable {
    /// Target URL, or "embedded" for the built-in mock gateway.
    public var target: String
    /// "apns" or "fcm".
    var protocolName: String
    /// Open-loop rate; nil for `--rps max` (closed loop).
    public var rps: Int?
    /// Configured measured duration in seconds (nil with `--requests N`).
    public var durationSeconds: Double?
    /// Connections.
    public var connections: Int
    /// Max concurrent streams per connection.
    public var streams: Int
    /// Driver threads.
    public var threads: Int
    /// "zerocopy", "copy" or "foundation".
    public var encoder: String
    /// What `pushbench run` was asked for beyond the contract's keys, written after them.
    public var settings: RunSettings?
    /// More config keys, after ``settings`` (what a reader kept, or a merge's "agents").
    public var extra: [(String, JSONValue)]

    /// Creates a configuration.
    public init(target: String = "embedded", protocolName: String = "apns", rps: Int? = nil,
                durationSeconds: Double? = nil, connections: Int = 8, streams: Int = 100,
                threads: Int = 1, encoder: String = "zerocopy", settings: RunSettings? = nil,
                extra: [(String, JSONValue)] = []) {
        self.target = target
        self.protocolName = protocolName
        self.rps = rps
        self.durationSeconds = durationSeconds
        self.connections = connections
        self.streams = streams
        self.threads = threads
        self.encoder = encoder
        self.settings = settings
        self.extra = extra
    }

    /// The rate schedule as the options gave it (`--stages …`), when the rate changed over time: from
    /// the settings of a run just made, or the "schedule" key of one read back.
    public var scheduleSpec: String? {
        settings?.schedule?.spec ?? extra.first(where: { $0.0 == "schedule" })?.1["spec"]?.string
    }

    /// Equal when they render to the same "config" JSON.
    public static func == (a: RunConfig, b: RunConfig) -> Bool {
        a.json == b.json
    }

    /// summary.json "config".
    public var json: JSONValue {
        var m: [(String, JSONValue)] = [
            ("target", .string(target)),
            ("protocol", .string(protocolName)),
            ("rps", rps.map { .int(Int64($0)) } ?? .string("max")),
            ("duration_s", durationSeconds.map { .double($0) } ?? .null),
            ("connections", .int(Int64(connections))),
            ("streams", .int(Int64(streams))),
            ("threads", .int(Int64(threads))),
            ("encoder", .string(encoder)),
        ]
        m += settings?.members ?? []
        m += extra
        return .object(m)
    }

    /// Reads summary.json "config" back.
    public init(json: JSONValue) {
        target = json["target"]?.string ?? ""
        protocolName = json["protocol"]?.string ?? ""
        rps = json["rps"]?.integer.map { Int($0) }
        durationSeconds = json["duration_s"]?.number
        connections = Int(json["connections"]?.integer ?? 0)
        streams = Int(json["streams"]?.integer ?? 0)
        threads = Int(json["threads"]?.integer ?? 0)
        encoder = json["encoder"]?.string ?? ""
        let known: Set<String> = ["target", "protocol", "rps", "duration_s", "connections", "streams", "threads", "encoder"]
        extra = json.members.filter { !known.contains($0.0) }
    }
}

/// Request accounting. Invariant: sent = completed + transportErrors + unfinished,
/// completed = succeeded + failed.
public struct RequestCounts: Sendable, Equatable {
    /// Requests whose HEADERS were handed to the transport.
    public var sent: Int64 = 0
    /// Requests that got a response (any status).
    public var completed: Int64 = 0
    /// Responses with a 2xx status.
    public var succeeded: Int64 = 0
    /// Responses with any other status.
    public var failed: Int64 = 0
    /// Requests lost to the transport (reset stream, GOAWAY, connection drop, timeout).
    public var transportErrors: Int64 = 0
    /// Requests still in flight when the run ended.
    public var unfinished: Int64 = 0
    /// Responses by HTTP status ("200", "410", …).
    public var byStatus: [String: Int64] = [:]
    /// Error responses by reason ("BadDeviceToken", …).
    public var byReason: [String: Int64] = [:]

    /// Zero counts.
    public init() {}

    /// True when the accounting invariant holds.
    var isConsistent: Bool {
        sent == completed + transportErrors + unfinished && completed == succeeded + failed
    }

    /// Adds another set of counts (merging agents or threads).
    public mutating func add(_ o: RequestCounts) {
        sent += o.sent
        completed += o.completed
        succeeded += o.succeeded
        failed += o.failed
        transportErrors += o.transportErrors
        unfinished += o.unfinished
        byStatus.merge(o.byStatus, uniquingKeysWith: +)
        byReason.merge(o.byReason, uniquingKeysWith: +)
    }

    /// summary.json "requests" (maps sorted by key so files diff cleanly).
    public var json: JSONValue {
        .object([
            ("sent", .int(sent)), ("completed", .int(completed)), ("succeeded", .int(succeeded)),
            ("failed", .int(failed)), ("transport_errors", .int(transportErrors)), ("unfinished", .int(unfinished)),
            ("by_status", .object(byStatus.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
            ("by_reason", .object(byReason.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
        ])
    }

    /// Reads summary.json "requests" back.
    public init(json: JSONValue) {
        sent = json["sent"]?.integer ?? 0
        completed = json["completed"]?.integer ?? 0
        succeeded = json["succeeded"]?.integer ?? 0
        failed = json["failed"]?.integer ?? 0
        transportErrors = json["transport_errors"]?.integer ?? 0
        unfinished = json["unfinished"]?.integer ?? 0
        for (k, v) in json["by_status"]?.members ?? [] { byStatus[k] = v.integer ?? 0 }
        for (k, v) in json["by_reason"]?.members ?? [] { byReason[k] = v.integer ?? 0 }
    }
}

/// One second of a run, from one thread (or already merged).
public struct TimelineInterval: Sendable, Equatable {
    /// Seconds since the start of the measured phase (0-based).
    public var second: Int
    /// Requests sent in this second.
    public var sent: Int64
    /// Responses received in this second.
    public var completed: Int64
    /// 2xx responses received in this second.
    public var succeeded: Int64
    /// Non-2xx responses received in this second.
    public var failed: Int64
    /// Transport errors in this second.
    public var transportErrors: Int64
    /// Corrected latency (µs) of the responses received in this second.
    public var latency: EncodedHistogram
    /// Service time (µs) of the responses received in this second.
    public var serviceTime: EncodedHistogram
    /// CPU time the hypervisor stole from the machine's CPUs during this second, in ms (/proc/stat), or
    /// nil when unknown. When intervals merge (threads of one run, or runs of several machines) it is the
    /// most any of them lost that second, not a sum.
    public var stealMs: Int64?
    /// Requests the schedule intended to send in this second (the target beside `sent`), or nil when there
    /// is no schedule (`--rps max`) or it is unknown (files from before it was written). Summed when
    /// intervals merge: each agent's is its own share.
    public var target: Int64?

    /// Creates an interval, compressing the histograms now so the caller can `reset()` and reuse them.
    public init(second: Int, sent: Int64, completed: Int64, succeeded: Int64, failed: Int64,
                transportErrors: Int64, latency: HdrHistogram, serviceTime: HdrHistogram, stealMs: Int64? = nil,
                target: Int64? = nil) {
        self.init(second: second, sent: sent, completed: completed, succeeded: succeeded, failed: failed,
                  transportErrors: transportErrors, latency: EncodedHistogram(latency),
                  serviceTime: EncodedHistogram(serviceTime), stealMs: stealMs, target: target)
    }

    /// Creates an interval from already encoded histograms.
    public init(second: Int, sent: Int64, completed: Int64, succeeded: Int64, failed: Int64,
                transportErrors: Int64, latency: EncodedHistogram, serviceTime: EncodedHistogram,
                stealMs: Int64? = nil, target: Int64? = nil) {
        self.second = second
        self.sent = sent
        self.completed = completed
        self.succeeded = succeeded
        self.failed = failed
        self.transportErrors = transportErrors
        self.latency = latency
        self.serviceTime = serviceTime
        self.stealMs = stealMs
        self.target = target
    }

    /// Merges entries with the same `second` (sums counts, adds histograms) and sorts by second.
    static func merged(_ intervals: [TimelineInterval]) -> [TimelineInterval] {
        var bySecond: [Int: [TimelineInterval]] = [:]
        for i in intervals { bySecond[i.second, default: []].append(i) }
        return bySecond.keys.sorted().map { s in
            let group = bySecond[s]!
            if group.count == 1 { return group[0] }
            let lat = group[0].latency.decode(), svc = group[0].serviceTime.decode()
            var sent: Int64 = 0, completed: Int64 = 0, ok: Int64 = 0, failed: Int64 = 0, te: Int64 = 0
            var steal: Int64?, target: Int64?
            for (k, g) in group.enumerated() {
                if let s = g.stealMs { steal = Swift.max(steal ?? s, s) }
                if let t = g.target { target = (target ?? 0) + t }
                if k > 0 {
                    lat.add(g.latency.decode())
                    svc.add(g.serviceTime.decode())
                }
                sent += g.sent; completed += g.completed; ok += g.succeeded; failed += g.failed; te += g.transportErrors
            }
            return TimelineInterval(second: s, sent: sent, completed: completed, succeeded: ok, failed: failed,
                                    transportErrors: te, latency: lat, serviceTime: svc, stealMs: steal, target: target)
        }
    }
}

/// Whether an open-loop run kept its rate, and if not, what held it back: summary.json
/// `throughput.rate_kept`, `throughput.sent_rps` and, when it was not kept, `throughput.rate_shortfall`.
public struct RateOutcome: Sendable, Equatable {
    /// What held the rate back.
    public enum Shortfall: String, Sendable {
        /// Streams were free but the sender could not produce the requests on time (its CPU).
        case sender
        /// Every stream of every connection was busy when requests fell due: more connections or
        /// streams are needed for this rate at this latency (or the peer's stream limit is too low).
        case streams
        /// The requests went out on time, but the target did not answer them at that rate (slow,
        /// failing, or gone: see the connection counts).
        case target
    }

    /// Requests sent per measured second.
    public var sentRPS: Double
    /// nil when the rate was kept.
    public var shortfall: Shortfall?

    /// An outcome.
    public init(sentRPS: Double, shortfall: Shortfall?) {
        self.sentRPS = sentRPS
        self.shortfall = shortfall
    }

    /// Whether the rate was kept.
    public var kept: Bool { shortfall == nil }

    /// The share of the target a run must reach, sent and answered, to have kept its rate.
    public static let keptFraction = 0.95
}
