#if canImport(Glibc)
import Glibc
#endif
import PushPayload
import PushVocabulary

/// The FCM HTTP v1 send API's decision, one per event loop (not thread-safe): checks the path and the
/// credentials of `POST /v1/projects/<project>/messages:send`, has ``FCMMessageReader`` read the body and
/// ``FCMAppleTranslator`` build and check the APNs request FCM would send for an Apple target, then
/// applies the behaviours (unregistered tokens, token churn, ``QuotaWindow``, injected failures, topic
/// fan-out through ``FCMTopicSizes`` and ``ConditionParser``) and counts. Allocation-free in steady
/// state.
///
/// ``GatewayStateMachine`` owns one and routes `/v1/projects/` paths to it; the common behaviours
/// (drops, latency, GOAWAY) stay in the state machine.
struct FCMEngine {
    let configuration: GatewayConfiguration
    let counters: FCMCounters
    private var reader = FCMMessageReader()
    private let translator: FCMAppleTranslator
    private var quota: QuotaWindow?
    private var sequence: UInt64 = 0
    private let loopTag: UInt64
    /// Where this loop's message numbers start: from `--seed` when given, else random per start.
    private let messageBase: UInt64
    private let wallClockAtStartMillis: Int64
    /// The monotonic time of the first request: token churn and the default `apns-expiration` count from it.
    private var firstNow: UInt64 = 0
    private let topics: FCMTopicSizes
    private let churned = ChurnedTokens()
    private let fanoutPerLoop: Double
    private let churnSeed: UInt64
    private let failures: [FCMFailureRate]
    private let failureTotal: Double
    private let clock: GatewayClock
    private let checksAccessTokens: Bool
    private var tokenEndpoint: OAuthTokenEndpoint

    /// The engine of one loop, configured by `rules`: its state machine's configuration at a fixed
    /// address, which the translator reads on every request and which must outlive the engine.
    init(rules: UnsafePointer<GatewayConfiguration>, loopIndex: Int, counters: FCMCounters, clock: GatewayClock) {
        let configuration = rules.pointee
        let wallClockMillis = clock.wallMillis
        self.clock = clock
        checksAccessTokens = configuration.fcm.auth == .oauth
        tokenEndpoint = OAuthTokenEndpoint(configuration: configuration.fcm, tokens: AccessTokens(clock: clock), loopIndex: loopIndex)
        self.configuration = configuration
        self.counters = counters
        let fcm = configuration.fcm
        translator = FCMAppleTranslator(rules: rules)
        let loops = Double(max(1, configuration.threads))
        if let q = fcm.quota {
            quota = QuotaWindow(limit: max(1, UInt64((Double(q.messages) / loops).rounded(.up))), windowNanos: q.windowNanos)
        }
        loopTag = UInt64(loopIndex) << 48
        messageBase = Self.messageBase(idSeed: configuration.idSeed ?? UInt64.random(in: .min ... .max))
        wallClockAtStartMillis = wallClockMillis
        topics = FCMTopicSizes(fcm.topicSubscribers, default: fcm.defaultSubscribers)
        fanoutPerLoop = fcm.fanoutPerSecond / loops
        churnSeed = mix(configuration.seed ^ 0xC4_0C4_0C4)
        if !fcm.failures.isEmpty {
            failures = fcm.failures
        } else {
            failures = configuration.failures.map { FCMFailureRate(code: FCMErrorCode(mapping: $0.reason), fraction: $0.fraction) }
        }
        failureTotal = failures.reduce(0) { $0 + $1.fraction }
    }

    /// The first message number's offset for `idSeed`: 48 bits, as FCM's own ids carry a long number.
    static func messageBase(idSeed: UInt64) -> UInt64 { mix(idSeed ^ 0xFC4_1D5) & 0xFFFF_FFFF_FFFF }

    /// The number of this loop's `k`-th message (1, 2, …): the loop in the top 16 bits, `base + k` below.
    @inline(__always)
    static func messageNumber(_ k: UInt64, base: UInt64, loopTag: UInt64) -> UInt64 {
        loopTag | ((base &+ k) & 0xFFFF_FFFF_FFFF)
    }

    // MARK: token churn (both routes)

    /// When `--token-churn` has invalidated the token with `hash` by `now`: the wall-clock time (ms) it
    /// churned at; nil when it is still valid. Counts the refusal and, once per token, the churned token.
    mutating func churnedAt(hash: UInt64, now: UInt64) -> Int64? {
        let rate = configuration.fcm.tokenChurnPerSecond
        guard rate > 0 else { return nil }
        if firstNow == 0 { firstNow = now }
        // Each token gets a fixed point u in [0, 1); it churns once rate × elapsed passes u.
        let u = Double(mix(hash ^ churnSeed) >> 11) * 0x1.0p-53
        let elapsed = Double(now &- firstNow) * 1e-9
        guard u < rate * elapsed else { return nil }
        counters.add(FCMCounters.churnRefusals)
        if churned.remember(hash) { counters.add(FCMCounters.churned) }
        return wallClockAtStartMillis + Int64(u / rate * 1000)
    }

    // MARK: the OAuth2 token endpoint

    /// Whether `path` is one of `paths`, the token endpoint's (`/token` and each `--fcm-token-path`).
    /// Static, so a caller holding the engine in a class does not copy the engine to ask.
    @inline(__always)
    static func isTokenPath(_ path: UnsafeRawBufferPointer, in paths: [String]) -> Bool {
        var i = 0
        while i < paths.count {
            if paths[i].utf8.count == path.count {
                var p = paths[i]
                if p.withUTF8({ path.elementsEqual(UnsafeRawBufferPointer($0)) }) { return true }
            }
            i += 1
        }
        return false
    }

    /// The token endpoint's answer to `request` (status, JSON body), counted.
    mutating func tokenEndpoint(_ request: borrowing GatewayRequest, nowMillis: Int64) -> (UInt16, String) {
        counters.add(FCMCounters.tokenRequests)
        let answer = tokenEndpoint.answer(method: request.method, body: request.body, nowMillis: nowMillis)
        counters.add(answer.0 == 200 ? FCMCounters.tokensIssued : FCMCounters.tokenRefusals)
        return answer
    }

    // MARK: the send request

    /// Decides the answer to an FCM request (`request.path` starts with `/v1/`).
    mutating func decide(_ request: borrowing GatewayRequest, random: inout SeededRandom, now: UInt64) -> FCMResponse {
        counters.add(FCMCounters.requests)
        if firstNow == 0 { firstNow = now }
        let r = decideUncounted(request, random: &random, now: now)
        if r.problem != .none { counters.countError(r.code, problem: r.problem) }
        return r
    }

    private mutating func decideUncounted(_ request: borrowing GatewayRequest, random: inout SeededRandom,
                                          now: UInt64) -> FCMResponse {
        // Path and method: /v1/projects/<project>/messages:send
        guard let method = request.method, equals(method, "POST"), let path = request.path,
              let project = Self.project(path) else {
            return FCMResponse(status: 404, code: nil, problem: .notFound)
        }
        // Authorization: Bearer <token> (scheme case-insensitive, as Google accepts "bearer").
        guard let auth = request.authorization else {
            return FCMResponse(status: 401, code: nil, problem: .missingCredentials)
        }
        guard Self.isBearer(auth) else { return FCMResponse(status: 401, code: nil, problem: .invalidCredentials) }
        if checksAccessTokens,
           !tokenEndpoint.tokens.isValid(UnsafeRawBufferPointer(rebasing: auth[7...]), nowMillis: clock.wallMillis(at: now)) {
            return FCMResponse(status: 401, code: nil, problem: .invalidCredentials)
        }

        if quota != nil {
            quota!.advance(now: now)
            if quota!.isExhausted {
                let q = configuration.fcm.quota!
                return .error(.quotaExceeded, .quotaExceeded, FCMInlineText(), q.messages, q.windowNanos / 1_000_000_000)
            }
        }
        let body = request.body
        var result = validateAndBuild(body, random: &random, now: now, project: project)
        if quota != nil, result.status < 500, result.status != 429, !result.validateOnly { quota!.count() }
        if result.problem == .none { result.text = FCMInlineText(project) }
        return result
    }

    /// Reads the body, builds the Apple request and applies the token behaviours.
    private mutating func validateAndBuild(_ body: UnsafeRawBufferPointer, random: inout SeededRandom, now: UInt64,
                                           project: UnsafeRawBufferPointer) -> FCMResponse {
        var m = FCMMessage()
        if let problem = reader.read(body, into: &m) { return problem }
        let validateOnly = m.validateOnly

        // The target: exactly one of token, topic, condition (fid counts too).
        var devices: UInt64 = 1
        var isTopic = false
        switch m.target {
        case .none: return .error(.invalidArgument, .noTarget)
        case .token(let t):
            let raw = reader.rawBytes(t)
            guard !reader.entry(t).hasEscapes, (1...4096).contains(raw.count), Self.isTokenText(raw) else {
                return .error(.invalidArgument, .badToken)
            }
            let hash = tokenHash(raw)
            if configuration.isUnregistered(hash: hash) { return .error(.unregistered, .unregistered) }
            if churnedAt(hash: hash, now: now) != nil { return .error(.unregistered, .churned) }
        case .fid:
            break
        case .topic(let t):
            var raw = reader.rawBytes(t)
            if hasPrefix(raw, "/topics/") { raw = UnsafeRawBufferPointer(rebasing: raw[8...]) }
            guard !reader.entry(t).hasEscapes, FCMNames.isValidTopic(raw) else {
                return .error(.invalidArgument, .badTopic, FCMInlineText(raw))
            }
            devices = topics.subscribers(raw)
            isTopic = true
        case .condition(let c):
            guard !reader.entry(c).hasEscapes else { return .error(.invalidArgument, .badCondition) }
            var parser = ConditionParser(text: reader.rawBytes(c), topics: topics)
            guard let n = parser.evaluate() else { return .error(.invalidArgument, .badCondition) }
            devices = n
            isTopic = true
        }

        // The Apple request FCM would send, checked with APNs' rules.
        let id = validateOnly ? 0 : Self.messageNumber(sequence &+ 1, base: messageBase, loopTag: loopTag)
        let expiration = UInt64(wallClockAtStartMillis / 1000) + (now &- firstNow) / 1_000_000_000 + 30 * 86_400
        let built = translator.build(m, from: reader, messageID: id, validateOnly: validateOnly, expirationSeconds: expiration)
        if let problem = built.problem { return problem }

        if validateOnly {
            counters.add(FCMCounters.validated)
            return FCMResponse(status: 200, code: nil, problem: .none, validateOnly: true)
        }
        if failureTotal > 0 {
            var u = random.unit()
            for i in 0..<failures.count {
                let f = failures[i]
                if u < f.fraction {
                    return .error(f.code, f.code == .senderIdMismatch ? .senderIdMismatch : .injected)
                }
                u -= f.fraction
            }
        }
        sequence &+= 1
        counters.add(FCMCounters.accepted)
        if isTopic {
            counters.add(FCMCounters.topicMessages)
            if devices > 0 { counters.enqueueFanout(devices, now: now, perSecond: fanoutPerLoop) }
        } else {
            counters.add(FCMCounters.direct)
        }
        if configuration.fcm.capture > 0, counters.reserveCapture(limit: configuration.fcm.capture) {
            counters.store(capturedPush(project: project, id: id, target: m.target, headers: built.request, now: now))
        }
        return FCMResponse(status: 200, code: nil, problem: .none, number: id)
    }

    // MARK: the request line and the target

    /// The project of `/v1/projects/<project>/messages:send` (letters, digits, `-`, 1...60 bytes).
    static func project(_ path: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        let prefix = 13, suffix = 14  // "/v1/projects/", "/messages:send"
        guard path.count > prefix + suffix, hasPrefix(path, "/v1/projects/") else { return nil }
        let tail = UnsafeRawBufferPointer(rebasing: path[(path.count - suffix)...])
        guard equals(tail, "/messages:send") else { return nil }
        let project = UnsafeRawBufferPointer(rebasing: path[prefix..<(path.count - suffix)])
        guard project.count <= FCMInlineText.capacity else { return nil }
        for c in project {
            switch c {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, UInt8(ascii: "-"): continue
            default: return nil
            }
        }
        return project
    }

    /// `Bearer <token>`: the scheme in any case, one space, a non-empty token without spaces.
    static func isBearer(_ v: UnsafeRawBufferPointer) -> Bool {
        guard v.count > 7, v[6] == 0x20 else { return false }
        let scheme: StaticString = "bearer"
        let p = scheme.utf8Start
        var i = 0
        while i < 6 {
            let c = v[i]
            if ((c >= 0x41 && c <= 0x5A) ? c | 0x20 : c) != p[i] { return false }
            i += 1
        }
        i = 7
        while i < v.count {
            let c = v[i]
            if c <= 0x20 || c >= 0x7F { return false }
            i += 1
        }
        return true
    }

    /// FCM registration tokens: letters, digits, `_`, `-`, `:`, `.`.
    static func isTokenText(_ raw: UnsafeRawBufferPointer) -> Bool {
        // Tokens run to 150+ bytes: OR the rejections of the whole token, one branch at the end.
        var bad: UInt8 = 0
        var i = 0
        let n = raw.count
        while i < n {
            let c = raw[i]
            let lower = c | 0x20
            let ok = (c &- 0x30 < 10) || (lower &- 0x61 < 26) || c == 0x5F || c == 0x2D || c == 0x3A || c == 0x2E
            bad |= ok ? 0 : 1
            i += 1
        }
        return bad == 0
    }

    // MARK: capture

    /// The push as `--capture` records it (allocates: only the first N pushes are captured).
    private func capturedPush(project: UnsafeRawBufferPointer, id: UInt64, target: FCMMessage.Target,
                              headers r: GatewayRequest, now: UInt64) -> FCMCapturedPush {
        func s(_ b: UnsafeRawBufferPointer?) -> String { b.map { String(decoding: $0, as: UTF8.self) } ?? "" }
        let response = FCMResponse(status: 200, code: nil, problem: .none, text: FCMInlineText(project), number: id)
        let rendered = response.body
        let name = String(rendered.dropFirst(9).dropLast(2))
        var t = ""
        switch target {
        case .token(let i): t = "token:" + (reader.string(i) ?? "")
        case .topic(let i): t = "topic:" + (reader.string(i) ?? "")
        case .condition(let i): t = "condition:" + (reader.string(i) ?? "")
        case .fid(let i): t = "fid:" + (reader.string(i) ?? "")
        case .none: break
        }
        var headers: [(String, String)] = [("apns-priority", s(r.priority)), ("apns-expiration", s(r.expiration)),
                                           ("apns-push-type", s(r.pushType)), ("apns-topic", s(r.topic))]
        if let c = r.collapseID { headers.append(("apns-collapse-id", s(c))) }
        if let i = r.apnsID { headers.append(("apns-id", s(i))) }
        return FCMCapturedPush(name: name, target: t, headers: headers, payload: s(r.body), order: now)
    }
}

/// The distinct tokens `--token-churn` has invalidated on one loop (hashes, open addressing, filled to
/// 3/4 at most), so each is counted once. Allocated on the first churned token (512 KiB): a gateway
/// without churn pays nothing.
final class ChurnedTokens {
    private var table: UnsafeMutablePointer<UInt64>?
    private var count = 0
    private static let capacity = 1 << 16

    deinit { table?.deallocate() }

    /// Records a churned token; true the first time it is seen (while the table has room).
    func remember(_ hash: UInt64) -> Bool {
        if table == nil {
            table = .allocate(capacity: Self.capacity)
            table!.initialize(repeating: 0, count: Self.capacity)
        }
        let table = table!
        let key = hash | 1
        let mask = Self.capacity - 1
        var i = Int(truncatingIfNeeded: key >> 7) & mask
        while table[i] != 0 {
            if table[i] == key { return false }
            i = (i + 1) & mask
        }
        guard count < Self.capacity * 3 / 4 else { return true }
        table[i] = key
        count += 1
        return true
    }
}
