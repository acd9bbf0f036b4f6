#if canImport(Glibc)
import Glibc
#endif
import PushPayload
import PushVocabulary

/// The FCM HTTP v1 send API as plain logic, one per event loop (not thread-safe): validates
/// `POST /v1/projects/<project>/messages:send`, builds the APNs request FCM would send for an Apple
/// target (push-protocols.md §3.5) and checks it with the APNs rules of ``GatewayStateMachine``, then
/// applies the behaviours (unregistered tokens, token churn, quota, injected failures). Allocation-free
/// in steady state: the body is parsed onto a reused ``JSONTape`` and the Apple payload is written into a
/// reused buffer.
///
/// ``GatewayStateMachine`` owns one and routes `/v1/projects/` paths to it; the common behaviours
/// (drops, latency, GOAWAY) stay in the state machine.
struct FCMEngine {
    let configuration: GatewayConfiguration
    let counters: FCMCounters
    private var tape = JSONTape(capacity: 512)
    private let storage: FCMStorage
    private var quota: QuotaWindow?
    private var sequence: UInt64 = 0
    private let loopTag: UInt64
    private let wallClockAtStartMillis: Int64
    /// The monotonic time of the first request: token churn and the default `apns-expiration` count from it.
    private var firstNow: UInt64 = 0
    private let subscriberTable: [(name: [UInt8], count: UInt64)]
    private let fanoutPerLoop: Double
    private let churnSeed: UInt64
    private let failures: [FCMFailureRate]
    private let failureTotal: Double

    init(configuration: GatewayConfiguration, loopIndex: Int, counters: FCMCounters, wallClockMillis: Int64) {
        self.configuration = configuration
        self.counters = counters
        let fcm = configuration.fcm
        storage = FCMStorage(appleTopic: fcm.appleTopic)
        let loops = Double(max(1, configuration.threads))
        if let q = fcm.quota {
            quota = QuotaWindow(limit: max(1, UInt64((Double(q.messages) / loops).rounded(.up))), windowNanos: q.windowNanos)
        }
        loopTag = UInt64(loopIndex) << 48
        wallClockAtStartMillis = wallClockMillis
        subscriberTable = fcm.topicSubscribers.keys.sorted().map { (Array($0.utf8), UInt64(fcm.topicSubscribers[$0]!)) }
        fanoutPerLoop = fcm.fanoutPerSecond / loops
        churnSeed = mix(configuration.seed ^ 0xC4_0C4_0C4)
        if !fcm.failures.isEmpty {
            failures = fcm.failures
        } else {
            failures = configuration.failures.map { FCMFailureRate(code: FCMErrorCode(mapping: $0.reason), fraction: $0.fraction) }
        }
        failureTotal = failures.reduce(0) { $0 + $1.fraction }
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
        if storage.rememberChurned(hash) { counters.add(FCMCounters.churned) }
        return wallClockAtStartMillis + Int64(u / rate * 1000)
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

    /// Parses and validates the body, builds the Apple request and applies the token behaviours.
    private mutating func validateAndBuild(_ body: UnsafeRawBufferPointer, random: inout SeededRandom, now: UInt64,
                                           project: UnsafeRawBufferPointer) -> FCMResponse {
        if let e = tape.parse(body) {
            return .error(.invalidArgument, .invalidJSON, FCMInlineText(e.code.reason), UInt64(e.line), UInt64(e.column))
        }
        let root = tape.root
        guard tape[root].kind == .object else { return .error(.invalidArgument, .wrongType, FCMInlineText("request")) }
        var message: Int?
        var validateOnly = false
        // Index loops rather than closures: a closure capturing locals costs heap boxes in debug builds.
        var it = members(root)
        while let (k, v) = next(&it) {
            let ke = tape[k]
            if key(k, ke, body, "message") {
                guard tape[v].kind == .object else { return .error(.invalidArgument, .wrongType, FCMInlineText("message")) }
                message = v
            } else if key(k, ke, body, "validate_only", "validateOnly") {
                guard let b = tape.bool(at: v) else { return .error(.invalidArgument, .wrongType, FCMInlineText("validate_only")) }
                validateOnly = b
            } else {
                return .error(.invalidArgument, .unknownField, FCMInlineText(tape.rawBytes(at: k, in: body)))
            }
        }
        guard let message else { return .error(.invalidArgument, .missingMessage) }

        var m = MessageFields()
        if let problem = readMessage(message, body, into: &m) { return problem }

        // The target: exactly one of token, topic, condition (fid counts too).
        var devices: UInt64 = 1
        var isTopic = false
        switch m.target {
        case .none: return .error(.invalidArgument, .noTarget)
        case .token(let t):
            let raw = tape.rawBytes(at: t, in: body)
            guard !tape[t].hasEscapes, (1...4096).contains(raw.count), Self.isTokenText(raw) else {
                return .error(.invalidArgument, .badToken)
            }
            let hash = tokenHash(raw)
            if configuration.isUnregistered(hash: hash) { return .error(.unregistered, .unregistered) }
            if churnedAt(hash: hash, now: now) != nil { return .error(.unregistered, .churned) }
        case .fid:
            break
        case .topic(let t):
            var raw = tape.rawBytes(at: t, in: body)
            if hasPrefix(raw, "/topics/") { raw = UnsafeRawBufferPointer(rebasing: raw[8...]) }
            guard !tape[t].hasEscapes, FCMNames.isValidTopic(raw) else {
                return .error(.invalidArgument, .badTopic, FCMInlineText(raw))
            }
            devices = subscribers(raw)
            isTopic = true
        case .condition(let c):
            guard !tape[c].hasEscapes else { return .error(.invalidArgument, .badCondition) }
            var parser = ConditionParser(text: tape.rawBytes(at: c, in: body), engine: self)
            guard let n = parser.evaluate() else { return .error(.invalidArgument, .badCondition) }
            devices = n
            isTopic = true
        }

        // The Apple request FCM would send, checked with APNs' rules.
        let id = validateOnly ? 0 : loopTag | (sequence &+ 1)
        let built = buildApple(m, body, messageID: id, validateOnly: validateOnly, now: now)
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
            counters.store(capturedPush(project: project, id: id, target: m.target, body: body, headers: built.request, now: now))
        }
        return FCMResponse(status: 200, code: nil, problem: .none, number: id)
    }

    // MARK: reading the message

    enum Target: Equatable { case none, token(Int), topic(Int), condition(Int), fid(Int) }

    struct MessageFields {
        var target = Target.none
        var data: Int?
        var notification: Int?
        var title: Int?, body: Int?, image: Int?
        var legacyNotification = false
        var apnsHeaders: Int?
        var apnsPayload: Int?
        var aps: Int?
        var apnsImage: Int?
        var liveActivityToken: Int?
    }

    @inline(__always)
    private func key(_ k: Int, _ e: JSONTape.Entry, _ body: UnsafeRawBufferPointer, _ a: StaticString) -> Bool {
        // Most keys are unescaped: compare lengths, then bytes, without calling into the tape.
        if e.hasEscapes { return tape.stringEquals(at: k, a, in: body) }
        let n = a.utf8CodeUnitCount
        guard e.end - e.start == n else { return false }
        // Field names are short: a byte loop beats a call to memcmp.
        let p = a.utf8Start, q = body.baseAddress!.assumingMemoryBound(to: UInt8.self) + e.start
        var i = 0
        while i < n {
            if p[i] != q[i] { return false }
            i += 1
        }
        return true
    }

    @inline(__always)
    private func key(_ k: Int, _ e: JSONTape.Entry, _ body: UnsafeRawBufferPointer, _ a: StaticString,
                     _ b: StaticString) -> Bool {
        key(k, e, body, a) || key(k, e, body, b)
    }

    /// Reads `message` into `m`; returns the error for the first problem found.
    private func readMessage(_ message: Int, _ body: UnsafeRawBufferPointer, into m: inout MessageFields) -> FCMResponse? {
        var it = members(message)
        while let (k, v) = next(&it) {
            let ke = tape[k]
            let kind = tape[v].kind
            var target = Target.none
            var targetName: StaticString = ""
            if key(k, ke, body, "token") { target = .token(v); targetName = "token" }
            else if key(k, ke, body, "topic") { target = .topic(v); targetName = "topic" }
            else if key(k, ke, body, "condition") { target = .condition(v); targetName = "condition" }
            else if key(k, ke, body, "fid") { target = .fid(v); targetName = "fid" }
            if target != .none {
                guard kind == .string else { return wrongType("message.", targetName) }
                if !Self.sameTarget(m.target, target) && m.target != .none {
                    return .error(.invalidArgument, .twoTargets, FCMInlineText(static: targetName))
                }
                m.target = target
            } else if key(k, ke, body, "data") {
                guard kind == .object else { return wrongType("message.", "data") }
                if let bad = checkData(v, body) { return bad }
                m.data = v
            } else if key(k, ke, body, "notification") {
                guard kind == .object else { return wrongType("message.", "notification") }
                m.notification = v
                if let bad = readNotification(v, body, into: &m) { return bad }
            } else if key(k, ke, body, "apns") {
                guard kind == .object else { return wrongType("message.", "apns") }
                if let bad = readApns(v, body, into: &m) { return bad }
            } else if key(k, ke, body, "fcm_options", "fcmOptions") {
                guard kind == .object else { return wrongType("message.", "fcm_options") }
                if let bad = checkFcmOptions(v, body, allowImage: false) { return bad }
            } else if key(k, ke, body, "android") || key(k, ke, body, "webpush") {
                // Not used on the Apple path; only its shape is checked.
                if kind != .object { return .error(.invalidArgument, .wrongType, FCMInlineText(tape.rawBytes(at: k, in: body))) }
            } else if key(k, ke, body, "name") {
                if kind != .string { return wrongType("message.", "name") }
            } else {
                return .error(.invalidArgument, .unknownField, FCMInlineText(tape.rawBytes(at: k, in: body)))
            }
        }
        return nil
    }

    private static func sameTarget(_ a: Target, _ b: Target) -> Bool {
        switch (a, b) {
        case (.token, .token), (.topic, .topic), (.condition, .condition), (.fid, .fid): true
        default: false
        }
    }

    private func wrongType(_ prefix: StaticString, _ field: StaticString) -> FCMResponse {
        var text = FCMInlineText()
        let a = UnsafeRawBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        let b = UnsafeRawBufferPointer(start: field.utf8Start, count: field.utf8CodeUnitCount)
        withUnsafeTemporaryAllocation(byteCount: 64, alignment: 1) { buf in
            var w = ByteWriter(buf)
            w.bytes(a); w.bytes(b)
            text = FCMInlineText(UnsafeRawBufferPointer(rebasing: buf[0..<min(w.count, 64)]))
        }
        return .error(.invalidArgument, .wrongType, text)
    }

    /// `data`: every value a string; no reserved key (`from`, `message_type`, `google.*`, `gcm.*`).
    private func checkData(_ data: Int, _ body: UnsafeRawBufferPointer) -> FCMResponse? {
        var it = members(data)
        while let (k, v) = next(&it) {
            let raw = tape.rawBytes(at: k, in: body)
            if equals(raw, "from") || equals(raw, "message_type") || hasPrefix(raw, "google.") || hasPrefix(raw, "gcm.")
                || equals(raw, "google") || equals(raw, "gcm") {
                return .error(.invalidArgument, .reservedDataKey, FCMInlineText(raw))
            }
            if tape[v].kind != .string { return .error(.invalidArgument, .dataNotString, FCMInlineText(raw)) }
        }
        return nil
    }

    private func readNotification(_ n: Int, _ body: UnsafeRawBufferPointer, into m: inout MessageFields) -> FCMResponse? {
        var it = members(n)
        while let (k, v) = next(&it) {
            let ke = tape[k]
            let isString = tape[v].kind == .string
            if key(k, ke, body, "title") { m.title = v }
            else if key(k, ke, body, "body") { m.body = v }
            else if key(k, ke, body, "image") { m.image = v }
            else if LegacyKey.notification(tape, k, body) != nil {
                m.legacyNotification = true
                continue
            } else {
                return .error(.invalidArgument, .unknownField, FCMInlineText(tape.rawBytes(at: k, in: body)))
            }
            if !isString { return wrongType("message.notification.", "title/body/image") }
        }
        return nil
    }

    private func readApns(_ a: Int, _ body: UnsafeRawBufferPointer, into m: inout MessageFields) -> FCMResponse? {
        var it = members(a)
        while let (k, v) = next(&it) {
            let ke = tape[k]
            let kind = tape[v].kind
            if key(k, ke, body, "headers") {
                guard kind == .object else { return wrongType("message.apns.", "headers") }
                var hs = members(v)
                while let (_, h) = next(&hs) {
                    if tape[h].kind != .string { return wrongType("message.apns.", "headers (values must be strings)") }
                }
                m.apnsHeaders = v
            } else if key(k, ke, body, "payload") {
                guard kind == .object else { return wrongType("message.apns.", "payload") }
                m.apnsPayload = v
                if let aps = tape.member("aps", of: v, in: body) {
                    guard tape[aps].kind == .object else { return wrongType("message.apns.payload.", "aps") }
                    m.aps = aps
                }
            } else if key(k, ke, body, "fcm_options", "fcmOptions") {
                guard kind == .object else { return wrongType("message.apns.", "fcm_options") }
                if let bad = checkFcmOptions(v, body, allowImage: true) { return bad }
                if let image = tape.member("image", of: v, in: body) { m.apnsImage = image }
            } else if key(k, ke, body, "live_activity_token", "liveActivityToken") {
                guard kind == .string else { return wrongType("message.apns.", "live_activity_token") }
                m.liveActivityToken = v
            } else {
                return .error(.invalidArgument, .unknownField, FCMInlineText(tape.rawBytes(at: k, in: body)))
            }
        }
        return nil
    }

    /// `fcm_options`: `analytics_label` matching `^[a-zA-Z0-9-_.~%]{1,50}$`; `image` (a string) where allowed.
    private func checkFcmOptions(_ o: Int, _ body: UnsafeRawBufferPointer, allowImage: Bool) -> FCMResponse? {
        var it = members(o)
        while let (k, v) = next(&it) {
            let ke = tape[k]
            if key(k, ke, body, "analytics_label", "analyticsLabel") {
                let raw = tape.rawBytes(at: v, in: body)
                if tape[v].kind != .string || tape[v].hasEscapes || raw.count > 50 || !FCMNames.isValidTopic(raw) {
                    return .error(.invalidArgument, .badAnalyticsLabel)
                }
            } else if allowImage, key(k, ke, body, "image") {
                if tape[v].kind != .string { return wrongType("message.apns.fcm_options.", "image") }
            } else {
                return .error(.invalidArgument, .unknownField, FCMInlineText(tape.rawBytes(at: k, in: body)))
            }
        }
        return nil
    }

    /// Subscribers of topic `name` (bytes).
    func subscribers(_ name: UnsafeRawBufferPointer) -> UInt64 {
        for i in 0..<subscriberTable.count {
            let e = subscriberTable[i]
            if e.name.count == name.count, e.name.withUnsafeBytes({ $0.elementsEqual(name) }) { return e.count }
        }
        return UInt64(configuration.fcm.defaultSubscribers)
    }

    // MARK: the Apple request

    struct Built {
        var problem: FCMResponse?
        var request = GatewayRequest()
    }

    /// Writes the APNs payload FCM would deliver into the reused buffer, picks the APNs headers, and
    /// checks them with the APNs state machine's rules.
    ///
    /// Only `--capture` needs the payload's bytes: the APNs checks look at its size alone (it is a JSON
    /// object by construction). Without capture the writer only counts (same walk, same size, no copies).
    private func buildApple(_ m: MessageFields, _ body: UnsafeRawBufferPointer, messageID: UInt64,
                            validateOnly: Bool, now: UInt64) -> Built {
        var w = configuration.fcm.capture > 0 ? ByteWriter(storage.payload) : ByteWriter(countingOnly: storage.payload)
        var flags = ApsFlags()
        w.literal("{\"aps\":{")
        var first = true
        writeAlert(m, body, &w, &first, &flags)
        if let aps = m.aps {
            var it = members(aps)
            while let (k, v) = next(&it) {
                if tape.stringEquals(at: k, "alert", in: body) || laterSibling(k, in: aps, body) { continue }
                writeApsMember(k, v, body, &w, &first, &flags)
            }
        }
        if m.legacyNotification, let n = m.notification {
            var it = members(n)
            while let (k, v) = next(&it) {
                guard let legacy = LegacyKey.notification(tape, k, body), !legacy.inAlert else { continue }
                if legacy.apsName == .badge, flags.badge { continue }
                if legacy.apsName == .sound, flags.sound { continue }
                if legacy.apsName == .category, flags.category { continue }
                Self.member(&w, &first, legacy.apsName.bytes, rawValue(v, body), quoted: false)
                flags.note(legacy.apsName)
            }
        }
        w.byte(UInt8(ascii: "}"))
        // Custom keys of apns.payload, then data (apns.payload wins a clash), then FCM's own keys.
        if let p = m.apnsPayload {
            var it = members(p)
            while let (k, v) = next(&it) {
                if tape.stringEquals(at: k, "aps", in: body) || laterSibling(k, in: p, body) { continue }
                w.byte(UInt8(ascii: ",")); w.quoted(tape.rawBytes(at: k, in: body)); w.byte(UInt8(ascii: ":"))
                w.bytes(rawValue(v, body))
            }
        }
        if let d = m.data {
            var it = members(d)
            while let (k, v) = next(&it) {
                if laterSibling(k, in: d, body) { continue }
                if let p = m.apnsPayload, tape.member(tape.rawBytes(at: k, in: body), of: p, in: body) != nil { continue }
                w.byte(UInt8(ascii: ",")); w.quoted(tape.rawBytes(at: k, in: body)); w.byte(UInt8(ascii: ":"))
                w.quoted(tape.rawBytes(at: v, in: body))
            }
        }
        w.literal(",\"gcm.message_id\":\"")
        if validateOnly { w.literal("fake_message_id") } else { FCMMessageID.write(messageID, to: &w) }
        w.byte(UInt8(ascii: "\""))
        if let image = m.apnsImage ?? m.image {
            w.literal(",\"fcm_options\":{\"image\":")
            w.quoted(tape.rawBytes(at: image, in: body))
            w.byte(UInt8(ascii: "}"))
        }
        w.byte(UInt8(ascii: "}"))

        // Headers: apns.headers, else FCM's defaults.
        var built = Built()
        var r = GatewayRequest()
        r.method = Self.bytes("POST")
        if let h = m.apnsHeaders {
            var it = members(h)
            while let (k, v) = next(&it) {
                let name = tape.rawBytes(at: k, in: body), value = tape.rawBytes(at: v, in: body)
                if Self.equalsIgnoringCase(name, "apns-priority") { r.priority = value }
                else if Self.equalsIgnoringCase(name, "apns-expiration") { r.expiration = value }
                else if Self.equalsIgnoringCase(name, "apns-push-type") { r.pushType = value }
                else if Self.equalsIgnoringCase(name, "apns-collapse-id") { r.collapseID = value }
                else if Self.equalsIgnoringCase(name, "apns-topic") { r.topic = value }
                else if Self.equalsIgnoringCase(name, "apns-id") { r.apnsID = value }
            }
        }
        let explicitPushType = r.pushType != nil
        if r.pushType == nil {
            if m.liveActivityToken != nil { r.pushType = Self.bytes("liveactivity") }
            else { r.pushType = flags.visible ? Self.bytes("alert") : Self.bytes("background") }
        }
        let background = equals(r.pushType!, "background")
        if r.priority == nil {
            r.priority = background ? Self.bytes("5") : Self.bytes("10")
        } else if background, !explicitPushType, equals(r.priority!, "10") {
            built.problem = .error(.invalidArgument, .dataOnlyPriority)
            return built
        }
        if r.topic == nil { r.topic = storage.appleTopicBytes }
        if r.expiration == nil {
            let seconds = UInt64(wallClockAtStartMillis / 1000) + (now &- firstNow) / 1_000_000_000 + 30 * 86_400
            r.expiration = storage.expirationDigits(seconds)
        }
        guard w.count <= storage.payload.count else {
            let limit = PayloadLimits.apns(equals(r.pushType!, "voip") ? .voip : .alert)
            built.problem = .error(.invalidArgument, .payloadTooBig, FCMInlineText(), UInt64(w.count), UInt64(limit))
            return built
        }
        // Without capture these bytes are not the payload (nothing reads them): only the count is.
        r.body = UnsafeRawBufferPointer(rebasing: storage.payload[0..<w.count])
        if let reason = GatewayStateMachine.validateAPNs(r, configuration: configuration, checkPath: false,
                                                           checkJSON: false) {
            if reason == .payloadTooLarge {
                let limit = PayloadLimits.apns(equals(r.pushType!, "voip") ? .voip : .alert)
                built.problem = .error(.invalidArgument, .payloadTooBig, FCMInlineText(), UInt64(w.count), UInt64(limit))
            } else {
                built.problem = .error(.invalidArgument, .apnsRejected, FCMInlineText(reason.rawValue))
            }
            return built
        }
        built.request = r
        return built
    }

    struct ApsFlags {
        var alert = false, badge = false, sound = false, category = false, contentAvailable = false
        /// Whether the push shows something (alert, badge or sound): push type alert, else background.
        var visible: Bool { alert || badge || sound }

        mutating func note(_ name: ApsName) {
            switch name {
            case .badge: badge = true
            case .sound: sound = true
            case .category: category = true
            case .contentAvailable: contentAvailable = true
            default: break
            }
        }
    }

    private func writeAlert(_ m: MessageFields, _ body: UnsafeRawBufferPointer, _ w: inout ByteWriter,
                            _ first: inout Bool, _ flags: inout ApsFlags) {
        var payloadAlert: Int?
        if let aps = m.aps { payloadAlert = tape.member("alert", of: aps, in: body) }
        if let a = payloadAlert, tape[a].kind != .object {
            Self.member(&w, &first, Self.bytes("alert"), rawValue(a, body), quoted: false)
            flags.alert = true
            return
        }
        var hasLegacyAlert = false
        if m.legacyNotification, let n = m.notification {
            var it = members(n)
            while let (k, _) = next(&it) {
                if LegacyKey.notification(tape, k, body)?.inAlert == true { hasLegacyAlert = true }
            }
        }
        guard payloadAlert != nil || m.title != nil || m.body != nil || hasLegacyAlert else { return }
        if !first { w.byte(UInt8(ascii: ",")) }
        first = false
        w.literal("\"alert\":{")
        var f = true
        if let t = m.title, !has(payloadAlert, "title", body) {
            Self.member(&w, &f, Self.bytes("title"), tape.rawBytes(at: t, in: body), quoted: true)
        }
        if let b = m.body, !has(payloadAlert, "body", body) {
            Self.member(&w, &f, Self.bytes("body"), tape.rawBytes(at: b, in: body), quoted: true)
        }
        if hasLegacyAlert, let n = m.notification {
            var it = members(n)
            while let (k, v) = next(&it) {
                guard let legacy = LegacyKey.notification(tape, k, body), legacy.inAlert else { continue }
                if let a = payloadAlert, tape.member(legacy.apsName.bytes, of: a, in: body) != nil { continue }
                Self.member(&w, &f, legacy.apsName.bytes, rawValue(v, body), quoted: false)
            }
        }
        if let a = payloadAlert {
            var it = members(a)
            while let (k, v) = next(&it) {
                if laterSibling(k, in: a, body) { continue }
                Self.member(&w, &f, tape.rawBytes(at: k, in: body), rawValue(v, body), quoted: false)
            }
        }
        w.byte(UInt8(ascii: "}"))
        flags.alert = true
    }

    /// One member of `apns.payload.aps`, with the legacy snake_case names mapped to APNs' names.
    private func writeApsMember(_ k: Int, _ v: Int, _ body: UnsafeRawBufferPointer, _ w: inout ByteWriter,
                                _ first: inout Bool, _ flags: inout ApsFlags) {
        var name = tape.rawBytes(at: k, in: body)
        var aps: ApsName = .other
        if equals(name, "content_available") { aps = .contentAvailable }
        else if equals(name, "mutable_content") { aps = .mutableContent }
        else if equals(name, "click_action") { aps = .category }
        else if equals(name, "content-available") { aps = .contentAvailable }
        else if equals(name, "badge") { aps = .badge }
        else if equals(name, "sound") { aps = .sound }
        else if equals(name, "category") { aps = .category }
        if aps != .other { name = aps.bytes }
        let kind = tape[v].kind
        if aps == .contentAvailable || aps == .mutableContent {
            // Legacy booleans: true → 1, false → left out.
            if kind == .false { return }
            if kind == .true {
                Self.member(&w, &first, name, Self.bytes("1"), quoted: false)
                flags.note(aps)
                return
            }
        }
        Self.member(&w, &first, name, rawValue(v, body), quoted: false)
        flags.note(aps)
    }

    /// Whether object `o` (if any) has a member `name`.
    @inline(__always)
    private func has(_ o: Int?, _ name: StaticString, _ body: UnsafeRawBufferPointer) -> Bool {
        guard let o else { return false }
        return tape.member(name, of: o, in: body) != nil
    }

    /// A cursor over an object's members (index loops instead of closures, see `validateAndBuild`).
    struct Members { var index: Int; var left: Int }

    @inline(__always)
    private func members(_ o: Int) -> Members {
        Members(index: o + 1, left: tape[o].kind == .object ? tape[o].count : 0)
    }

    /// The next `(key, value)` indices, or nil at the end.
    @inline(__always)
    private func next(_ it: inout Members) -> (Int, Int)? {
        guard it.left > 0 else { return nil }
        let k = it.index
        it.index = tape[k + 1].next
        it.left -= 1
        return (k, k + 1)
    }

    /// The JSON text of the value at `v` (a string with its quotes).
    @inline(__always)
    private func rawValue(_ v: Int, _ body: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let e = tape[v]
        if e.kind == .string { return UnsafeRawBufferPointer(rebasing: body[(e.start - 1)...e.end]) }
        return tape.rawBytes(at: v, in: body)
    }

    /// Whether a later member of object `object` has the same key as `k` (JSON lets keys repeat; the last wins).
    private func laterSibling(_ k: Int, in object: Int, _ body: UnsafeRawBufferPointer) -> Bool {
        let end = tape[object].next
        var i = tape[k + 1].next
        let mine = tape.rawBytes(at: k, in: body)
        while i < end {
            if tape.rawBytes(at: i, in: body).elementsEqual(mine) { return true }
            i = tape[i + 1].next
        }
        return false
    }

    @inline(__always)
    private static func member(_ w: inout ByteWriter, _ first: inout Bool, _ key: UnsafeRawBufferPointer,
                               _ value: UnsafeRawBufferPointer, quoted: Bool) {
        if !first { w.byte(UInt8(ascii: ",")) }
        first = false
        w.quoted(key)
        w.byte(UInt8(ascii: ":"))
        if quoted { w.quoted(value) } else { w.bytes(value) }
    }

    @inline(__always)
    static func bytes(_ s: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)
    }

    static func equalsIgnoringCase(_ b: UnsafeRawBufferPointer, _ lower: StaticString) -> Bool {
        guard b.count == lower.utf8CodeUnitCount else { return false }
        let p = lower.utf8Start
        for i in 0..<b.count {
            let c = b[i]
            if ((c >= 0x41 && c <= 0x5A) ? c | 0x20 : c) != p[i] { return false }
        }
        return true
    }

    // MARK: small parsers

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

    private func capturedPush(project: UnsafeRawBufferPointer, id: UInt64, target: Target, body: UnsafeRawBufferPointer,
                              headers r: GatewayRequest, now: UInt64) -> FCMCapturedPush {
        func s(_ b: UnsafeRawBufferPointer?) -> String { b.map { String(decoding: $0, as: UTF8.self) } ?? "" }
        let response = FCMResponse(status: 200, code: nil, problem: .none, text: FCMInlineText(project), number: id)
        let rendered = response.body
        let name = String(rendered.dropFirst(9).dropLast(2))
        var t = ""
        switch target {
        case .token(let i): t = "token:" + (tape.string(at: i, in: body) ?? "")
        case .topic(let i): t = "topic:" + (tape.string(at: i, in: body) ?? "")
        case .condition(let i): t = "condition:" + (tape.string(at: i, in: body) ?? "")
        case .fid(let i): t = "fid:" + (tape.string(at: i, in: body) ?? "")
        case .none: break
        }
        var headers: [(String, String)] = [("apns-priority", s(r.priority)), ("apns-expiration", s(r.expiration)),
                                           ("apns-push-type", s(r.pushType)), ("apns-topic", s(r.topic))]
        if let c = r.collapseID { headers.append(("apns-collapse-id", s(c))) }
        if let i = r.apnsID { headers.append(("apns-id", s(i))) }
        return FCMCapturedPush(name: name, target: t, headers: headers, payload: s(r.body), order: now)
    }
}

/// APNs `aps` names the legacy keys map to.
enum ApsName {
    case badge, sound, category, contentAvailable, mutableContent, locKey, locArgs, titleLocKey, titleLocArgs, other

    var bytes: UnsafeRawBufferPointer {
        switch self {
        case .badge: FCMEngine.bytes("badge")
        case .sound: FCMEngine.bytes("sound")
        case .category: FCMEngine.bytes("category")
        case .contentAvailable: FCMEngine.bytes("content-available")
        case .mutableContent: FCMEngine.bytes("mutable-content")
        case .locKey: FCMEngine.bytes("loc-key")
        case .locArgs: FCMEngine.bytes("loc-args")
        case .titleLocKey: FCMEngine.bytes("title-loc-key")
        case .titleLocArgs: FCMEngine.bytes("title-loc-args")
        case .other: FCMEngine.bytes("")
        }
    }
}

/// Legacy-API keys seen in `notification` (push-protocols.md §3.5) and where they go in `aps`.
enum LegacyKey {
    static func notification(_ tape: JSONTape, _ k: Int, _ body: UnsafeRawBufferPointer) -> (apsName: ApsName, inAlert: Bool)? {
        let raw = tape.rawBytes(at: k, in: body)
        switch raw.count {
        case 5: if equals(raw, "badge") { return (.badge, false) }
            if equals(raw, "sound") { return (.sound, false) }
        case 12: if equals(raw, "click_action") { return (.category, false) }
            if equals(raw, "body_loc_key") { return (.locKey, true) }
        case 13: if equals(raw, "body_loc_args") { return (.locArgs, true) }
            if equals(raw, "title_loc_key") { return (.titleLocKey, true) }
        case 14: if equals(raw, "title_loc_args") { return (.titleLocArgs, true) }
        default: break
        }
        return nil
    }
}

/// Buffers reused by every request of one loop.
final class FCMStorage {
    /// The Apple payload being built (anything past 16 KiB is far over every limit).
    let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 8)
    /// Digits of the default `apns-expiration` (bytes 0..<20), their count (byte 23) and the seconds they
    /// spell (bytes 24..<32): raw memory rather than class properties, which cost an exclusivity check each.
    let expiration = UnsafeMutableRawBufferPointer.allocate(byteCount: 32, alignment: 8)

    /// The decimal digits of `seconds`, rewritten only when the second changes.
    @inline(__always)
    func expirationDigits(_ seconds: UInt64) -> UnsafeRawBufferPointer {
        let base = expiration.baseAddress!
        if base.load(fromByteOffset: 24, as: UInt64.self) != seconds || base.load(fromByteOffset: 23, as: UInt8.self) == 0 {
            let n = JSONWriting.writeDecimal(seconds, to: base)
            base.storeBytes(of: UInt8(n), toByteOffset: 23, as: UInt8.self)
            base.storeBytes(of: seconds, toByteOffset: 24, as: UInt64.self)
        }
        return UnsafeRawBufferPointer(start: base, count: Int(base.load(fromByteOffset: 23, as: UInt8.self)))
    }
    private let topic: UnsafeMutableRawBufferPointer
    /// Distinct churned token hashes (open addressing, filled to 3/4 at most).
    /// Allocated on the first churned token (512 KiB), so a gateway without `--token-churn` pays nothing.
    private var churned: UnsafeMutablePointer<UInt64>?
    private var churnedCount = 0
    private static let churnCapacity = 1 << 16

    init(appleTopic: String) {
        expiration.initializeMemory(as: UInt8.self, repeating: 0)
        payload.initializeMemory(as: UInt8.self, repeating: 0)
        let t = Array(appleTopic.utf8)
        topic = .allocate(byteCount: max(1, t.count), alignment: 1)
        topic.copyBytes(from: t)
        topicCount = t.count
    }

    private let topicCount: Int
    var appleTopicBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: topic[0..<topicCount]) }

    /// Records a churned token; true the first time it is seen (while the table has room).
    func rememberChurned(_ hash: UInt64) -> Bool {
        if churned == nil {
            churned = .allocate(capacity: Self.churnCapacity)
            churned!.initialize(repeating: 0, count: Self.churnCapacity)
        }
        let churned = churned!
        let key = hash | 1
        let mask = Self.churnCapacity - 1
        var i = Int(truncatingIfNeeded: key >> 7) & mask
        while churned[i] != 0 {
            if churned[i] == key { return false }
            i = (i + 1) & mask
        }
        guard churnedCount < Self.churnCapacity * 3 / 4 else { return true }
        churned[i] = key
        churnedCount += 1
        return true
    }

    deinit {
        payload.deallocate()
        expiration.deallocate()
        topic.deallocate()
        churned?.deallocate()
    }
}

/// A rolling window of 60 slots: the messages counted in the last `windowNanos`.
struct QuotaWindow {
    let limit: UInt64
    let slotNanos: UInt64
    private var slots = [UInt64](repeating: 0, count: 60)
    private var head: UInt64 = 0
    private var total: UInt64 = 0

    init(limit: UInt64, windowNanos: UInt64) {
        self.limit = limit
        slotNanos = max(1, windowNanos / 60)
    }

    mutating func advance(now: UInt64) {
        let slot = now / slotNanos
        guard slot > head else { return }
        let steps = min(slot - head, 60)
        for s in 1...steps {
            let i = Int((head + s) % 60)
            total -= slots[i]
            slots[i] = 0
        }
        head = slot
    }

    var isExhausted: Bool { total >= limit }

    mutating func count() {
        slots[Int(head % 60)] += 1
        total += 1
    }
}

/// Evaluates an FCM condition (`'A' in topics && ('B' in topics || !('C' in topics))`, at most 5
/// topics) to an estimate of the devices it reaches: `||` adds, `&&` takes the smaller side, `!` the
/// default topic size.
struct ConditionParser {
    let text: UnsafeRawBufferPointer
    let engine: FCMEngine
    var i = 0
    var topics = 0

    init(text: UnsafeRawBufferPointer, engine: FCMEngine) {
        self.text = text
        self.engine = engine
    }

    mutating func evaluate() -> UInt64? {
        guard let v = expression(depth: 0) else { return nil }
        skip()
        return i == text.count && topics >= 1 ? v : nil
    }

    private mutating func skip() { while i < text.count, text[i] == 0x20 { i += 1 } }

    private mutating func eat(_ a: UInt8, _ b: UInt8) -> Bool {
        skip()
        guard i + 1 < text.count, text[i] == a, text[i + 1] == b else { return false }
        i += 2
        return true
    }

    private mutating func expression(depth: Int) -> UInt64? {
        guard depth < 16, var v = term(depth: depth) else { return nil }
        while eat(0x7C, 0x7C) {
            guard let r = term(depth: depth) else { return nil }
            v = v.addingReportingOverflow(r).overflow ? .max : v + r
        }
        return v
    }

    private mutating func term(depth: Int) -> UInt64? {
        guard var v = factor(depth: depth) else { return nil }
        while eat(0x26, 0x26) {
            guard let r = factor(depth: depth) else { return nil }
            v = min(v, r)
        }
        return v
    }

    private mutating func factor(depth: Int) -> UInt64? {
        skip()
        guard i < text.count else { return nil }
        switch text[i] {
        case UInt8(ascii: "!"):
            i += 1
            guard factor(depth: depth + 1) != nil else { return nil }
            return UInt64(engine.configuration.fcm.defaultSubscribers)
        case UInt8(ascii: "("):
            i += 1
            guard let v = expression(depth: depth + 1) else { return nil }
            skip()
            guard i < text.count, text[i] == UInt8(ascii: ")") else { return nil }
            i += 1
            return v
        case UInt8(ascii: "'"):
            i += 1
            let start = i
            while i < text.count, text[i] != UInt8(ascii: "'") { i += 1 }
            guard i < text.count else { return nil }
            let name = UnsafeRawBufferPointer(rebasing: text[start..<i])
            i += 1
            guard FCMNames.isValidTopic(name) else { return nil }
            topics += 1
            guard topics <= 5 else { return nil }
            skip()
            guard i + 2 <= text.count, text[i] == UInt8(ascii: "i"), text[i + 1] == UInt8(ascii: "n") else { return nil }
            i += 2
            skip()
            let word: StaticString = "topics"
            guard i + 6 <= text.count, equals(UnsafeRawBufferPointer(rebasing: text[i..<(i + 6)]), word) else { return nil }
            i += 6
            return engine.subscribers(name)
        default:
            return nil
        }
    }
}
