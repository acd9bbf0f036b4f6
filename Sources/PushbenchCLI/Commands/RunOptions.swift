import Foundation
import LoadGenerator
import MockGateway
import PushCredentials
import PushPayload
import PushVocabulary

/// Where `--metrics-listen` serves (a numeric address; port 0 picks one).
public struct MetricsAddress: Equatable, Sendable {
    /// Numeric IPv4 or IPv6 address.
    public var host: String
    /// Port.
    public var port: Int
}

/// The requested send rate: requests per second (open loop) or `max` (closed loop).
public enum RateOption: Equatable, Sendable {
    /// Open loop: request k is due at t0 + k / rate.
    case perSecond(Int)
    /// Closed loop: every connection keeps its streams busy.
    case max
    /// Open loop rising (or falling) linearly from the first rate to the second over `--duration`.
    case ramp(from: Int, to: Int)
}

/// `--rate-file`: the file and the stages read from it.
public struct RateFileOption: Equatable, Sendable {
    /// The file as given.
    public var path: String
    /// One constant stage per line.
    public var stages: [RateSchedule.Stage]
}

/// `--segment I/N`: this agent's stripe of a schedule several agents share.
public struct SegmentOption: Equatable, Sendable {
    /// I, from 0.
    public var index: Int
    /// N, the number of agents.
    public var count: Int
}

/// Where the device tokens come from.
public enum TokensOption: Equatable, Sendable {
    /// N synthetic tokens.
    case synthetic(Int)
    /// A file with one token per line (hex for APNs, registration tokens for FCM).
    case file(String)
}

/// Every option of `pushbench run`, validated. The values here are what an absent option gives;
/// ``RunCommand/options`` declares each option (its syntax, default as shown, help and parser).
public struct RunOptions: Equatable, Sendable {
    /// `--target`: nil starts the embedded mock gateway.
    public var target: String?
    /// `--tls`: the embedded gateway serves TLS with a generated certificate, which the run trusts.
    public var tls = false
    /// `--cacert`: trust the CAs in this PEM file instead of the system's.
    public var caFile: String?
    /// `--insecure`: do not verify the server's certificate.
    public var insecure = false
    /// `--cert`: the client certificate (PEM) sent when the server asks for one.
    public var certificateFile: String?
    /// `--key`: the private key of `--cert` (PEM).
    public var keyFile: String?
    /// `--protocol`.
    public var pushProtocol: PushProtocol = .apns
    /// `--rps`.
    public var rate: RateOption = .perSecond(1000)
    /// `--duration` in seconds (ignored when `requests` is set).
    public var durationSeconds: Double = 10
    /// `--warmup` in seconds; 0 by default with `--requests` (docs/loadgen.md says why 2 s otherwise).
    public var warmupSeconds: Double = 2
    /// `--requests`: stop after N measured requests.
    public var requests: Int?
    /// `--connections` per driver thread.
    public var connections: Int = 8
    /// `--streams`: max concurrent streams per connection (capped by the peer's SETTINGS).
    public var streams: Int = 100
    /// `--threads`: driver event loops.
    public var threads: Int = 1
    /// `--encoder`: one or more variants (more than one runs them in turn and compares them).
    public var encoderVariants: [EncoderVariant] = [.zerocopy]
    /// `--payload`: JSON payload template file.
    public var payloadFile: String?
    /// `--tokens`.
    public var tokens: TokensOption = .synthetic(1000)
    /// `--topic` (apns-topic).
    public var topic: String = "com.example.pushbench"
    /// `--push-type` (apns-push-type).
    public var pushType: APNsPushType = .alert
    /// `--priority` (apns-priority).
    public var priority: Int?
    /// `--expiration` (apns-expiration, UNIX seconds).
    public var expiration: Int?
    /// `--collapse-id` (apns-collapse-id).
    public var collapseID: String?
    /// `--project` (FCM project id).
    public var project: String = "pushbench"
    /// `--http1`: FCM over HTTP/1.1 keep-alive connections, one request in flight each.
    public var http1: Bool = false
    /// `--credentials FILE`: a service account; its access token (from its token_uri) is sent as Bearer.
    public var credentials: ServiceAccount?
    /// The `--credentials` path as given (for messages; the key itself is never printed).
    public var credentialsPath: String?
    /// `--out`: results root.
    public var outputRoot: String = "results"
    /// `--label`: part of the run id.
    public var label: String = "run"
    /// `--quiet`: no progress line.
    public var quiet: Bool = false
    /// `--json`: print summary.json to stdout.
    public var json: Bool = false
    /// `--metrics-listen HOST:PORT`: serve the run's live numbers at `GET /metrics` (Prometheus text, HTTP/1.1).
    public var metricsListen: MetricsAddress?
    /// `--retry N`: resend up to N times a request the server did not act on (connection lost, REFUSED_STREAM, GOAWAY).
    public var retries: Int = 0
    /// `--send-oversize`: send payloads over the size limit instead of counting them PayloadTooLarge.
    public var sendOversize: Bool = false
    /// `--no-apns-id`: APNs requests without an apns-id header.
    public var noApnsID: Bool = false
    /// `--seed`: seed for synthetic tokens and message ids.
    public var seed: UInt64 = 1
    /// `--pace-quantum`: pacing timer granularity in seconds; nil is automatic (see ``LoadConfiguration``).
    public var paceQuantumSeconds: Double?
    /// Options for the embedded gateway (`--gateway-arg`, repeatable), passed through verbatim.
    public var gatewayArguments: [String] = []
    /// `--capture N`: the embedded gateway keeps the first N Apple pushes it builds; written to capture.json.
    public var capture: Int?
    /// `--token-churn RATE`: the fraction of the token space the embedded gateway invalidates per second.
    public var tokenChurnPerSecond: Double?
    /// `--stages`: a schedule of linear stages instead of a constant `--rps`.
    public var stages: [RateSchedule.Stage]?
    /// `--rate-file`: a recorded rate curve instead of a constant `--rps`.
    public var rateFile: RateFileOption?
    /// `--segment I/N`: run one agent's stripe of the schedule.
    public var segment: SegmentOption?
    /// `--start-at`: t0 as a wall-clock instant, ns since the Unix epoch.
    public var startAtUnixNs: Int64?
    /// `--start-late-ok`: a start time already past keeps the schedule; the missed requests go out late.
    public var startLateOK = false
    /// The embedded gateway's configuration: `--gateway-arg`s with `--capture` and `--token-churn` (with
    /// `--target`, which refuses those, the defaults, unused).
    public var embeddedGateway = GatewayConfiguration()
    /// `--auth-key`: the APNs provider key's file.
    public var authKeyFile: String?
    /// `--key-id`.
    public var keyID: String?
    /// `--team-id`.
    public var teamID: String?
    /// `--auth-refresh` in seconds: a new provider token this often.
    public var authRefreshSeconds: Double = Double(ProviderTokenSettings.defaultRefreshNanos) / 1e9
    /// The provider-token settings from `--auth-key`, `--key-id` and `--team-id` (the key read, the first
    /// token signed).
    public var providerTokens: ProviderTokenSettings?

    /// The defaults.
    public init() {}

    /// The `--encoder` names, as given.
    public var encoders: [String] { encoderVariants.map(\.rawValue) }

    /// The measured phase's schedule when the rate changes (`--stages`, `--rate-file`, `--rps A..B`); nil
    /// for a constant rate or the closed loop.
    public var schedule: RateSchedule? {
        if let stages { return RateSchedule(stages: stages) }
        if let rateFile { return RateSchedule(stages: rateFile.stages) }
        if case .ramp(let a, let b) = rate { return .ramp(from: a, to: b, durationNs: UInt64((durationSeconds * 1e9).rounded())) }
        return nil
    }

    /// How summary.json and the reports name the schedule: the option and its text.
    public var scheduleSpec: String? {
        if let stages { return "--stages " + RateSchedule(stages: stages).stagesText }
        if let rateFile { return "--rate-file " + rateFile.path }
        if case .ramp(let a, let b) = rate { return "--rps \(RateSchedule.rateText(a))..\(RateSchedule.rateText(b))" }
        return nil
    }
}
