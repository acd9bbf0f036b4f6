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
    /// A file with one hex token per line.
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
    /// `--warmup` in seconds.
    public var warmupSeconds: Double = 0
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
    /// `--seed`: seed for synthetic tokens and message ids.
    public var seed: UInt64 = 1
    /// Options for the embedded gateway (`--gateway-arg`, repeatable), passed through verbatim.
    public var gatewayArguments: [String] = []

    /// The defaults.
    public init() {}
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
        .flag("--send-oversize"), .value("--seed"), .value("--gateway-arg", repeats: true),
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
      --warmup T              sent and counted separately, not in the histograms (default 0s)
      --requests N            stop after N measured requests instead of a duration
      --connections N         connections per driver thread (default 8)
      --streams N             max concurrent streams per connection, capped by the peer (default 100)
      --threads N             driver event loops (default 1)
      --encoder LIST          zerocopy, copy or foundation; a comma list runs each in turn (default zerocopy)
      --payload FILE          JSON payload template with {{seq}} {{token}} {{message_id}} {{badge}} {{uuid}} {{pad:N}}
      --tokens FILE|N         device tokens, one hex token per line, or N synthetic ones (default 1000)
      --topic T               apns-topic (default com.example.pushbench)
      --push-type T           apns-push-type (default alert)
      --priority P            apns-priority: 10, 5 or 1
      --expiration S          apns-expiration (UNIX seconds; 0 = deliver once)
      --collapse-id ID        apns-collapse-id (at most 64 bytes)
      --project ID            FCM project id (default pushbench)
      --out DIR               results root (default ./results)
      --label NAME            part of the run id (default run)
      --retry N               retry requests cut off by a lost connection up to N times (default 0)
      --send-oversize         send payloads over the size limit (to load-test 413) instead of counting them
      --seed N                seed for synthetic tokens and ids (default 1)
      --gateway-arg ARG       pass ARG to the embedded gateway (repeatable), e.g. --gateway-arg=--latency=2ms
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
        o.pushProtocol = try a.choice("--protocol", ["apns", "fcm"], default: "apns")
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
        o.warmupSeconds = try a.duration("--warmup", default: 0) ?? 0
        if a.value("--requests") != nil {
            o.requests = try a.integer("--requests", default: 0, range: 1...Int.max)
        }
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
        o.pushType = try a.choice(
            "--push-type",
            ["alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk", "widgets"],
            default: "alert")
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
        if let seed = a.value("--seed") {
            guard let s = UInt64(seed) else { throw UsageError("--seed: '\(seed)' is not a whole number") }
            o.seed = s
        }
        o.gatewayArguments = a.allValues("--gateway-arg")
        if o.target != nil && !o.gatewayArguments.isEmpty {
            throw UsageError("--gateway-arg: only applies to the embedded gateway, not with --target")
        }
        options = o
    }

    public func run() -> Int32 {
        printError("pushbench run: not yet: the load generator has not landed (options were valid)")
        return 1
    }
}
