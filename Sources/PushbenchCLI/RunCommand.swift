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

/// The options `pushbench pipeline` adds to those it shares with `run` (PipelineCommand.swift).
public struct PipelineOptions: Equatable, Sendable {
    /// `--request`: the `.http` file.
    public var requestFile: String?
    /// `--egress-listen`: where the gateway the service pushes to listens.
    public var egressHost = "127.0.0.1"
    /// See ``egressHost``; nil when `--egress-listen` was not given.
    public var egressPort: Int?
    /// `--egress-h2c`: the egress speaks h2c instead of TLS.
    public var egressH2C = false
    /// `--tls-cert-out`: where the egress writes the CA the service must trust.
    public var certificateOut: String?
    /// `--drain`: how long pushes are waited for after the last request, in seconds.
    public var drainSeconds: Double = 5
    /// `--correlate`: where the gateway looks for the id.
    public var correlate: CorrelationSource = .anywhere
    /// `--no-correlation`: the request carries no id; pushes are counted, not matched.
    public var noCorrelation = false
    /// `--h2c`: an http:// front door spoken to with HTTP/2 (prior knowledge) instead of HTTP/1.1.
    public var h2c = false
}

/// Every option of `pushbench run`, validated. The values here are what an absent option gives;
/// ``RunCommand/options`` declares each option (its syntax, default as shown, help and parser).
public struct RunOptions: Equatable, Sendable {
    /// `--target`: nil starts the embedded mock gateway.
    public var target: String?
    /// `pushbench pipeline`'s own options (unused by `run`).
    public var pipeline = PipelineOptions()
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

    /// `--slo` (repeatable): the objectives the run is judged by.
    public var objectives: [RunObjective] = []
    /// `--abort-on-slo`: stop early once an objective has failed.
    public var abortOnSLO = false
    /// `--slo-grace` in seconds: how long a whole-run objective may miss before `--abort-on-slo` stops the run.
    public var sloGraceSeconds: Double = 5
    /// `--junit FILE`: the verdicts as JUnit XML.
    public var junitFile: String?
    /// `--log FILE`: a CSV record per request.
    public var logFile: String?
    /// `--log-sample`: the fraction of requests logged.
    public var logSample: Double = 1
    /// `--log-slower-than` in seconds: only requests whose corrected latency reached it are logged.
    public var logSlowerThanSeconds: Double = 0

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

/// `pushbench [run]`: a load run against --target or the embedded mock gateway.
public struct RunCommand: PushbenchCommand {
    public static let name = "run"
    public static let abstract = "a load run (default): paced HTTP/2 pushes, latency histograms, a results folder"
    public static let usage = """
    USAGE: pushbench [run] [options]

    Drives a push endpoint at an exact open-loop rate over multiplexed HTTP/2 streams and writes
    results/<run-id>/ (summary.json, latency.hgrm, latency.hlog, timeline.csv, report.svg).
    With no --target, starts the embedded mock APNs/FCM gateway on a free loopback port.
    """
    public static let footer: String? = """
        EXIT STATUS: 0 the run completed (whatever the gateway answered); 1 a failure (the message says
        which); 2 bad input, found before any traffic (an option, a file, a results root that cannot take
        a run); 3 target unreachable; 4 the run completed but not one measured request was answered;
        5 the results could not be written under --out at the end and were written to a fallback folder
        (the message names it); 6 the run completed and an objective (--slo) did not hold (4 and 5 come
        first). A run that did not keep its rate exits 0 with a warning on stderr, unless --slo rate_kept.
        """

    public static var options: OptionTable<RunOptions> {
        OptionTable([
            .value("--target", "URL", \.target,
                   help: "https://host:port (TLS, ALPN h2) or http://host:port (h2c, prior knowledge); default: embedded mock gateway") {
                text, name throws(UsageError) in
                guard text.hasPrefix("http://") || text.hasPrefix("https://") else {
                    throw UsageError("\(name): '\(text)' is not an http:// or https:// URL")
                }
                return text
            },
            .flag("--tls", \.tls, help: "the embedded gateway serves TLS with a certificate it generates, which the run trusts"),
            .value("--cacert", "FILE", \.caFile, help: "trust the CAs in this PEM file instead of the system's (https:// or --tls)") {
                text, name throws(UsageError) in try Self.fileName(text, name)
            },
            .flag("--insecure", \.insecure, help: "do not verify the server's certificate (https:// or --tls)"),
            .value("--cert", "FILE", \.certificateFile, help: "client certificate (PEM) for a server that asks for one; with --key") {
                text, name throws(UsageError) in try Self.fileName(text, name)
            },
            .value("--key", "FILE", \.keyFile, help: "the private key (PEM) of --cert") { text, name throws(UsageError) in
                try Self.fileName(text, name)
            },
            .value("--protocol", "apns|fcm", \.pushProtocol, default: "apns", help: "push API to speak") { text, name throws(UsageError) in
                try ValueParser.choice(text, option: name, [PushProtocol.apns, .fcm])
            },
            .value("--rps", "N|max|A..B", \.rate, default: "1000",
                   help: "open-loop rate (500, 10k, 1.5M), closed loop as fast as possible (max), or a linear ramp over --duration (10k..200k)") {
                text, name throws(UsageError) in
                if text == "max" { return .max }
                let ends = text.components(separatedBy: "..")
                do throws(ScheduleError) {
                    if ends.count == 2 {
                        let a = try RateSchedule.parseRate(ends[0]), b = try RateSchedule.parseRate(ends[1])
                        guard a > 0 || b > 0 else { throw ScheduleError("'\(text)' never rises above 0") }
                        return .ramp(from: a, to: b)
                    }
                    guard let n = try? RateSchedule.parseRate(text) else {
                        throw ScheduleError("'\(text)' is not a rate (500, 10k, 1.5M), max, or a ramp (10k..200k)")
                    }
                    guard n >= 1 else { throw ScheduleError("0 is out of range (1...10000000)") }
                    return .perSecond(n)
                } catch {
                    throw UsageError("\(name): \(error.description)")
                }
            },
            .value("--stages", "LIST", \.stages,
                   help: "a rate schedule instead of --rps and --duration: DURATION:RATE stages, each going linearly from the rate before it (0 at first) to its own, e.g. 30s:10k,60s:50k,30s:0; a 0s stage is a step") {
                text, name throws(UsageError) in
                do throws(ScheduleError) { return try RateSchedule.parseStages(text) } catch {
                    throw UsageError("\(name): \(error.description)")
                }
            },
            .value("--rate-file", "FILE", \.rateFile,
                   help: "replay a recorded rate curve instead of --rps and --duration: CSV lines second,rate, each rate held until the next line's second (the last for one second)") {
                text, name throws(UsageError) in
                guard let data = FileManager.default.contents(atPath: text) else { throw UsageError("\(name): \(text): cannot read the file") }
                do throws(ScheduleError) {
                    return RateFileOption(path: text, stages: try RateSchedule.parseRateFile(String(decoding: data, as: UTF8.self), path: text))
                } catch {
                    throw UsageError("\(name): \(error.description)")
                }
            },
            .value("--duration", "T", \.durationSeconds, default: "10s",
                   help: "measured time, with its unit: 10s, 500ms, 2m, 1m30s (not with --requests)") {
                text, name throws(UsageError) in
                let d = try ValueParser.duration(text, option: name)
                guard d > 0 else { throw UsageError("\(name): must be more than zero") }
                return d
            },
            .value("--warmup", "T", \.warmupSeconds, default: "2s",
                   help: "sent and counted separately, not in the histograms; 0s (none) by default with --requests") { text, name throws(UsageError) in
                try ValueParser.duration(text, option: name)
            },
            .value("--requests", "N", \.requests, help: "stop after exactly N measured requests instead of a duration (not with --duration)") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 1...Int.max)
            },
            .value("--connections", "N", \.connections, default: "8", help: "connections per driver thread") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 1...10_000)
            },
            .value("--streams", "N", \.streams, default: "100", help: "max concurrent streams per connection, capped by the peer") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 1...100_000)
            },
            .value("--threads", "N", \.threads, default: "1", help: "driver event loops") { text, name throws(UsageError) in
                try ValueParser.integer(text, option: name, range: 1...64)
            },
            .value("--encoder", "LIST", \.encoderVariants, default: "zerocopy",
                   help: "zerocopy, copy or foundation; a comma list runs them in interleaved 1 s rounds and writes a comparison (comparison.md, comparison.svg)") {
                text, name throws(UsageError) in
                var variants: [EncoderVariant] = []
                for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                    let variant = try ValueParser.choice(String(part), option: name, [EncoderVariant.zerocopy, .copy, .foundation])
                    guard !variants.contains(variant) else { throw UsageError("\(name): '\(part)' is given twice") }
                    variants.append(variant)
                }
                return variants
            },
            .value("--payload", "FILE", \.payloadFile,
                   help: "JSON payload template with {{seq}} {{token}} {{message_id}} {{badge}} {{uuid}} {{pad:N}} {{text}} (docs/payloads.md)") {
                text, _ in text
            },
            .value("--tokens", "FILE|N", \.tokens, default: "1000",
                   help: "device tokens, one per line (hex; FCM registration tokens with --protocol fcm), or N synthetic ones; an APNs line 'token topic[,topic...]' sends that token with its first topic") {
                text, name throws(UsageError) in
                guard let n = Int(text) else { return .file(text) }
                guard n >= 1 && n <= 10_000_000 else { throw UsageError("\(name): \(n) is out of range (1...10000000)") }
                return .synthetic(n)
            },
            .value("--topic", "T", \.topic, default: "com.example.pushbench", help: "apns-topic (of the tokens whose line names none)") { text, name throws(UsageError) in
                guard !text.isEmpty else { throw UsageError("\(name): must not be empty") }
                return text
            },
            .value("--push-type", "T", \.pushType, default: "alert", help: "apns-push-type") { text, name throws(UsageError) in
                try ValueParser.choice(text, option: name, APNsPushType.allCases)
            },
            .value("--priority", "P", \.priority, help: "apns-priority: 10, 5 or 1") { text, name throws(UsageError) in
                let p = try ValueParser.integer(text, option: name, range: 1...10)
                guard [1, 5, 10].contains(p) else { throw UsageError("\(name): \(p) is not one of 10, 5, 1") }
                return p
            },
            .value("--expiration", "S", \.expiration, help: "apns-expiration (UNIX seconds; 0 = deliver once)") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 0...Int(Int32.max) * 2)
            },
            .value("--collapse-id", "ID", \.collapseID, help: "apns-collapse-id (at most 64 bytes)") { text, name throws(UsageError) in
                guard text.utf8.count <= 64 else {
                    throw UsageError("\(name): \(text.utf8.count) bytes is over the 64-byte limit")
                }
                return text
            },
            .flag("--no-apns-id", \.noApnsID, help: "send no apns-id (the gateway makes one); default: a random UUID per request"),
            .value("--project", "ID", \.project, default: "pushbench", help: "FCM project id") { text, name throws(UsageError) in
                guard !text.isEmpty, text.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                    throw UsageError("\(name): '\(text)' is not a project id (letters, digits, - and _)")
                }
                return text
            },
            .flag("--http1", \.http1,
                  help: "(--protocol fcm) send over HTTP/1.1 keep-alive connections, one request in flight each: --connections is the concurrency, --streams is ignored"),
            Option("--credentials", "FILE",
                   help: "(--protocol fcm) service-account JSON: fetch an access token from its token_uri before the run (the embedded gateway's /token without --target), refresh it before it expires, send it as Bearer") {
                (o, text) throws(UsageError) in
                do throws(CredentialError) { o.credentials = try ServiceAccount(contentsOfFile: text) } catch {
                    throw UsageError("--credentials: \(error.message)")
                }
                o.credentialsPath = text
            },
            .value("--out", "DIR", \.outputRoot, default: "results", help: "results root") { text, _ in text },
            .value("--label", "NAME", \.label, default: "run", help: "part of the run id") { text, name throws(UsageError) in
                guard !text.isEmpty,
                      text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }) else {
                    throw UsageError("\(name): '\(text)' may hold only letters, digits, '-', '_' and '.'")
                }
                return text
            },
            .value("--retry", "N", \.retries, default: "0", help: "resend up to N times a request the server did not act on: cut off by a lost connection, refused (REFUSED_STREAM) or above a GOAWAY's last stream; never one reset otherwise") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 0...100)
            },
            .flag("--send-oversize", \.sendOversize,
                  help: "send payloads over the size limit (to load-test 413); without it a template that can exceed the limit is refused"),
            .value("--seed", "N", \.seed, default: "1", help: "seed for synthetic tokens and ids") { text, name throws(UsageError) in
                guard let s = UInt64(text) else { throw UsageError("\(name): '\(text)' is not a whole number") }
                return s
            },
            .value("--pace-quantum", "T|auto", \.paceQuantumSeconds, default: "auto",
                   help: "pacing timer granularity, at most 10ms; auto picks it from the rate") { text, name throws(UsageError) in
                if text == "auto" { return nil }
                let seconds = try ValueParser.duration(text, option: name)
                guard seconds <= 0.01 else { throw UsageError("\(name): '\(text)' is over 10ms") }
                return seconds
            },
            .values("--gateway-arg", "ARG", \.gatewayArguments, passesOptions: true,
                    help: "pass ARG to the embedded gateway (repeatable), e.g. --gateway-arg=--latency=2ms; its options are in 'pushbench gateway --help'") {
                text, _ in text
            },
            .value("--capture", "N", \.capture,
                   help: "(--protocol fcm) keep the first N Apple pushes the embedded gateway builds, written with their APNs headers to capture.json in the run folder") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 1...100_000)
            },
            .value("--token-churn", "RATE", \.tokenChurnPerSecond,
                   help: "the embedded gateway invalidates this fraction of the tokens per time unit (e.g. 0.01/s); the client prunes tokens answered 410/UNREGISTERED") {
                text, name throws(UsageError) in try GatewayConfiguration.tokenChurn(text, name)
            },
            .value("--segment", "I/N", \.segment,
                   help: "run agent I of N (0 ≤ I < N): the global requests g with g mod N = I, at their global intended times; --rps, --requests and the schedule are the whole run's") {
                text, name throws(UsageError) in
                let parts = text.split(separator: "/", omittingEmptySubsequences: false)
                guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]) else {
                    throw UsageError("\(name): '\(text)' is not I/N (as in 0/4)")
                }
                guard n >= 1 && n <= 10_000 else { throw UsageError("\(name): \(n) agents is out of range (1...10000)") }
                guard i >= 0 && i < n else { throw UsageError("\(name): \(i) is not an agent of \(n) (0...\(n - 1))") }
                return SegmentOption(index: i, count: n)
            },
            .value("--start-at", "TIME", \.startAtUnixNs,
                   help: "start the schedule (t0) at this wall-clock time, RFC 3339 (2026-12-01T10:00:00Z) or Unix seconds (1796119200.5): connect first, then wait") {
                text, name throws(UsageError) in
                guard let ns = StartTime.parse(text) else {
                    throw UsageError("\(name): '\(text)' is not a time (RFC 3339 as in 2026-12-01T10:00:00Z, or Unix seconds as in 1796119200.5)")
                }
                return ns
            },
            .flag("--start-late-ok", \.startLateOK,
                  help: "a --start-at already past keeps the schedule: the requests due since go out at once, their lateness in the corrected latency"),
            .value("--auth-key", "FILE.p8", \.authKeyFile,
                   help: "sign an APNs provider token with this .p8 key (with --key-id and --team-id); without --target the embedded gateway checks the tokens") {
                text, name throws(UsageError) in
                guard !text.isEmpty else { throw UsageError("\(name): names no file") }
                return text
            },
            .value("--key-id", "ID", \.keyID, help: "the key's id (the token's kid)") { text, name throws(UsageError) in
                try GatewayConfiguration.credentialID(text, name, what: "a key id")
            },
            .value("--team-id", "ID", \.teamID, help: "the team id (the token's iss)") { text, name throws(UsageError) in
                try GatewayConfiguration.credentialID(text, name, what: "a team id")
            },
            .value("--auth-refresh", "T", \.authRefreshSeconds, default: "50m",
                   help: "sign a new provider token this often (each driver thread; shared by its connections)") {
                text, name throws(UsageError) in
                let d = try ValueParser.duration(text, option: name)
                guard d >= 0.001 else { throw UsageError("\(name): '\(text)' is under a millisecond") }
                return d
            },
            .flag("--quiet", \.quiet, help: "no progress line (the end summary and warnings are still printed)"),
            .flag("--json", \.json, help: "print summary.json to stdout"),
            .value("--metrics-listen", "HOST:PORT", \.metricsListen,
                   help: "serve the run's live counters and last-second percentiles at GET /metrics (Prometheus text format, HTTP/1.1) while it runs; :PORT for 127.0.0.1") {
                text, name throws(UsageError) in
                let (host, port) = try GatewayConfiguration.listenAddress(text, name)
                return MetricsAddress(host: host, port: port)
            },
        ] + Self.objectiveOptions)
    }

    /// `--slo`, `--abort-on-slo`, `--slo-grace` and `--junit`, shared with `pipeline`.
    static var objectiveOptions: [Option<RunOptions>] {
        [
            .values("--slo", "OBJECTIVE", \.objectives,
                    help: "an objective the run must meet, else exit 6 (repeatable): METRIC<LIMIT or METRIC<=LIMIT, optionally 'per T' for every T-second window: p50, p90, p99, p99.9, p99.99, max (corrected latency) or service_p99 under a time (p99<1ms, 'p99<5ms per 10s'); error_rate under a fraction (error_rate<0.1%); rate_kept alone; for pipeline also lost_rate, duplicate_rate, e2e_p99") {
                text, name throws(UsageError) in
                do throws(ObjectiveError) { return try RunObjective.parse(text) } catch {
                    throw UsageError("\(name): \(error.description)")
                }
            },
            .flag("--abort-on-slo", \.abortOnSLO,
                  help: "stop the run early once an objective can no longer be met (a window failed, the max passed its limit) or has missed for --slo-grace; what was measured is kept"),
            .value("--slo-grace", "T", \.sloGraceSeconds, default: "5s",
                   help: "with --abort-on-slo: how long a whole-run objective may miss, over the seconds so far, before the run stops") {
                text, name throws(UsageError) in
                let d = try ValueParser.duration(text, option: name)
                guard d >= 1, d == d.rounded() else { throw UsageError("\(name): '\(text)' is not a whole number of seconds (1s or more)") }
                return d
            },
            .value("--log", "FILE", \.logFile,
                   help: "write a CSV line per request to FILE (intended, sent and answer times, connection, stream, status, reason, apns-id, token, bytes), off the driver threads; 'pushbench report RUN --slowest N' reads it") {
                text, name throws(UsageError) in try Self.fileName(text, name)
            },
            .value("--log-sample", "FRACTION", \.logSample, default: "1",
                   help: "with --log: log this fraction of the requests (0.01 or 1%), the same requests every run") {
                text, name throws(UsageError) in
                do throws(QuantityError) {
                    let f = try Quantity.fraction(text)
                    guard f > 0 else { throw QuantityError("'\(text)' logs nothing") }
                    return f
                } catch {
                    throw UsageError("\(name): \(error.message)")
                }
            },
            .value("--log-slower-than", "T", \.logSlowerThanSeconds, default: "0s",
                   help: "with --log: log only requests whose corrected latency reached T") {
                text, name throws(UsageError) in try ValueParser.duration(text, option: name)
            },
            .value("--junit", "FILE", \.junitFile,
                   help: "write the objectives' verdicts as JUnit XML (one test case each) for CI; with GITHUB_STEP_SUMMARY set, the summary and verdicts are appended to it as Markdown") {
                text, name throws(UsageError) in try Self.fileName(text, name)
            },
        ]
    }

    /// The objectives against what the run can measure, before any traffic: a pipeline metric outside
    /// `pipeline`, rate_kept without a rate, a window longer than the run, the abort options without one.
    static func checkObjectives(_ o: RunOptions, _ a: ParsedArguments, pipeline: Bool) throws(UsageError) {
        for obj in o.objectives {
            if obj.metric.isPipeline && !pipeline {
                throw UsageError("--slo: '\(obj.description)': \(obj.metricName) is measured by pushbench pipeline, not run")
            }
            if obj.metric == .rateKept && o.rate == .max {
                throw UsageError("--slo: '\(obj.description)': --rps max has no rate to keep")
            }
            if let w = obj.windowSeconds, o.requests == nil, Double(w) > o.durationSeconds {
                throw UsageError("--slo: '\(obj.description)': the \(w) s window is longer than the run (\(ProgressDisplay.fixed(o.durationSeconds, 0)) s)")
            }
        }
        if o.objectives.isEmpty {
            for option in ["--abort-on-slo", "--slo-grace"] where a.contains(option) {
                throw UsageError("\(option): give the objectives with --slo")
            }
        } else if o.encoderVariants.count > 1 {
            throw UsageError("--slo: judges one run, not several --encoder variants compared")
        }
        if a.contains("--slo-grace") && !o.abortOnSLO { throw UsageError("--slo-grace: only applies with --abort-on-slo") }
        if o.logFile == nil {
            for option in ["--log-sample", "--log-slower-than"] where a.contains(option) {
                throw UsageError("\(option): only applies with --log FILE")
            }
        } else if o.encoderVariants.count > 1 {
            throw UsageError("--log: logs one run, not several --encoder variants compared")
        }
    }

    /// The validated options.
    public let options: RunOptions

    public init(arguments a: ParsedArguments) throws(UsageError) {
        try a.expectPositionals(0...0, "nothing")
        var o = RunOptions()
        try Self.options.apply(a, to: &o)
        // --requests N asks for N pushes: no unasked-for warm-up traffic before them (against a real
        // endpoint those are real notifications), unless --warmup says so.
        if o.requests != nil && !a.contains("--warmup") { o.warmupSeconds = 0 }
        try Self.checkSchedule(&o, a)
        try Self.checkSegment(o)
        // Options that would contradict each other are refused rather than one silently winning.
        if o.requests != nil && a.contains("--duration") {
            throw UsageError("--duration: not with --requests (a run ends after N requests or after a duration; give one)")
        }
        if o.rate == .max && a.contains("--pace-quantum") {
            throw UsageError("--pace-quantum: only paces an open-loop rate, not --rps max")
        }
        if o.http1 && o.pushProtocol != .fcm {
            throw UsageError("--http1: APNs is HTTP/2 only; --http1 applies to --protocol fcm")
        }
        if o.credentials != nil && o.pushProtocol != .fcm {
            throw UsageError("--credentials: a service account is for FCM; use --protocol fcm (APNs uses provider tokens)")
        }
        if o.noApnsID && o.pushProtocol == .fcm {
            throw UsageError("--no-apns-id: FCM requests carry no apns-id (it applies to --protocol apns)")
        }
        if o.target != nil && !o.gatewayArguments.isEmpty {
            throw UsageError("--gateway-arg: only applies to the embedded gateway, not with --target")
        }
        if o.capture != nil {
            guard o.target == nil else { throw UsageError("--capture: only the embedded gateway captures pushes, not with --target") }
            guard o.pushProtocol == .fcm else {
                throw UsageError("--capture: the gateway captures the Apple pushes it builds from FCM messages; use --protocol fcm")
            }
        }
        if o.tokenChurnPerSecond != nil && o.target != nil {
            throw UsageError("--token-churn: only the embedded gateway can churn tokens, not with --target")
        }
        try Self.checkObjectives(o, a, pipeline: false)
        try Self.checkTLS(o)
        o.providerTokens = try Self.providerTokens(o)
        o.embeddedGateway = try Self.embeddedGateway(o)
        options = o
    }

    /// A schedule replaces --rps and --duration, and runs alone: no --requests, one encoder. One that starts
    /// from 0 has no warm-up unless --warmup asks (it would idle): start with a 0s stage to warm up at a rate.
    static func checkSchedule(_ o: inout RunOptions, _ a: ParsedArguments) throws(UsageError) {
        let given = ["--stages", "--rate-file"].filter(a.contains)
        if given.count > 1 { throw UsageError("--stages, --rate-file: give one schedule") }
        if let option = given.first {
            for other in ["--rps", "--duration", "--requests"] where a.contains(other) {
                throw UsageError("\(other): \(option) sets the rate and the length; leave \(other) out")
            }
        }
        guard let schedule = o.schedule else { return }
        let option = given.first ?? "--rps"
        if o.requests != nil { throw UsageError("--requests: \(option) sets how many requests; leave --requests out") }
        if o.encoderVariants.count > 1 {
            throw UsageError("--encoder: comparing encoders needs a constant --rps, not a schedule (\(option))")
        }
        o.durationSeconds = Double(schedule.durationNs) / 1e9
        if schedule.initialRate == 0 && !a.contains("--warmup") { o.warmupSeconds = 0 }
    }

    /// --segment with --rps max splits --connections; --start-at must lie ahead unless --start-late-ok.
    static func checkSegment(_ o: RunOptions) throws(UsageError) {
        if let s = o.segment, o.rate == .max, o.connections < s.count {
            throw UsageError("--connections: with --rps max each of the \(s.count) agents runs its share of \(o.connections) connections; give at least \(s.count)")
        }
        if let s = o.segment, o.encoderVariants.count > 1 {
            throw UsageError("--encoder: comparing encoders is one process's work; not with --segment \(s.index)/\(s.count)")
        }
        if let at = o.startAtUnixNs, !o.startLateOK {
            let late = WallClock.unixNanoseconds() - at
            if late > 0 {
                throw UsageError("--start-at: \(StartTime.format(at)) is \(late / 1_000_000_000) s in the past (give a time ahead, or --start-late-ok to keep the schedule and send the missed requests late)")
            }
        }
        if o.startLateOK && o.startAtUnixNs == nil { throw UsageError("--start-late-ok: only with --start-at") }
    }

    /// The embedded gateway's configuration: the `--gateway-arg`s parsed with the gateway's own table,
    /// then the run options it takes over. Naming one both ways is an error, as it would be twice in
    /// `pushbench gateway`.
    static func embeddedGateway(_ o: RunOptions) throws(UsageError) -> GatewayConfiguration {
        var config: GatewayConfiguration
        do throws(UsageError) {
            let parsed = try ParsedArguments(o.gatewayArguments, options: GatewayConfiguration.options)
            try parsed.expectPositionals(0...0, "nothing")
            if o.capture != nil && parsed.contains("--capture") { throw UsageError("--capture: given more than once") }
            if o.tokenChurnPerSecond != nil && parsed.contains("--token-churn") {
                throw UsageError("--token-churn: given more than once")
            }
            config = try GatewayConfiguration.parse(parsed)
        } catch {
            throw UsageError("--gateway-arg: \(error.message)")
        }
        if o.tls { config.tls.requested = true }
        if let tokens = o.providerTokens, o.target == nil {
            // The embedded gateway checks the run's tokens with the same key.
            guard config.auth.requestedMode == nil, config.auth.mode == .off else {
                throw UsageError("--auth-key: the embedded gateway checks the run's own key; leave --apns-* and --client-ca out of --gateway-arg")
            }
            config.auth.requestedMode = .token
            config.auth.keys = [APNsProviderKey(keyID: tokens.keyID, publicKey: tokens.key.publicKey, path: tokens.keyFile)]
            config.auth.teamID = tokens.teamID
        }
        if let capture = o.capture { config.fcm.capture = capture }
        // With --credentials the embedded gateway is the token endpoint, and checks both the assertions
        // (with the account's key) and the access tokens it issues, as Google does.
        if let account = o.credentials, o.target == nil {
            if config.fcm.serviceAccount == nil { config.fcm.serviceAccount = account }
            config.fcm.auth = .oauth
        }
        if let churn = o.tokenChurnPerSecond { config.fcm.tokenChurnPerSecond = churn }
        return config
    }

    /// The TLS options' combinations: they need TLS (an https:// target, or the embedded gateway over TLS),
    /// and a certificate goes with its key.
    static func checkTLS(_ o: RunOptions) throws(UsageError) {
        if o.tls && o.target != nil {
            throw UsageError("--tls: runs the embedded gateway over TLS; for a target give an https:// URL")
        }
        if (o.certificateFile == nil) != (o.keyFile == nil) {
            throw UsageError(o.certificateFile == nil ? "--key: give the certificate too (--cert FILE)" : "--cert: give its key too (--key FILE)")
        }
        if o.caFile != nil && o.insecure { throw UsageError("--insecure: trusts anything, so --cacert would be ignored; give one") }
        let usesTLS = o.target.map { $0.hasPrefix("https://") } ?? (o.tls || o.gatewayArguments.contains { $0.hasPrefix("--tls") })
        if !usesTLS {
            let given = o.caFile != nil ? "--cacert" : o.insecure ? "--insecure" : o.certificateFile != nil ? "--cert" : nil
            if let given {
                throw UsageError(o.target != nil ? "\(given): the target is http:// (h2c); TLS options need an https:// target"
                                                 : "\(given): needs TLS: an https:// --target, or --tls for the embedded gateway")
            }
        }
    }

    static func fileName(_ text: String, _ name: String) throws(UsageError) -> String {
        guard !text.isEmpty else { throw UsageError("\(name): names no file") }
        return text
    }

    /// The provider-token settings of `--auth-key`, `--key-id` and `--team-id`: all three or none; the key
    /// is read and a first token signed now, so a bad key stops the run before any traffic.
    static func providerTokens(_ o: RunOptions) throws(UsageError) -> ProviderTokenSettings? {
        let given = [("--auth-key", o.authKeyFile), ("--key-id", o.keyID), ("--team-id", o.teamID)]
        let missing = given.filter { $0.1 == nil }.map(\.0)
        if missing.count == 3 { return nil }
        guard missing.isEmpty else {
            throw UsageError("\(given.first { $0.1 != nil }!.0): provider tokens need --auth-key, --key-id and --team-id together (missing \(missing.joined(separator: ", ")))")
        }
        guard o.pushProtocol == .apns else { throw UsageError("--auth-key: APNs provider tokens apply to --protocol apns") }
        do throws(CredentialError) {
            let key = try ES256PrivateKey(contentsOfFile: o.authKeyFile!)
            return try ProviderTokenSettings(key: key, keyID: o.keyID!, teamID: o.teamID!, keyFile: o.authKeyFile!,
                                             refreshIntervalNanos: UInt64((o.authRefreshSeconds * 1e9).rounded()))
        } catch {
            throw UsageError("--auth-key: \(error.message)")
        }
    }

    public func run() -> Int32 {
        RunExecution(options: options).execute()
    }
}
