import PushCredentials
import PushPayload
import PushVocabulary

/// What the gateway answers to one request, decided by ``GatewayStateMachine``.
public struct GatewayResponse: Equatable, Sendable {
    /// HTTP status.
    public var status: UInt16
    /// The error reason (nil for 200). The body is `{"reason":"…"}`, plus `"timestamp"` for 410.
    public var reason: APNsReason?
    /// The `apns-id` response header: the request's own, or a generated one.
    public var apnsID: APNsID
    /// For 410: when the token was last confirmed invalid, in milliseconds since the epoch.
    var timestampMillis: Int64?
    /// After this response, send GOAWAY with `{"reason":"…"}` debug data and take no new stream.
    var goaway: APNsReason?
    /// After this response, send SETTINGS with this SETTINGS_MAX_CONCURRENT_STREAMS.
    public var maxConcurrentStreams: UInt32?
    /// For a request on the FCM route: the FCM answer (its status is `status`; `reason` is nil).
    var fcm: FCMResponse?

    /// A response.
    public init(status: UInt16, reason: APNsReason? = nil, apnsID: APNsID, timestampMillis: Int64? = nil,
                goaway: APNsReason? = nil, maxConcurrentStreams: UInt32? = nil) {
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.timestampMillis = timestampMillis
        self.goaway = goaway
        self.maxConcurrentStreams = maxConcurrentStreams
    }
}

/// What ``GatewayStateMachine/decide(_:connection:now:response:)`` decided; the push response itself is
/// written to the caller's ``GatewayResponse`` rather than carried here, so it is not copied per request.
public enum GatewayDecision: Equatable, Sendable {
    /// Answer now with the response written.
    case respond
    /// Answer with the response written after `delayNanos`.
    case respondLater(delayNanos: UInt64)
    /// Answer `GET /stats`.
    case stats
    /// Answer `GET /metrics`.
    case metrics
    /// Answer the OAuth2 token endpoint with `status` and the JSON `body`.
    case oauthToken(status: UInt16, body: String)
    /// Answer `POST /pipeline/arrivals` (a gateway matching a pipeline run's pushes).
    case pipelineArrivals
    /// Close the TCP connection abruptly.
    case drop
}

/// Where a request goes, by its method and path (``GatewayStateMachine/route(method:path:)``).
enum GatewayRoute: Sendable, Equatable {
    /// `POST /3/device/<token>` and every path no other route takes: the APNs provider API.
    case apns
    /// `/v1/…`: the FCM HTTP v1 API.
    case fcm
    /// `GET /stats`.
    case stats
    /// `GET /metrics`.
    case metrics
    /// `/token` and each `--fcm-token-path`: the OAuth2 token endpoint FCM senders get access tokens from.
    case oauthToken
    /// `POST /pipeline/arrivals` on a gateway started with `--correlate-prefix`: the pushes matched since
    /// the last call, for a pipeline run given `--egress-url`.
    case pipelineArrivals
}

/// Per-connection state the state machine keeps (owned by the connection, passed `inout`).
public struct GatewayConnectionState: Sendable {
    /// Push streams seen on this connection.
    public var streams = 0
    /// The SETTINGS_MAX_CONCURRENT_STREAMS last advertised.
    var advertisedMaxStreams: UInt32
    /// Whether a GOAWAY was decided already.
    var goawayDecided = false
    /// Monotonic time (ns) at which a timed GOAWAY is due, if that behaviour is on.
    var goawayDeadline: UInt64?
    /// The connection's provider tokens (`--apns-auth token`).
    var tokens: ProviderTokenConnectionState?
    /// The connection's client certificate (`--apns-auth cert`).
    var certificate: ClientCertificateIdentity?
    /// Whether the stream limit is still 1 because no valid provider token has come yet.
    var awaitingFirstToken = false
}

/// The APNs provider API as a state machine: takes a parsed request and the time, returns an action.
/// No I/O and no clock read: its answers depend on its inputs alone (the wall-clock times it writes come
/// from `now` through the ``GatewayClock`` it was given). No allocation for a valid request in steady
/// state; one per event loop (not thread-safe).
///
/// Validation follows Pushy's mock (docs/protocols.md "Order of checks"): duplicate headers → apns-id → method →
/// topic (disallowed topics too) → collapse id → expiration → priority → push type → path and token →
/// unregistered token → token not for the topic → authentication → empty payload → size → JSON object;
/// then the behaviours (rate limit, injected failures, latency).
///
/// A class, not a struct: it is large (the configuration, the FCM engine), and its requests' helpers
/// would otherwise copy all of it per request.
///
/// ```swift
/// let machine = GatewayStateMachine(configuration: config, counters: counters)
/// var conn = machine.connectionOpened(now: now)
/// switch machine.handle(request, connection: &conn, now: now) { case .respond(let r): … }
/// ```
public final class GatewayStateMachine {
    /// The configuration in force.
    public let configuration: GatewayConfiguration
    /// A copy of `configuration` at a fixed address for the per-request checks: passed as a value, the
    /// whole configuration would be copied onto the stack for every request.
    private let rules: UnsafeMutablePointer<GatewayConfiguration>
    /// The last body found to be a JSON object (most load tests send one payload throughout).
    private var bodies = JSONObjectMemo()
    /// This loop's counters (read by /stats from any thread).
    let counters: GatewayCounters
    private var random: SeededRandom
    /// Draws the generated apns-ids: from `--seed` when given, else from a seed random per start.
    private var ids: SeededRandom
    private var buckets: TokenBuckets?
    private let clock: GatewayClock
    private let failureTotal: Double
    private let latencyOn: Bool
    private let tokenAuth: ProviderTokenAuthenticator?
    /// The FCM route (`/v1/projects/…`) and token churn, see FCM/FCMEngine.swift.
    var fcm: FCMEngine

    /// A state machine for event loop number `loopIndex` (each loop draws its own random stream from
    /// the seed). `clock` maps request times to the wall clock of 410 timestamps; the gateway's start
    /// is its anchor (unregistered tokens were last seen before it).
    public init(configuration: GatewayConfiguration, loopIndex: Int = 0, counters: GatewayCounters = GatewayCounters(),
                clock: GatewayClock = .now()) {
        self.configuration = configuration
        rules = .allocate(capacity: 1)
        rules.initialize(to: configuration)
        self.counters = counters
        random = SeededRandom(seed: mix(configuration.seed &+ UInt64(loopIndex) &* 0x9E37_79B9))
        let idSeed = configuration.idSeed ?? UInt64.random(in: .min ... .max)
        ids = SeededRandom(seed: mix(idSeed ^ 0x1D5_1D5_1D5 &+ UInt64(loopIndex) &* 0x9E37_79B9))
        buckets = configuration.tokenRateLimit.map { TokenBuckets(limit: $0) }
        self.clock = clock
        failureTotal = configuration.failures.reduce(0) { $0 + $1.fraction }
        latencyOn = configuration.latency != .none
        tokenAuth = configuration.auth.mode == .token ? ProviderTokenAuthenticator(configuration.auth) : nil
        fcm = FCMEngine(rules: rules, loopIndex: loopIndex, counters: counters.fcm, clock: clock)
    }

    deinit {
        rules.deinitialize(count: 1)
        rules.deallocate()
    }

    /// A new connection: counts it and returns its state. `certificate` is the client certificate the
    /// TLS handshake received and `verificationError` why it did not verify against `--client-ca` (nil
    /// when it did); they matter with `--apns-auth cert`.
    public func connectionOpened(now: UInt64, certificate: X509Certificate? = nil,
                                 verificationError: String? = nil) -> GatewayConnectionState {
        counters.connectionOpened()
        var state = GatewayConnectionState(advertisedMaxStreams: configuration.maxConcurrentStreams)
        if let s = configuration.goawayAfterSeconds { state.goawayDeadline = now &+ UInt64(s * 1e9) }
        switch configuration.auth.mode {
        case .off: break
        case .token:
            state.tokens = tokenAuth!.newConnection()
            // As APNs: one stream until a request with a valid provider token has come.
            state.advertisedMaxStreams = 1
            state.awaitingFirstToken = true
        case .cert:
            state.certificate = ClientCertificateIdentity.evaluate(certificate, verificationError: verificationError,
                                                                   configuration: configuration.auth)
        }
        return state
    }

    /// SETTINGS_MAX_CONCURRENT_STREAMS a new connection starts with: 1 with provider tokens, until the
    /// first valid one (as APNs); otherwise `--max-streams`.
    var initialMaxConcurrentStreams: UInt32 {
        configuration.auth.mode == .token ? 1 : configuration.maxConcurrentStreams
    }

    /// A connection closed.
    func connectionClosed() { counters.connectionClosed() }

    /// The timed GOAWAY: call when `connection.goawayDeadline` has passed; returns the GOAWAY reason to
    /// send, or nil if one was already decided.
    func goawayDue(connection: inout GatewayConnectionState, now: UInt64) -> APNsReason? {
        guard let deadline = connection.goawayDeadline, now >= deadline, !connection.goawayDecided else { return nil }
        connection.goawayDecided = true
        counters.goawaySent()
        return configuration.goawayReason
    }

    /// The route of a request with `method` and `path`.
    @inline(__always)
    func route(method: UnsafeRawBufferPointer?, path: UnsafeRawBufferPointer?) -> GatewayRoute {
        guard let path else { return .apns }
        if hasPrefix(path, "/v1/") { return .fcm }
        if let method, equals(method, "GET") {
            if equals(path, "/stats") { return .stats }
            if equals(path, "/metrics") { return .metrics }
        }
        if FCMEngine.isTokenPath(path, in: configuration.fcm.tokenPaths) { return .oauthToken }
        if configuration.correlatePrefix != nil, equals(path, "/pipeline/arrivals") { return .pipelineArrivals }
        return .apns
    }

    /// Decides the answer to `request`. The push response is written to `response` (all of it: nothing
    /// of a previous request is left) rather than returned, so it is not copied per request.
    public func decide(_ request: borrowing GatewayRequest, connection: inout GatewayConnectionState,
                                now: UInt64, response: inout GatewayResponse) -> GatewayDecision {
        let route = route(method: request.method, path: request.path)
        if route == .stats { return .stats }
        if route == .metrics { return .metrics }
        if route == .pipelineArrivals { return .pipelineArrivals }
        if route == .oauthToken {
            let (status, body) = fcm.tokenEndpoint(request, nowMillis: clock.wallMillis(at: now))
            return .oauthToken(status: status, body: body)
        }
        counters.countRequest(bodyBytes: request.body.count)
        connection.streams += 1

        if let n = configuration.dropAfterStreams, connection.streams >= n { return drop() }
        if configuration.dropRate > 0, random.unit() < configuration.dropRate { return drop() }

        let id: APNsID
        if let text = request.apnsID, let valid = APNsID(validating: text) {
            id = valid
        } else {
            id = APNsID(random: ids.next(), ids.next())
        }
        response = GatewayResponse(status: 200, apnsID: id)
        if route == .fcm {
            let answer = fcm.decide(request, random: &random, now: now)
            response.status = answer.status
            response.fcm = answer
        } else if let reason = validate(request, connection: &connection, now: now) {
            response.status = reason.status
            response.reason = reason
            if reason == .unregistered {
                let h = tokenHash(token(request.path!))
                response.timestampMillis = clock.wallMillis - Int64(h % (30 * 86_400_000))
            }
        } else if configuration.fcm.tokenChurnPerSecond > 0,
                  let churnedAt = fcm.churnedAt(hash: tokenHash(token(request.path!)), now: now) {
            response.status = 410
            response.reason = .unregistered
            response.timestampMillis = churnedAt
        } else if buckets != nil, !takeToken(hash: tokenHash(token(request.path!)), now: now) {
            response.status = 429
            response.reason = .tooManyRequests
        } else if failureTotal > 0 {
            var u = random.unit()
            let failures = configuration.failures
            for i in 0..<failures.count {
                let f = failures[i]
                if u < f.fraction {
                    response.status = f.reason.status
                    response.reason = f.reason
                    if f.reason == .unregistered || f.reason == .expiredToken { response.timestampMillis = clock.wallMillis(at: now) }
                    break
                }
                u -= f.fraction
            }
        }
        counters.countResponse(status: response.status, reasonCode: response.reason?.code)

        if connection.awaitingFirstToken, connection.tokens?.hasValidToken == true {
            connection.awaitingFirstToken = false
            connection.advertisedMaxStreams = configuration.maxConcurrentStreams
            response.maxConcurrentStreams = configuration.maxConcurrentStreams
        }
        if configuration.dropStreamsOnError {
            if response.status != 200, connection.advertisedMaxStreams != 1 {
                connection.advertisedMaxStreams = 1
                response.maxConcurrentStreams = 1
            } else if response.status == 200, connection.advertisedMaxStreams != configuration.maxConcurrentStreams {
                connection.advertisedMaxStreams = configuration.maxConcurrentStreams
                response.maxConcurrentStreams = configuration.maxConcurrentStreams
            }
        }
        if !connection.goawayDecided {
            if let n = configuration.goawayAfterStreams, connection.streams >= n {
                response.goaway = configuration.goawayReason
            } else if let deadline = connection.goawayDeadline, now >= deadline {
                response.goaway = configuration.goawayReason
            }
            if response.goaway != nil {
                connection.goawayDecided = true
                counters.goawaySent()
            }
        }
        if latencyOn {
            let delay = configuration.latency.sample(&random)
            if delay > 0 {
                counters.countDelay(nanos: delay)
                return .respondLater(delayNanos: delay)
            }
        }
        return .respond
    }

    private func takeToken(hash: UInt64, now: UInt64) -> Bool {
        buckets!.take(hash: hash, now: now)
    }

    private func drop() -> GatewayDecision {
        counters.connectionDropped()
        return .drop
    }

    /// The token part of an APNs path (after `/3/device/`).
    @inline(__always)
    private func token(_ path: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: path[10...])
    }

    /// The first reason `request` is invalid for, in Pushy's order, or nil when it is valid.
    @inline(__always)
    private func validate(_ request: borrowing GatewayRequest, connection: inout GatewayConnectionState, now: UInt64) -> APNsReason? {
        let authorization = request.authorization
        let topic = request.topic
        if let reason = Self.validateAPNs(request, configuration: rules, checkPath: true,
                                          topicFromCertificate: connection.certificate?.suppliesTopic == true, authenticate: {
            authenticate(authorization, topic: topic, &connection, now: now)
        }) { return reason }
        // The last check: a body that is not a JSON object. Apple documents no reason for it; PayloadEmpty
        // is the closest of its strings (clients turn unknown reasons into errors), see docs/gateway.md.
        return bodies.isObject(request.body) ? nil : .payloadEmpty
    }

    /// The authentication step: the connection's certificate verdict (for `topic`, the request's
    /// `apns-topic`), or its provider token's.
    @inline(__always)
    private func authenticate(_ authorization: UnsafeRawBufferPointer?, topic: UnsafeRawBufferPointer?,
                              _ connection: inout GatewayConnectionState, now: UInt64) -> APNsReason? {
        if connection.certificate != nil { return connection.certificate!.verdict(topic: topic) }
        guard let tokenAuth else { return nil }
        return tokenAuth.check(authorization, &connection.tokens!, now: now,
                               wallSeconds: clock.wallMillis(at: now) / 1000)
    }

    /// APNs' checks of `request` under `configuration`; with `checkPath` false the path, token and
    /// unregistered-token checks are skipped (the FCM route checks the APNs request it builds this way).
    /// Whether the body is a JSON object, the last check, is the caller's: the state machine asks its
    /// ``JSONObjectMemo``, and the FCM route writes a JSON object by construction. `authenticate` runs between the path and token checks and the payload checks, as APNs orders
    /// them; `topicFromCertificate` says a missing `apns-topic` is the client certificate's.
    @inline(__always)
    static func validateAPNs(_ request: borrowing GatewayRequest, configuration rules: UnsafePointer<GatewayConfiguration>,
                             checkPath: Bool, topicFromCertificate: Bool = false,
                             authenticate: () -> APNsReason? = { nil }) -> APNsReason? {
        if request.hasDuplicateHeader { return .duplicateHeaders }
        if let id = request.apnsID, APNsID(validating: id) == nil { return .badMessageId }
        guard let method = request.method, equals(method, "POST") else { return .methodNotAllowed }
        if let topic = request.topic {
            if topic.isEmpty { return .badTopic }
            if !isVisibleASCII(topic) { return .badTopic }
            if !rules.pointee.disallowedTopics.isEmpty, rules.pointee.isDisallowed(topic: topic) { return .topicDisallowed }
        } else if rules.pointee.requireTopic && !topicFromCertificate {
            return .missingTopic
        }
        if let collapse = request.collapseID, collapse.count > 64 { return .badCollapseId }
        if let expiration = request.expiration {
            guard (1...19).contains(expiration.count) else { return .badExpirationDate }
            for c in expiration where c < 0x30 || c > 0x39 { return .badExpirationDate }
        }
        if let priority = request.priority {
            guard equals(priority, "10") || equals(priority, "5") || equals(priority, "1") else { return .badPriority }
        }
        var isVoIP = false
        if let pushType = request.pushType {
            guard let kind = APNsPushType(headerValue: pushType) else { return .invalidPushType }
            isVoIP = kind == .voip
        }
        if checkPath {
            guard let path = request.path, hasPrefix(path, "/3/device/") else { return .badPath }
            let token = UnsafeRawBufferPointer(rebasing: path[10...])
            if token.isEmpty { return .missingDeviceToken }
            guard rules.pointee.tokenLength.contains(token.count), token.count & 1 == 0, isHex(token) else { return .badDeviceToken }
            if rules.pointee.unregisteredFraction > 0 || rules.pointee.checksTokenTopics {
                let hash = tokenHash(token)
                if rules.pointee.isUnregistered(hash: hash) { return .unregistered }
                if rules.pointee.checksTokenTopics,
                   rules.pointee.isNotForTopic(token: token, hash: hash, topic: request.topic) { return .deviceTokenNotForTopic }
            }
        }
        if let reason = authenticate() { return reason }
        let body = request.body
        if body.isEmpty { return .payloadEmpty }
        if body.count > PayloadLimits.apns(isVoIP ? .voip : .alert) { return .payloadTooLarge }
        return nil
    }
}
