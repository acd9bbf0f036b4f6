import Foundation
import PushVocabulary

/// summary.json `config.schedule`: the rate schedule of a run whose rate changes over time.
public struct ScheduleSettings: Sendable, Equatable {
    /// The option as given (`--stages 30s:10k,60s:50k,30s:0`, `--rps 10k..200k`, `--rate-file FILE`).
    var spec: String
    /// The stages (length in seconds, rate at its start and at its end in requests per second), when
    /// there are at most ``listedStages`` of them; summary.json lists each as `[seconds, from, to]`.
    public var stages: [(seconds: Double, from: Int, to: Int)]
    /// How many stages there are.
    var stageCount: Int
    /// A fingerprint of the stages: runs of one schedule have the same.
    public var digest: String
    /// Requests the schedule intends in the measured phase (the whole run's, all agents).
    public var requests: Int64
    /// The highest rate in it.
    var peakRPS: Int

    /// A long rate file lists no stages in summary.json (its digest still tells schedules apart).
    static let listedStages = 100

    /// The settings; `stages` are listed only when there are at most ``listedStages``.
    public init(spec: String, stages: [(seconds: Double, from: Int, to: Int)], digest: String, requests: Int64, peakRPS: Int) {
        self.spec = spec
        stageCount = stages.count
        self.stages = stages.count <= Self.listedStages ? stages : []
        self.digest = digest
        self.requests = requests
        self.peakRPS = peakRPS
    }

    public static func == (a: ScheduleSettings, b: ScheduleSettings) -> Bool { a.json == b.json }

    var json: JSONValue {
        .object([
            ("spec", .string(spec)), ("stage_count", .int(Int64(stageCount))),
            ("stages", .array(stages.map { .array([.double($0.seconds), .int(Int64($0.from)), .int(Int64($0.to))]) })),
            ("digest", .string(digest)), ("requests", .int(requests)), ("peak_rps", .int(Int64(peakRPS))),
        ])
    }
}

/// summary.json `start`: when the schedule started (t0), in wall-clock time, and how this process's first
/// request met it. Agents given one `--start-at` share t0 exactly; `pushbench merge` aligns on it.
public struct RunStart: Sendable, Equatable {
    /// t0 in ns since the Unix epoch (the warm-up begins here; the measured phase at t0 + warm-up).
    public var t0UnixNs: Int64
    /// Whether t0 was given (`--start-at`) rather than taken when the connections were up.
    public var requested: Bool
    /// `--start-late-ok`.
    var lateOK: Bool
    /// How long after t0 the first request went out, µs (nil: none was sent, or a closed loop).
    var firstSendAfterT0Micros: Int64?
    /// How late that first request was against its intended time, µs.
    var firstSendLateMicros: Int64?

    /// The figures.
    public init(t0UnixNs: Int64, requested: Bool, lateOK: Bool, firstSendAfterT0Micros: Int64?, firstSendLateMicros: Int64?) {
        self.t0UnixNs = t0UnixNs
        self.requested = requested
        self.lateOK = lateOK
        self.firstSendAfterT0Micros = firstSendAfterT0Micros
        self.firstSendLateMicros = firstSendLateMicros
    }

    var json: JSONValue {
        .object([
            ("t0", .string(ResultsWriter.iso8601(Date(timeIntervalSince1970: Double(t0UnixNs) / 1e9)))), ("t0_unix_ns", .int(t0UnixNs)),
            ("start_at", .bool(requested)), ("late_ok", .bool(lateOK)),
            ("first_send_after_t0_us", firstSendAfterT0Micros.map { .int($0) } ?? .null),
            ("first_send_late_us", firstSendLateMicros.map { .int($0) } ?? .null),
        ])
    }
}

/// summary.json `segment`: this agent's stripe of a schedule N agents share (`--segment I/N`), and what
/// `pushbench merge` checks the agents agree on beyond the config.
public struct RunSegment: Sendable, Equatable {
    /// I.
    public var index: Int
    /// N.
    public var count: Int
    /// Fingerprint of the payload template (file contents, or the default's name).
    var payloadDigest: String
    /// `--seed`.
    public var seed: UInt64

    /// The segment.
    public init(index: Int, count: Int, payloadDigest: String, seed: UInt64) {
        self.index = index
        self.count = count
        self.payloadDigest = payloadDigest
        self.seed = seed
    }

    var json: JSONValue {
        .object([("index", .int(Int64(index))), ("count", .int(Int64(count))), ("payload_digest", .string(payloadDigest)),
                 ("seed", .string(String(seed)))])
    }
}
