import PushPayload
import PushTransport
import PushVocabulary

/// Everything a load run needs, resolved and validated (the CLI builds it from `RunOptions`).
///
/// ```swift
/// var config = LoadConfiguration(host: "127.0.0.1", port: gateway.port, template: .defaultAPNs(),
///                                tokens: DeviceTokens(synthetic: 1000))
/// config.rate = 50_000
/// config.durationNs = 10_000_000_000
/// let result = try LoadRun.run(config)
/// ```
public struct LoadConfiguration: Sendable {
    /// Numeric address of the target (IPv4 or IPv6).
    public var host: String
    /// Target port.
    public var port: Int
    /// `:authority` sent with every request (host:port by default).
    var authority: String
    /// `apns` (POST /3/device/<token>) or `fcm` (POST /v1/projects/<project>/messages:send).
    public var pushProtocol: PushProtocol = .apns
    /// Requests per second for all threads together; nil is closed loop (`--rps max`).
    public var rate: Int? = 1_000
    /// The measured phase's rate schedule when the rate changes over time (`--stages`, `--rps A..B`,
    /// `--rate-file`): it replaces ``rate`` and ``durationNs``; the warm-up runs before it at its initial rate.
    public var schedule: RateSchedule?
    /// This agent's execution segment (`--segment I/N`), 0 of 1 when it runs alone: it sends the global
    /// requests g ≡ segment (mod segments) at their global intended times.
    public var segment = 0
    /// The number of agents sharing the schedule.
    public var segments = 1
    /// t0 as a wall-clock instant (`--start-at`), in ns since the Unix epoch; nil starts as soon as every
    /// driver thread is connected.
    public var startAtUnixNs: Int64?
    /// Whether a ``startAtUnixNs`` already past when the drivers are ready is kept (the requests due
    /// since then go out at once, late by as much) rather than refused.
    public var startLateOK = false
    /// Measured duration in ns (ignored when `requests` is set).
    public var durationNs: UInt64 = 10_000_000_000
    /// Warm-up in ns.
    public var warmupNs: UInt64 = 0
    /// Measured requests instead of a duration.
    public var requests: Int?
    /// Connections per driver thread.
    public var connections = 8
    /// Max concurrent streams per connection (the peer's SETTINGS may lower it).
    public var streams = 100
    /// Driver threads, each with its own event loop.
    public var threads = 1
    /// Payload encoder variant.
    public var encoder: EncoderVariant = .zerocopy
    /// The compiled payload template.
    public var template: PayloadTemplate
    /// Device tokens; request g uses token g mod count.
    public var tokens: DeviceTokens
    /// Payload size limit in bytes; larger payloads are counted PayloadTooLarge and not sent.
    public var payloadLimit = 4096
    /// Send payloads over `payloadLimit` anyway (to load-test the gateway's 413).
    public var sendOversize = false
    /// Send an `apns-id` (a random UUID, the request's {{message_id}}) with every APNs request, as aioapns
    /// does; false leaves it out (optional in the APNs API: the server makes one) (`--no-apns-id`).
    public var sendsApnsID = true
    /// `apns-topic`.
    public var topic = "com.example.pushbench"
    /// `apns-push-type`.
    public var pushType = "alert"
    /// `apns-priority`.
    public var priority: Int?
    /// `apns-expiration`.
    public var expiration: Int?
    /// `apns-collapse-id`.
    public var collapseID: String?
    /// FCM project id.
    public var project = "pushbench"
    /// APNs provider tokens (`--auth-key`): each request carries the driver's current `authorization`.
    public var providerTokens: ProviderTokenSettings?
    /// Send over HTTP/1.1 keep-alive connections, one request in flight each (`--http1`, FCM only);
    /// `streams` is then 1.
    public var http1 = false
    /// The OAuth2 access token FCM requests carry as `Bearer` (`--credentials`), refreshed during the run;
    /// nil sends `Bearer pushbench` (what a gateway without `--fcm-auth oauth` accepts).
    public var accessTokens: AccessTokenSource?
    /// Resends allowed for a request cut off by a lost connection.
    public var retries = 0
    /// Seed of message ids.
    public var seed: UInt64 = 1
    /// How long to wait for responses after the last send before counting the rest unfinished.
    var drainTimeoutNs: UInt64 = 5_000_000_000
    /// Pacing timer granularity in ns. 0 wakes the driver at every request's intended time; a larger
    /// value wakes it at most once per quantum and sends everything due. Either way latency is measured
    /// from the exact intended time, so a coarser step only adds its lateness (< one quantum) to it.
    /// Default: ``automaticPacingQuantumNs``: exact up to 20k rps per thread; above, one wakeup per 5
    /// requests of the schedule, kept within 100-200 µs (200 µs at 25k rps, 100 µs from 50k up), because
    /// each wakeup has a fixed CPU price while a vCPU left idle longer is woken later by the host; above
    /// 50k a step finer than 100 µs spends the driver's CPU on wakeups faster than it saves lateness
    /// (docs/loadgen.md "Pacing" has the measurements).
    public var pacingQuantumNs: UInt64 = LoadConfiguration.automaticPacingQuantumNs
    /// Marker for "choose the quantum from the rate".
    static let automaticPacingQuantumNs = UInt64.max
    /// The quantum in force for `rate` requests/s per thread.
    func effectiveQuantumNs(perThreadRate rate: Double) -> UInt64 {
        pacingQuantumNs == Self.automaticPacingQuantumNs ? Self.automaticQuantumNs(perThreadRate: rate) : pacingQuantumNs
    }
    /// The automatic quantum for `rate` requests/s per thread (0: a wakeup per request).
    public static func automaticQuantumNs(perThreadRate rate: Double) -> UInt64 {
        guard rate > 20_000 else { return 0 }
        return UInt64(min(200_000, max(100_000, (5e9 / rate).rounded())))
    }
    /// Stop sending to a token once it is answered as gone (APNs 410 Unregistered/ExpiredToken, FCM 404
    /// UNREGISTERED), as a well-behaved provider does; when every token is gone the run stops (results
    /// kept, ``LoadResult/tokensExhausted``). Off by default, because a gateway injecting random
    /// `Unregistered` failures (`--fail Unregistered=1%`) would otherwise prune every token; the CLI turns
    /// it on with `--token-churn`.
    public var pruneGoneTokens = false
    /// Count each driver loop's idle time, so the live counters say how busy the sending threads are
    /// (the dashboard's busy share); off by default, as it reads the clock around each wait for events.
    public var measuresBusy = false
    /// Whether the driver threads run real-time (`SCHED_FIFO`, `--realtime`): no ordinary thread preempts
    /// them. The caller checks first that the process may (``PushTransport/realtimePriorityRefusal()``).
    public var realtime = false
    /// TLS to the target (trust, client certificate, ALPN offer); nil speaks h2c with prior knowledge.
    public var tls: TLSClientContext?
    /// The name the target's certificate must match, sent as SNI when it is a DNS name (default:
    /// `host`, the numeric address).
    public var serverName: String?
    /// Bound on TCP connect plus the peer's first SETTINGS.
    var connectTimeoutMilliseconds: UInt64 = 3_000
    /// A pipeline run's front door (`pushbench pipeline --request FILE`): the method, path and headers
    /// every request carries, its body made from ``template``; nil sends APNs or FCM requests.
    public var frontDoor: FrontDoorRequest?
    /// A pipeline run's taps: the correlation prefix the body carries and where each driver thread
    /// reports its front-door answers (nil outside a pipeline run).
    public var pipeline: PipelineTap?
    /// `--log FILE`: where each driver thread queues its request records (nil: no log). The caller
    /// opens it before the run and finishes it after; the run starts its writer at t0.
    public var requestLog: RequestLog?
    /// Builds each driver thread's payload encoder; nil uses `makePayloadEncoder`. A seam for tests
    /// (``EncoderStandIn``), not a user option.
    var encoderFactory: (@Sendable (EncoderVariant, PayloadTemplate) -> any PayloadEncoder)?

    /// A configuration with the defaults of `pushbench run`.
    public init(host: String, port: Int, authority: String? = nil, template: PayloadTemplate, tokens: DeviceTokens) {
        self.host = host
        self.port = port
        self.authority = authority ?? (host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)")
        self.template = template
        self.tokens = tokens
    }
}

extension LoadConfiguration {
    /// A failed connect, naming the target (its name when TLS checks one), with a hint for a certificate.
    func describeConnectFailure(_ error: TransportError) -> String {
        let name = serverName.map { "\($0) (\(host)):\(port)" } ?? "\(host):\(port)"
        switch error.kind {
        case .certificate:
            return "\(name): TLS: \(error.message) (trust its CA with --cacert FILE, or skip the check with --insecure)"
        case .tls:
            return "\(name): TLS handshake failed: \(error.message)"
        default:
            return "\(name): \(error.message)"
        }
    }

    /// A certificate failure of a run under way, in words: the target's certificate no longer verifies
    /// (it was replaced, e.g. by a gateway restarted with a new CA), and what the run trusts.
    func describeCertificateProblem(_ error: TransportError) -> String {
        let name = serverName.flatMap { $0 == host ? nil : "\($0) (\(host)):\(port)" } ?? "\(host):\(port)"
        return "the certificate of \(name) no longer verifies (\(error.message)) against the CAs the run trusts: "
            + (tls.map { Self.describe($0.trust) } ?? "none")
    }

    private static func describe(_ trust: TLSTrust) -> String {
        switch trust {
        case .system: "the system's CA store"
        case .caFile(let path): "those in \(path) (--cacert)"
        case .certificates: "the CA the embedded gateway generated at start"
        case .insecure: "any (--insecure)"
        }
    }
}

extension LoadConfiguration {
    /// The token of global request `sequence` (g) before pruning: g mod the token count.
    @inline(__always)
    func tokenIndex(sequence: Int64) -> Int {
        Int(UInt64(bitPattern: sequence) % UInt64(tokens.count))
    }

    /// The values global request `sequence` (g) carries with token `tokenIndex`: `{{seq}}`, the message id
    /// (and the `{{uuid}}`s and `apns-id` made from it) and `{{badge}}` depend on g and the seed alone,
    /// whichever agent, thread or connection sends it, so the agents of a segmented run send what one
    /// agent would. Both connection pools build their requests' values here.
    @inline(__always)
    func requestContext(sequence: Int64, tokenIndex: Int) -> RequestContext {
        let token = tokens.token(tokenIndex)
        let messageID = PushRandom.uuid(seed: seed, index: UInt64(bitPattern: sequence))
        let badge = Int64(sequence % 99) + 1
        // Two returns, not one context given the tokens when piped: built as one, the compiler retains
        // the tokens for every request, piped or not.
        guard let pipeline else {
            return RequestContext(seq: UInt64(sequence), token: token, messageID: messageID, badge: badge)
        }
        return RequestContext(seq: UInt64(sequence), token: token, messageID: messageID, badge: badge,
                              pipelinePrefix: pipeline.prefixBytes, tokens: tokens)
    }
}

extension ConnectionStats {
    /// Counts one finished TLS handshake; the first one's parameters are kept.
    mutating func recordHandshake(_ t: TLSConnectionInfo) {
        if tls == nil {
            tls = TLSHandshakes(version: t.version, cipher: t.cipher, alpn: t.alpn, serverName: t.serverName,
                                verified: t.peerCertificate?.verified ?? false)
        }
        tls!.record(t.handshakeNanoseconds)
    }
}
