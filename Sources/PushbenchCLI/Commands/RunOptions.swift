import Foundation
import LoadGenerator
import MockGateway
import PushCredentials
import PushPayload
import PushVocabulary

/// Where `--metrics-listen` serves (a numeric address; port 0 picks one).
struct MetricsAddress: Equatable, Sendable {
    /// Numeric IPv4 or IPv6 address.
    var host: String
    /// Port.
    var port: Int
}

/// The requested send rate: requests per second (open loop) or `max` (closed loop).
enum RateOption: Equatable, Sendable {
    /// Open loop: request k is due at t0 + k / rate.
    case perSecond(Int)
    /// Closed loop: every connection keeps its streams busy.
    case max
    /// Open loop rising (or falling) linearly from the first rate to the second over `--duration`.
    case ramp(from: Int, to: Int)
}

/// `--rate-file`: the file and the stages read from it.
struct RateFileOption: Equatable, Sendable {
    /// The file as given.
    var path: String
    /// One constant stage per line.
    var stages: [RateSchedule.Stage]
}

/// `--segment I/N`: this agent's stripe of a schedule several agents share.
struct SegmentOption: Equatable, Sendable {
    /// I, from 0.
    var index: Int
    /// N, the number of agents.
    var count: Int
}

/// Where the device tokens come from.
enum TokensOption: Equatable, Sendable {
    /// N synthetic tokens.
    case synthetic(Int)
    /// A file with one token per line (hex for APNs, registration tokens for FCM).
    case file(String)
}

/// The options `pushbench pipeline` adds to those it shares with `run` (PipelineCommand.swift).
struct PipelineOptions: Equatable, Sendable {
    /// `--request`: the `.http` file.
    var requestFile: String?
    /// `--egress-listen`: where the gateway the service pushes to listens.
    var egressHost = "127.0.0.1"
    /// See ``egressHost``; nil when `--egress-listen` was not given.
    var egressPort: Int?
    /// `--egress-url`: a separately started `pushbench gateway --correlate-prefix` is the egress.
    var egressURL: String?
    /// `--egress-h2c`: the egress speaks h2c instead of TLS.
    var egressH2C = false
    /// `--tls-cert-out`: where the egress writes the CA the service must trust.
    var certificateOut: String?
    /// `--drain`: how long pushes are waited for after the last request, in seconds.
    var drainSeconds: Double = 5
    /// `--correlate`: where the gateway looks for the id.
    var correlate: CorrelationSource = .anywhere
    /// `--no-correlation`: the request carries no id; pushes are counted, not matched.
    var noCorrelation = false
    /// `--h2c`: an http:// front door spoken to with HTTP/2 (prior knowledge) instead of HTTP/1.1.
    var h2c = false
}

/// Every option of `pushbench run`, validated. The values here are what an absent option gives;
/// ``RunCommand/options`` declares each option (its syntax, default as shown, help and parser).
struct RunOptions: Equatable, Sendable {
    /// `--target`: nil starts the embedded mock gateway.
    var target: String?
    /// `pushbench pipeline`'s own options (unused by `run`).
    var pipeline = PipelineOptions()
    /// `--slo` (repeatable): the objectives the run is judged by.
    var objectives: [RunObjective] = []
    /// `--abort-on-slo`: stop early once an objective has failed.
    var abortOnSLO = false
    /// `--slo-grace` in seconds: how long a whole-run objective may miss before `--abort-on-slo` stops the run.
    var sloGraceSeconds: Double = 5
    /// `--junit FILE`: the verdicts as JUnit XML.
    var junitFile: String?
    /// `--log FILE`: a CSV record per request.
    var logFile: String?
    /// `--log-sample`: the fraction of requests logged.
    var logSample: Double = 1
    /// `--log-slower-than` in seconds: only requests whose corrected latency reached it are logged.
    var logSlowerThanSeconds: Double = 0
    /// `--tls`: the embedded gateway serves TLS with a generated certificate, which the run trusts.
    var tls = false
    /// `--cacert`: trust the CAs in this PEM file instead of the system's.
    var caFile: String?
    /// `--insecure`: do not verify the server's certificate.
    var insecure = false
    /// `--cert`: the client certificate (PEM) sent when the server asks for one.
    var certificateFile: String?
    /// `--key`: the private key of `--cert` (PEM).
    var keyFile: String?
    /// `--protocol`.
    var pushProtocol: PushProtocol = .apns
    /// `--rps`.
    var rate: RateOption = .perSecond(1000)
    /// `--duration` in seconds (ignored when `requests` is set).
    var durationSeconds: Double = 10
    /// `--warmup` in seconds; 0 by default with `--requests` (docs/loadgen.md says why 2 s otherwise).
    var warmupSeconds: Double = 2
    /// `--requests`: stop after N measured requests.
    var requests: Int?
    /// `--connections` per driver thread.
    var connections: Int = 8
    /// `--streams`: max concurrent streams per connection (capped by the peer's SETTINGS).
    var streams: Int = 100
    /// `--threads`: driver event loops.
    var threads: Int = 1
    /// `--encoder`: one or more variants (more than one runs them in turn and compares them).
    var encoderVariants: [EncoderVariant] = [.zerocopy]
    /// `--payload`: JSON payload template file.
    var payloadFile: String?
    /// `--tokens`.
    var tokens: TokensOption = .synthetic(1000)
    /// `--topic` (apns-topic).
    var topic: String = "com.example.pushbench"
    /// `--push-type` (apns-push-type).
    var pushType: APNsPushType = .alert
    /// `--priority` (apns-priority).
    var priority: Int?
    /// `--expiration` (apns-expiration, UNIX seconds).
    var expiration: Int?
    /// `--collapse-id` (apns-collapse-id).
    var collapseID: String?
    /// `--project` (FCM project id).
    var project: String = "pushbench"
    /// `--http1`: FCM over HTTP/1.1 keep-alive connections, one request in flight each.
    var http1: Bool = false
    /// `--credentials FILE`: a service account; its access token (from its token_uri) is sent as Bearer.
    var credentials: ServiceAccount?
    /// The `--credentials` path as given (for messages; the key itself is never printed).
    var credentialsPath: String?
    /// `--out`: results root.
    var outputRoot: String = "results"
    /// `--label`: part of the run id.
    var label: String = "run"
    /// `--quiet`: no progress line.
    var quiet: Bool = false
    /// `--json`: print summary.json to stdout.
    var json: Bool = false
    /// `--metrics-listen HOST:PORT`: serve the run's live numbers at `GET /metrics` (Prometheus text, HTTP/1.1).
    var metricsListen: MetricsAddress?
    /// `--dashboard HOST:PORT`: serve a live page of the run, its event stream and its seconds (docs/dashboard.md).
    var dashboard: MetricsAddress?
    /// `--dashboard-viewers N`: event streams open at once; one more is refused.
    var dashboardViewers: Int = 8
    /// `--dashboard-linger T`: seconds the dashboard keeps serving the final page after the run.
    var dashboardLingerSeconds: Double = 0
    /// `--retry N`: resend up to N times a request the server did not act on (connection lost, REFUSED_STREAM, GOAWAY).
    var retries: Int = 0
    /// `--send-oversize`: send payloads over the size limit instead of counting them PayloadTooLarge.
    var sendOversize: Bool = false
    /// `--no-apns-id`: APNs requests without an apns-id header.
    var noApnsID: Bool = false
    /// `--seed`: seed for synthetic tokens and message ids.
    var seed: UInt64 = 1
    /// `--pace-quantum`: pacing timer granularity in seconds; nil is automatic (see ``LoadConfiguration``).
    var paceQuantumSeconds: Double?
    /// `--realtime`: the driver threads and the embedded gateway's loop threads run `SCHED_FIFO`.
    var realtime: Bool = false
    /// Options for the embedded gateway (`--gateway-arg`, repeatable), passed through verbatim.
    var gatewayArguments: [String] = []
    /// `--capture N`: the embedded gateway keeps the first N Apple pushes it builds; written to capture.json.
    var capture: Int?
    /// `--token-churn RATE`: the fraction of the token space the embedded gateway invalidates per second.
    var tokenChurnPerSecond: Double?
    /// `--stages`: a schedule of linear stages instead of a constant `--rps`.
    var stages: [RateSchedule.Stage]?
    /// `--rate-file`: a recorded rate curve instead of a constant `--rps`.
    var rateFile: RateFileOption?
    /// `--segment I/N`: run one agent's stripe of the schedule.
    var segment: SegmentOption?
    /// `--start-at`: t0 as a wall-clock instant, ns since the Unix epoch.
    var startAtUnixNs: Int64?
    /// `--start-late-ok`: a start time already past keeps the schedule; the missed requests go out late.
    var startLateOK = false
    /// The embedded gateway's configuration: `--gateway-arg`s with `--capture` and `--token-churn` (with
    /// `--target`, which refuses those, the defaults, unused).
    var embeddedGateway = GatewayConfiguration()
    /// `--auth-key`: the APNs provider key's file.
    var authKeyFile: String?
    /// `--key-id`.
    var keyID: String?
    /// `--team-id`.
    var teamID: String?
    /// `--auth-refresh` in seconds: a new provider token this often.
    var authRefreshSeconds: Double = Double(ProviderTokenSettings.defaultRefreshNanos) / 1e9
    /// The provider-token settings from `--auth-key`, `--key-id` and `--team-id` (the key read, the first
    /// token signed).
    var providerTokens: ProviderTokenSettings?

    /// The defaults.
    init() {}

    /// The `--encoder` names, as given.
    var encoders: [String] { encoderVariants.map(\.rawValue) }

    /// The measured phase's schedule when the rate changes (`--stages`, `--rate-file`, `--rps A..B`); nil
    /// for a constant rate or the closed loop.
    var schedule: RateSchedule? {
        if let stages { return RateSchedule(stages: stages) }
        if let rateFile { return RateSchedule(stages: rateFile.stages) }
        if case .ramp(let a, let b) = rate { return .ramp(from: a, to: b, durationNs: UInt64((durationSeconds * 1e9).rounded())) }
        return nil
    }

    /// How summary.json and the reports name the schedule: the option and its text.
    var scheduleSpec: String? {
        if let stages { return "--stages " + RateSchedule(stages: stages).stagesText }
        if let rateFile { return "--rate-file " + rateFile.path }
        if case .ramp(let a, let b) = rate { return "--rps \(RateSchedule.rateText(a))..\(RateSchedule.rateText(b))" }
        return nil
    }
}
