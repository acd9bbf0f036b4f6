import Foundation
import LoadGenerator
import MockGateway
import PushMetrics
import PushPayload
import PushVocabulary
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The requested send rate: requests per second (open loop) or `max` (closed loop).
public enum RateOption: Equatable, Sendable {
    /// Open loop: request k is due at t0 + k / rate.
    case perSecond(Int)
    /// Closed loop: every connection keeps its streams busy.
    case max
}

/// Where the device tokens come from.
public enum TokensOption: Equatable, Sendable {
    /// N synthetic tokens.
    case synthetic(Int)
    /// A file with one token per line (hex for APNs, registration tokens for FCM).
    case file(String)
}

/// Every option of `pushbench run`, validated (design.md "Command line").
public struct RunOptions: Equatable, Sendable {
    /// `--target`: nil starts the embedded mock gateway.
    public var target: String?
    /// `--protocol`: `apns` or `fcm`.
    public var pushProtocol: String = "apns"
    /// `--rps`.
    public var rate: RateOption = .perSecond(1000)
    /// `--duration` in seconds (ignored when `requests` is set).
    public var durationSeconds: Double = 10
    /// `--warmup` in seconds. design.md's command line gives 2 s: the first second of a run at 50k rps
    /// (connections' first HPACK tables, the allocators' first pages, the first touch of the histograms)
    /// had a p99 two to five times the seconds after it, so the default keeps it out of the figures.
    public var warmupSeconds: Double = 2
    /// `--requests`: stop after N measured requests.
    public var requests: Int?
    /// `--connections` per driver thread.
    public var connections: Int = 8
    /// `--streams`: max concurrent streams per connection (capped by the peer's SETTINGS).
    public var streams: Int = 100
    /// `--threads`: driver event loops.
    public var threads: Int = 1
    /// `--encoder`: one or more of zerocopy, copy, foundation (comma-separated runs them in turn).
    public var encoders: [String] = ["zerocopy"]
    /// `--payload`: JSON payload template file.
    public var payloadFile: String?
    /// `--tokens`.
    public var tokens: TokensOption = .synthetic(1000)
    /// `--topic` (apns-topic).
    public var topic: String = "com.example.pushbench"
    /// `--push-type` (apns-push-type).
    public var pushType: String = "alert"
    /// `--priority` (apns-priority).
    public var priority: Int?
    /// `--expiration` (apns-expiration, UNIX seconds).
    public var expiration: Int?
    /// `--collapse-id` (apns-collapse-id).
    public var collapseID: String?
    /// `--project` (FCM project id).
    public var project: String = "pushbench"
    /// `--out`: results root.
    public var outputRoot: String = "results"
    /// `--label`: part of the run id.
    public var label: String = "run"
    /// `--quiet`: no progress line.
    public var quiet: Bool = false
    /// `--json`: print summary.json to stdout.
    public var json: Bool = false
    /// `--retry N`: retry requests cut off by a lost connection up to N times.
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
    /// `--token-churn RATE` (e.g. `0.01/s`), forwarded to the embedded gateway.
    public var tokenChurn: String?

    /// The defaults.
    public init() {}

    /// What the embedded gateway is started with: `--gateway-arg`s plus the forwarded run options.
    public var embeddedGatewayArguments: [String] {
        var args = gatewayArguments
        if let capture { args.append("--capture=\(capture)") }
        if let tokenChurn { args.append("--token-churn=" + tokenChurn) }
        return args
    }
}

/// `pushbench [run]`: a load run against --target or the embedded mock gateway.
public struct RunCommand: PushbenchCommand {
    public static let name = "run"
    public static let abstract = "a load run (default): paced HTTP/2 pushes, latency histograms, a results folder"
    public static let options: [OptionSpec] = [
        .value("--target"), .value("--protocol"), .value("--rps"), .value("--duration"), .value("--warmup"),
        .value("--requests"), .value("--connections"), .value("--streams"), .value("--threads"),
        .value("--encoder"), .value("--payload"), .value("--tokens"), .value("--topic"), .value("--push-type"),
        .value("--priority"), .value("--expiration"), .value("--collapse-id"), .value("--project"),
        .value("--out"), .value("--label"), .flag("--quiet"), .flag("--json"), .value("--retry"),
        .flag("--send-oversize"), .flag("--no-apns-id"), .value("--seed"), .value("--gateway-arg", repeats: true), .value("--pace-quantum"),
        .value("--capture"), .value("--token-churn"),
    ]
    public static let help = """
    USAGE: pushbench [run] [options]

    Drives a push endpoint at an exact open-loop rate over multiplexed HTTP/2 streams and writes
    results/<run-id>/ (summary.json, latency.hgrm, latency.hlog, timeline.csv, report.svg).
    With no --target, starts the embedded mock APNs/FCM gateway on a free loopback port.

    OPTIONS:
      --target URL            http://host:port (h2c, prior knowledge); default: embedded mock gateway
      --protocol apns|fcm     push API to speak (default apns)
      --rps N|max             open-loop rate, or closed loop as fast as possible (default 1000)
      --duration T            measured time: 10s, 500ms, 2m (default 10s)
      --warmup T              sent and counted separately, not in the histograms (default 2s; 0s with --requests)
      --requests N            stop after N measured requests instead of a duration
      --connections N         connections per driver thread (default 8)
      --streams N             max concurrent streams per connection, capped by the peer (default 100)
      --threads N             driver event loops (default 1)
      --encoder LIST          zerocopy, copy or foundation (default zerocopy); a comma list runs them in
                              interleaved 1 s rounds and writes a comparison (comparison.md, comparison.svg)
      --payload FILE          JSON payload template with {{seq}} {{token}} {{message_id}} {{badge}} {{uuid}} {{pad:N}}
      --tokens FILE|N         device tokens, one per line (hex; FCM registration tokens with --protocol fcm),
                              or N synthetic ones (default 1000)
      --topic T               apns-topic (default com.example.pushbench)
      --push-type T           apns-push-type (default alert)
      --priority P            apns-priority: 10, 5 or 1
      --expiration S          apns-expiration (UNIX seconds; 0 = deliver once)
      --collapse-id ID        apns-collapse-id (at most 64 bytes)
      --no-apns-id            send no apns-id (the gateway makes one); default: a random UUID per request
      --project ID            FCM project id (default pushbench)
      --out DIR               results root (default ./results)
      --label NAME            part of the run id (default run)
      --retry N               retry requests cut off by a lost connection up to N times (default 0)
      --send-oversize         send payloads over the size limit (to load-test 413) instead of counting them
      --seed N                seed for synthetic tokens and ids (default 1)
      --gateway-arg ARG       pass ARG to the embedded gateway (repeatable), e.g. --gateway-arg=--latency=2ms
      --capture N             (--protocol fcm) keep the first N Apple pushes the embedded gateway builds,
                              written with their APNs headers to capture.json in the run folder
      --token-churn RATE      the embedded gateway invalidates this fraction of the tokens per time unit
                              (e.g. 0.01/s); the client prunes tokens answered 410/UNREGISTERED
      --quiet                 no progress line
      --json                  print summary.json to stdout
      -h, --help              show this help

    EXIT STATUS: 0 the run completed (whatever the gateway answered); 2 bad input; 3 target unreachable.
    """

    /// The validated options.
    public let options: RunOptions

    public init(arguments a: ParsedArguments) throws(UsageError) {
        try a.expectPositionals(0...0, "nothing")
        var o = RunOptions()
        if let target = a.value("--target") {
            guard target.hasPrefix("http://") || target.hasPrefix("https://") else {
                throw UsageError("--target: '\(target)' is not an http:// or https:// URL")
            }
            o.target = target
        }
        o.pushProtocol = try a.choice("--protocol", PushProtocol.allCases.map(\.rawValue), default: "apns")
        if let rps = a.value("--rps") {
            if rps == "max" {
                o.rate = .max
            } else {
                guard let n = Int(rps) else { throw UsageError("--rps: '\(rps)' is not a number or 'max'") }
                guard n >= 1 && n <= 10_000_000 else { throw UsageError("--rps: \(n) is out of range (1...10000000)") }
                o.rate = .perSecond(n)
            }
        }
        if let d = try a.duration("--duration", default: nil) {
            guard d > 0 else { throw UsageError("--duration: must be more than zero") }
            o.durationSeconds = d
        }
        if a.value("--requests") != nil {
            o.requests = try a.integer("--requests", default: 0, range: 1...Int.max)
        }
        // --requests N asks for N pushes: no unasked-for warm-up traffic before them (against a real
        // endpoint those are real notifications), unless --warmup says so.
        let defaultWarmup = o.requests == nil ? o.warmupSeconds : 0
        o.warmupSeconds = try a.duration("--warmup", default: defaultWarmup) ?? defaultWarmup
        o.connections = try a.integer("--connections", default: 8, range: 1...10_000)
        o.streams = try a.integer("--streams", default: 100, range: 1...100_000)
        o.threads = try a.integer("--threads", default: 1, range: 1...64)
        if let list = a.value("--encoder") {
            let names = list.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            for name in names where !["zerocopy", "copy", "foundation"].contains(name) {
                throw UsageError("--encoder: '\(name)' is not one of zerocopy, copy, foundation")
            }
            o.encoders = names
        }
        o.payloadFile = a.value("--payload")
        if let tokens = a.value("--tokens") {
            if let n = Int(tokens) {
                guard n >= 1 && n <= 10_000_000 else { throw UsageError("--tokens: \(n) is out of range (1...10000000)") }
                o.tokens = .synthetic(n)
            } else {
                o.tokens = .file(tokens)
            }
        }
        if let topic = a.value("--topic") {
            guard !topic.isEmpty else { throw UsageError("--topic: must not be empty") }
            o.topic = topic
        }
        o.pushType = try a.choice("--push-type", APNsPushType.allCases.map(\.rawValue), default: "alert")
        if a.value("--priority") != nil {
            let p = try a.integer("--priority", default: 10, range: 1...10)
            guard [1, 5, 10].contains(p) else { throw UsageError("--priority: \(p) is not one of 10, 5, 1") }
            o.priority = p
        }
        if a.value("--expiration") != nil {
            o.expiration = try a.integer("--expiration", default: 0, range: 0...Int(Int32.max) * 2)
        }
        if let collapse = a.value("--collapse-id") {
            guard collapse.utf8.count <= 64 else {
                throw UsageError("--collapse-id: \(collapse.utf8.count) bytes is over the 64-byte limit")
            }
            o.collapseID = collapse
        }
        if let project = a.value("--project") {
            guard !project.isEmpty, project.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw UsageError("--project: '\(project)' is not a project id (letters, digits, - and _)")
            }
            o.project = project
        }
        o.outputRoot = a.value("--out") ?? "results"
        if let label = a.value("--label") {
            guard !label.isEmpty, label.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }) else {
                throw UsageError("--label: '\(label)' may hold only letters, digits, '-', '_' and '.'")
            }
            o.label = label
        }
        o.quiet = a.flag("--quiet")
        o.json = a.flag("--json")
        o.retries = try a.integer("--retry", default: 0, range: 0...100)
        o.sendOversize = a.flag("--send-oversize")
        o.noApnsID = a.flag("--no-apns-id")
        if o.noApnsID && o.pushProtocol == "fcm" {
            throw UsageError("--no-apns-id: FCM requests carry no apns-id (it applies to --protocol apns)")
        }
        if let seed = a.value("--seed") {
            guard let s = UInt64(seed) else { throw UsageError("--seed: '\(seed)' is not a whole number") }
            o.seed = s
        }
        if let q = a.value("--pace-quantum"), q != "auto" {
            let seconds = try ValueParser.duration(q, option: "--pace-quantum")
            guard seconds <= 0.01 else { throw UsageError("--pace-quantum: '\(q)' is over 10ms") }
            o.paceQuantumSeconds = seconds
        }
        o.gatewayArguments = a.allValues("--gateway-arg")
        if o.target != nil && !o.gatewayArguments.isEmpty {
            throw UsageError("--gateway-arg: only applies to the embedded gateway, not with --target")
        }
        if let c = a.value("--capture") {
            guard o.target == nil else { throw UsageError("--capture: only the embedded gateway captures pushes, not with --target") }
            guard o.pushProtocol == "fcm" else {
                throw UsageError("--capture: the gateway captures the Apple pushes it builds from FCM messages; use --protocol fcm")
            }
            o.capture = try ValueParser.integer(c, option: "--capture", range: 1...100_000)
        }
        if let churn = a.value("--token-churn") {
            guard o.target == nil else {
                throw UsageError("--token-churn: only the embedded gateway can churn tokens, not with --target")
            }
            do { _ = try GatewayConfiguration.parse(["--token-churn=" + churn]) } catch { throw UsageError(error.message) }
            o.tokenChurn = churn
        }
        options = o
    }

    public func run() -> Int32 {
        RunExecution(options: options).execute()
    }
}

/// Set by the SIGINT handler during a run: the run ends early and still writes every file.
/// A global because a C signal handler cannot capture context; an Atomic, so it is safe to touch from it.
let interruptRequested = Atomic<Bool>(false)

/// Clears ``interruptRequested`` and lets Ctrl-C set it for the run about to start (a second Ctrl-C while
/// the results are being written ends the process at once). Returns the handler to put back afterwards.
func catchInterrupts() -> __sighandler_t? {
    interruptRequested.store(false, ordering: .relaxed)
    let previous = signal(SIGINT) { _ in
        if interruptRequested.exchange(true, ordering: .relaxed) { _exit(130) }
    }
    // A parent may have started us with SIGINT blocked (posix_spawn inherits the mask); Ctrl-C must work.
    var unblock = sigset_t()
    sigemptyset(&unblock)
    sigaddset(&unblock, SIGINT)
    pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    return previous
}

/// One `pushbench run`: input checks (exit 2), the embedded gateway, the load run per encoder, the
/// results folder, the printout.
struct RunExecution {
    let options: RunOptions

    /// A bad input (exit 2) or an unreachable target (exit 3), with the message to print.
    struct Failure: Error {
        var status: Int32
        var message: String
    }

    func execute() -> Int32 {
        do {
            let (template, tokens, limit) = try loadInputs()
            if options.encoders.count > 1 {
                // Several encoders: interleaved rounds and a comparison (EncoderComparisonRun.swift).
                return try EncoderComparisonExecution(run: self).execute(template: template, tokens: tokens, limit: limit)
            }
            var status: Int32 = 0
            for encoder in options.encoders {
                let label = options.encoders.count > 1 ? "\(options.label)-\(encoder)" : options.label
                status = try runOnce(encoder: EncoderVariant(rawValue: encoder)!, label: label, template: template,
                                     tokens: tokens, limit: limit)
                if status != 0 || interruptRequested.load(ordering: .relaxed) { break }
            }
            return status
        } catch {
            printError("pushbench run: \(error.message)")
            return error.status
        }
    }

    /// The payload template, the tokens and the size limit, or exit 2 naming the file, line and reason.
    /// A template that can exceed the limit still loads: each request over it is counted PayloadTooLarge
    /// and not sent (or sent with --send-oversize), as the run's contract says.
    private func loadInputs() throws(Failure) -> (PayloadTemplate, DeviceTokens, Int) {
        let tokens: DeviceTokens
        switch options.tokens {
        case .synthetic(let n):
            tokens = DeviceTokens(synthetic: n, seed: options.seed)
        case .file(let path):
            let kind: DeviceTokens.Kind = options.pushProtocol == "fcm" ? .fcm : .apns
            do { tokens = try DeviceTokens(path: path, kind: kind) } catch { throw Failure(status: 2, message: error.description) }
            guard tokens.count > 0 else { throw Failure(status: 2, message: "\(path): no device tokens in the file") }
        }
        let proto = PushProtocol(rawValue: options.pushProtocol)!
        let pushType = APNsPushType(rawValue: options.pushType) ?? .alert
        let limit = PayloadLimits.limit(for: proto, pushType: pushType)
        do throws(TemplateError) {
            let template = try PayloadTemplate.forRun(path: options.payloadFile, protocol: proto, pushType: pushType,
                                                      maxTokenLength: max(64, tokens.maxLength),
                                                      allowOversize: true)
            return (template, tokens, limit)
        } catch {
            throw Failure(status: 2, message: error.description)
        }
    }

    /// Where to connect: (numeric host, port, authority).
    /// Where the run sends: `--target` resolved to a numeric address, or the embedded gateway started on
    /// a free loopback port (the caller stops it when the run ends).
    func startTarget() throws(Failure) -> (host: String, port: Int, authority: String, gateway: EmbeddedGateway?) {
        if let target = options.target {
            let (host, port, authority) = try resolveTarget(target)
            return (host, port, authority, nil)
        }
        let gatewayConfig: GatewayConfiguration
        do { gatewayConfig = try GatewayConfiguration.parse(options.embeddedGatewayArguments) } catch {
            throw Failure(status: 2, message: "--gateway-arg: \(error.message)")
        }
        let gateway: EmbeddedGateway
        do { gateway = try EmbeddedGateway.start(gatewayConfig) } catch {
            throw Failure(status: 3, message: "cannot start the embedded gateway: \(error)")
        }
        return (gateway.host, gateway.port, "\(gateway.host):\(gateway.port)", gateway)
    }

    func resolveTarget(_ url: String) throws(Failure) -> (String, Int, String) {
        if url.hasPrefix("https://") {
            throw Failure(status: 2, message: "--target: '\(url)': TLS is not supported yet; use http:// (h2c, prior knowledge)")
        }
        var rest = Substring(url.dropFirst("http://".count))
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        var host: Substring, portText: Substring?
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            portText = after.hasPrefix(":") ? after.dropFirst() : nil
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
            portText = nil
        }
        guard !host.isEmpty else { throw Failure(status: 2, message: "--target: '\(url)' has no host") }
        let port: Int
        if let portText {
            guard let p = Int(portText), p > 0 && p < 65536 else {
                throw Failure(status: 2, message: "--target: '\(url)': '\(portText)' is not a port")
            }
            port = p
        } else {
            port = 80
        }
        let authority = String(rest)
        // The transport connects to numeric addresses; resolve a name once, before any traffic.
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(String(host), nil, &hints, &list)
        guard rc == 0, let first = list else {
            throw Failure(status: 3, message: "--target: cannot resolve '\(host)': \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(first.pointee.ai_addr, first.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0,
                          NI_NUMERICHOST) == 0 else {
            throw Failure(status: 3, message: "--target: cannot resolve '\(host)'")
        }
        let numeric = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return (numeric, port, authority)
    }

    private func runOnce(encoder: EncoderVariant, label: String, template: PayloadTemplate, tokens: DeviceTokens,
                         limit: Int) throws(Failure) -> Int32 {
        let (host, port, authority, gateway) = try startTarget()
        defer { gateway?.stop() }

        var config = options.loadConfiguration(host: host, port: port, authority: authority, template: template,
                                               tokens: tokens, limit: limit)
        config.encoder = encoder

        var display = ProgressDisplay(quiet: options.quiet, json: options.json, warmupSeconds: options.warmupSeconds)
        let previous = catchInterrupts()
        defer { signal(SIGINT, previous) }
        let result: LoadResult
        do {
            result = try LoadRun.run(config, progress: { snapshot, elapsed in display.show(snapshot, elapsed: elapsed) },
                                     shouldStop: { interruptRequested.load(ordering: .relaxed) })
        } catch {
            display.finish()
            throw Failure(status: error.unreachable ? 3 : 1,
                          message: error.unreachable ? "target unreachable: \(error.description)" : error.description)
        }
        display.finish()
        let gatewayStats = gateway?.stop()
        if result.tokensExhausted {
            printError("pushbench run: every token was answered as gone (\(result.stats.pruned.count) pruned); the run stopped early")
        }

        let record = makeRecord(result, config: config, label: label, gatewayStats: gatewayStats)
        let folder: URL
        do {
            folder = try ResultsWriter.write(record, root: URL(fileURLWithPath: options.outputRoot))
        } catch {
            throw Failure(status: 1, message: "cannot write the results: \(error)")
        }
        if options.capture != nil, let g = gatewayStats {
            let file = folder.appendingPathComponent("capture.json")
            do { try Data((g.fcm.captureJSON + "\n").utf8).write(to: file) } catch {
                throw Failure(status: 1, message: "cannot write \(file.path): \(error)")
            }
        }
        if options.json {
            printOut(ResultsWriter.summaryJSON(record, runID: folder.lastPathComponent).render())
        } else if !options.quiet {
            printSummary(record, result: result, folder: folder)
        }
        return 0
    }

    func makeRecord(_ r: LoadResult, config: LoadConfiguration, label: String, gatewayStats: GatewayStats?) -> RunRecord {
        var extra: [(String, JSONValue)] = [
            ("warmup_s", .double(options.warmupSeconds)),
            ("tokens", .int(Int64(config.tokens.count))),
            ("payload", .string(options.payloadFile ?? "default")),
            ("retry", .int(Int64(options.retries))),
            ("send_oversize", .bool(options.sendOversize)),
            ("apns_id", .bool(!options.noApnsID)),
        ]
        if let n = options.requests { extra.insert(("requests", .int(Int64(n))), at: 0) }
        let runConfig = RunConfig(
            target: options.target ?? "embedded", protocolName: options.pushProtocol, rps: config.rate,
            durationSeconds: options.requests == nil ? options.durationSeconds : nil, connections: options.connections,
            streams: options.streams, threads: options.threads, encoder: config.encoder.rawValue, extra: extra)
        var record = RunRecord(label: label, startedAt: r.measuredStart, config: runConfig, version: PushbenchVersion.current)
        record.counts = Self.counts(r.measured)
        record.measuredSeconds = r.measuredSeconds
        record.latency = r.latency
        record.serviceTime = r.serviceTime
        record.intervals = r.intervals
        record.cpuUserSeconds = r.stats.cpuUser
        record.cpuSystemSeconds = r.stats.cpuSystem
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        record.maxRSSBytes = Int64(usage.ru_maxrss) * 1024
        record.interrupted = r.interrupted
        let m = r.measured, w = r.warmup
        var more: [(String, JSONValue)] = [
            ("warmup", Self.counts(w).json),
            ("accounting", .object([
                ("consistent", .bool(m.check() && w.check())),
                ("retries", .int(Int64(m.retries + w.retries))),
                ("not_sent", .int(Int64(m.notSent))),
                ("oversize_not_sent", .int(Int64(m.oversizeNotSent))),
            ])),
            ("backlog", .object([("max", .int(Int64(r.stats.maxBacklog))), ("blocked", .int(Int64(r.stats.blocked)))])),
            ("in_flight_max", .int(Int64(r.stats.maxInFlight))),
            ("connections", .object([
                ("opened", .int(Int64(r.stats.connections.opened))), ("goaways", .int(Int64(r.stats.connections.goaways))),
                ("lost", .int(Int64(r.stats.connections.lost))), ("connect_failures", .int(Int64(r.stats.connections.connectFailures))),
                ("peer_max_concurrent_streams", r.stats.connections.peerMaxStreams.map { .int(Int64($0)) } ?? .null),
            ])),
            ("cpu_process", .object([
                ("user_s", .double(Self.seconds(usage.ru_utime))), ("sys_s", .double(Self.seconds(usage.ru_stime))),
            ])),
            // What the host took that the percentiles cannot show: read p99 beside these.
            ("machine", .object([
                ("cpus", .int(Int64(sysconf(Int32(_SC_NPROCESSORS_ONLN))))),
                ("load_average_1m_at_start", r.loadAverageAtStart.map { .double(($0 * 100).rounded() / 100) } ?? .null),
                ("steal_ms", r.stealSeconds.map { .double(($0 * 1e6).rounded() / 1e3) } ?? .null),
                ("driver_involuntary_switches", .int(Int64(r.stats.involuntarySwitches))),
            ])),
        ]
        if options.tokenChurn != nil {
            more.append(("pruned_tokens", .int(Int64(r.stats.pruned.count))))
            more.append(("tokens_exhausted", .bool(r.tokensExhausted)))
        }
        if let g = gatewayStats {
            let clientAttempts = Int64(m.sent + w.sent + m.retries + w.retries)
            let clientAnswered = Int64(m.completed + w.completed)
            var byStatus: [(String, JSONValue)] = []
            for k in g.byStatus.keys.sorted() { byStatus.append((String(k), .int(Int64(g.byStatus[k]!)))) }
            var byReason: [(String, JSONValue)] = []
            for k in g.byReason.keys.sorted() { byReason.append((k, .int(Int64(g.byReason[k]!)))) }
            more.append(("gateway", .object([
                ("received", .int(Int64(g.requests))), ("by_status", .object(byStatus)), ("by_reason", .object(byReason)),
                ("connections_total", .int(Int64(g.connectionsTotal))), ("goaways", .int(Int64(g.goaways))),
                ("drops", .int(Int64(g.drops))), ("bytes_in", .int(Int64(g.bytesIn))),
            ] + (g.fcm.isEmpty ? [] : [("fcm", Self.fcmSection(g.fcm))]))))
            // Every response the client counted was received by the gateway, and the gateway received no
            // request the client did not send: answered <= received <= attempts.
            more.append(("reconciliation", .object([
                ("client_attempts", .int(clientAttempts)), ("client_answered", .int(clientAnswered)),
                ("gateway_received", .int(Int64(g.requests))),
                ("consistent", .bool(clientAnswered <= Int64(g.requests) && Int64(g.requests) <= clientAttempts)),
            ] + (g.fcm.isEmpty ? [] : Self.fcmReconciliation(g.fcm, m, w)))))
        }
        record.extra = more
        return record
    }

    /// summary.json `gateway.fcm`: the FCM route's counters (the captured pushes go to capture.json).
    static func fcmSection(_ f: FCMStats) -> JSONValue {
        var byCode: [(String, JSONValue)] = []
        for k in f.byCode.keys.sorted() { byCode.append((k, .int(Int64(f.byCode[k]!)))) }
        return .object([
            ("requests", .int(Int64(f.requests))), ("messages_accepted", .int(Int64(f.messagesAccepted))),
            ("validate_only", .int(Int64(f.validatedOnly))), ("topic_messages", .int(Int64(f.topicMessages))),
            ("device_deliveries", .int(Int64(f.deviceDeliveries))), ("fanout_pending", .int(Int64(f.fanoutPending))),
            ("by_code", .object(byCode)), ("churned_tokens", .int(Int64(f.churnedTokens))),
            ("churn_refusals", .int(Int64(f.churnRefusals))), ("captured", .int(Int64(f.captured.count))),
        ])
    }

    /// FCM messages the gateway accepted against the client's 200s: every 200 the client counted is an
    /// accepted message, and the gateway accepted none the client did not send (unanswered requests may
    /// have been accepted): ok <= accepted <= ok + unanswered. Left out when no request took the FCM route
    /// (an APNs run with token churn).
    static func fcmReconciliation(_ f: FCMStats, _ m: Tally, _ w: Tally) -> [(String, JSONValue)] {
        guard f.requests > 0 else { return [] }
        let ok = Int64(m.byStatus[200] + w.byStatus[200])
        let unanswered = Int64(m.unfinished + w.unfinished + m.transportErrors + w.transportErrors)
        let accepted = Int64(f.messagesAccepted + f.validatedOnly)
        return [
            ("fcm_messages_accepted", .int(accepted)), ("client_ok", .int(ok)),
            ("fcm_consistent", .bool(ok <= accepted && accepted <= ok + unanswered)),
        ]
    }

    static func counts(_ t: Tally) -> RequestCounts {
        var c = RequestCounts()
        c.sent = Int64(t.sent); c.completed = Int64(t.completed); c.succeeded = Int64(t.succeeded)
        c.failed = Int64(t.failed); c.transportErrors = Int64(t.transportErrors); c.unfinished = Int64(t.unfinished)
        c.byStatus = t.statusCounts.mapValues { Int64($0) }
        c.byReason = t.reasonCounts.mapValues { Int64($0) }
        return c
    }

    static func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }

    private func printSummary(_ record: RunRecord, result r: LoadResult, folder: URL) {
        let c = record.counts
        let f = ProgressDisplay.fixed
        let target = record.config.rps.map { "target \($0)" } ?? "closed loop"
        printOut("\(folder.path)\(record.interrupted ? "  (interrupted)" : "")")
        printOut("  requests   sent \(c.sent)  ok \(c.succeeded)  failed \(c.failed)  transport errors \(c.transportErrors)"
                 + "  unfinished \(c.unfinished)\(r.measured.notSent > 0 ? "  not sent \(r.measured.notSent)" : "")")
        if r.warmup.sent > 0 {
            printOut("  warm-up    sent \(r.warmup.sent)  ok \(r.warmup.succeeded) in the first \(f(options.warmupSeconds, 1)) s,"
                     + " kept out of every figure here")
        }
        if options.tokenChurn != nil {
            printOut("  tokens     pruned \(r.stats.pruned.count)\(r.tokensExhausted ? " (all: the run stopped)" : "")")
        }
        printOut("  throughput \(f(record.achievedRPS, 1)) rps (\(target))  backlog max \(r.stats.maxBacklog)"
                 + "  client cpu \(f(record.cpuUserSeconds + record.cpuSystemSeconds, 2)) s")
        for (name, h) in [("latency   ", record.latency), ("service   ", record.serviceTime)] {
            let ms = { (v: Int64) in ProgressDisplay.milliseconds(Int(v)) }
            printOut("  \(name) p50 \(ms(h.valueAtPercentile(50)))  p90 \(ms(h.valueAtPercentile(90)))"
                     + "  p99 \(ms(h.valueAtPercentile(99)))  p99.9 \(ms(h.valueAtPercentile(99.9)))  max \(ms(h.max))")
        }
        // The host's share of the tail, where a VM reports it: read p99 beside it.
        if let steal = r.stealSeconds {
            printOut("  machine    steal \(f(steal * 1000, 0)) ms during the run  driver preemptions \(r.stats.involuntarySwitches)"
                     + (r.loadAverageAtStart.map { "  load \(f($0, 2)) at start" } ?? ""))
        }
    }
}

extension RunOptions {
    /// The load generator's configuration for these options against `host:port` (the encoder is left at
    /// its default; `pushbench run` and the encoder A/B set it per run or per round).
    func loadConfiguration(host: String, port: Int, authority: String, template: PayloadTemplate,
                           tokens: DeviceTokens, limit: Int) -> LoadConfiguration {
        var config = LoadConfiguration(host: host, port: port, authority: authority, template: template, tokens: tokens)
        config.pushProtocol = PushProtocol(rawValue: pushProtocol)!
        if case .perSecond(let n) = rate { config.rate = n } else { config.rate = nil }
        config.durationNs = UInt64(durationSeconds * 1e9)
        config.warmupNs = UInt64(warmupSeconds * 1e9)
        config.requests = requests
        config.connections = connections
        config.streams = streams
        config.threads = threads
        config.payloadLimit = limit
        config.sendOversize = sendOversize
        config.sendsApnsID = !noApnsID
        config.topic = topic
        config.pushType = pushType
        config.priority = priority
        config.expiration = expiration
        config.collapseID = collapseID
        config.project = project
        config.retries = retries
        config.seed = seed
        config.pruneGoneTokens = tokenChurn != nil
        if let q = paceQuantumSeconds { config.pacingQuantumNs = UInt64((q * 1e9).rounded()) }
        return config
    }
}
