import CommandLineOptions
import Foundation
import PushPayload
import PushTransport
import PushVocabulary

/// Everything the mock gateway does, from `pushbench gateway` flags and/or a JSON scenario file.
///
/// All behaviours are off by default: a valid request is answered 200 at once.
///
/// ```swift
/// let config = try GatewayConfiguration.parse(["--latency", "1ms-5ms", "--unregistered", "0.05"])
/// let gateway = try EmbeddedGateway.start(config)
/// ```
public struct GatewayConfiguration: Equatable, Sendable {
    /// Address to listen on (`--listen HOST:PORT`).
    public var host = "127.0.0.1"
    /// Port to listen on; 0 picks a free one.
    public var port = 8080
    /// Event loops sharing the port (`--threads`).
    public var threads = 1
    /// Whether the loop threads run real-time (`SCHED_FIFO`; a load run's `--realtime` sets it for the
    /// gateway it embeds).
    public var realtime = false
    /// Seed of every random behaviour (`--seed`); each loop uses its own stream derived from it.
    public var seed: UInt64 = 1
    /// Seed of the generated apns-ids and FCM message ids: `--seed` when it was given; nil makes them
    /// random per start, as the real services' ids are.
    var idSeed: UInt64?
    /// Response latency (`--latency`).
    var latency = LatencyDistribution.none
    /// Injected failures (`--fail REASON=FRACTION`, repeatable).
    var failures: [FailureRate] = []
    /// Fraction of device tokens answered 410 Unregistered (`--unregistered`), chosen by token hash.
    var unregisteredFraction = 0.0
    /// Per-token rate limit answered 429 TooManyRequests (`--token-rate N[/BURST]`).
    var tokenRateLimit: TokenRateLimit?
    /// SETTINGS_MAX_CONCURRENT_STREAMS (`--max-streams`).
    public var maxConcurrentStreams: UInt32 = 1000
    /// Drop SETTINGS_MAX_CONCURRENT_STREAMS to 1 after a rejected request and restore it after the next
    /// accepted one, as APNs was seen to do (`--streams-drop-on-error`).
    var dropStreamsOnError = false
    /// Send GOAWAY after this many streams on a connection (`--goaway-after-streams`).
    var goawayAfterStreams: Int?
    /// Send GOAWAY this many seconds after a connection opened (`--goaway-after`).
    var goawayAfterSeconds: Double?
    /// The `reason` in the GOAWAY debug data (`--goaway-reason`).
    var goawayReason = APNsReason.shutdown
    /// Fraction of requests that make the gateway drop the connection abruptly (`--drop-rate`).
    var dropRate = 0.0
    /// Drop the connection abruptly at this many streams (`--drop-after-streams`).
    var dropAfterStreams: Int?
    /// Accepted device token lengths in hex characters (`--token-length 64` or `64-200`); always even.
    var tokenLength = 64...200
    /// Which topics listed device tokens belong to (`--token-topics FILE`); a listed token sent with another
    /// topic is answered 400 DeviceTokenNotForTopic.
    var tokenTopics: TokenTopics? { didSet { updateChecksTokenTopics() } }
    /// Fraction of device tokens, among those `tokenTopics` does not list, answered 400 DeviceTokenNotForTopic
    /// (`--not-for-topic`), chosen by token hash and `seed`.
    var notForTopicFraction = 0.0 { didSet { updateChecksTokenTopics() } }
    /// Topics answered 400 TopicDisallowed (`--disallowed-topics`).
    var disallowedTopics: [String] = []
    /// Whether a missing `apns-topic` is answered 400 MissingTopic (`--topic-optional` turns it off,
    /// as a single-topic certificate would).
    var requireTopic = true
    /// The bounds and timeouts every connection is held to (`--max-header-size` … `--write-timeout`;
    /// docs/gateway.md "Limits and timeouts"). `maxBodyMemory` is the whole gateway's, shared by its loops.
    public var limits = GatewayConfiguration.defaultLimits
    /// The most connections open at once across every loop (`--max-connections`); nil: derived from the
    /// descriptor limit when the gateway starts.
    public var maxConnections: Int?
    /// TLS (`--tls`, `--tls-cert`/`--tls-key`, `--tls-name`, `--tls-cert-out`); off by default (h2c).
    public var tls = GatewayTLS()
    /// The scenario file read, if any.
    var scenarioFile: String?
    /// The FCM route's behaviours and token churn (FCM/FCMConfiguration.swift).
    public var fcm = FCMConfiguration()
    /// A pipeline run's correlator: every push answered is matched to its request and queued for the
    /// run (nil: no matching).
    public var correlator: PushCorrelator?
    /// `--correlate-prefix`: a standalone gateway finds this pipeline run's ids (`pb-XXXX-`) in every push
    /// and counts them, as `pushbench pipeline`'s egress does (the gateway command makes the correlator).
    public var correlatePrefix: String?
    /// Where a standalone gateway keeps the matched pushes for `POST /pipeline/arrivals` (made at start
    /// when ``correlatePrefix`` is set).
    public var mailbox: CorrelationMailbox?
    /// APNs authentication: provider tokens or client certificates (Auth/APNsAuthConfiguration.swift).
    public var auth = APNsAuthConfiguration()

    /// The defaults: 127.0.0.1:8080, one loop, no behaviour.
    public init() {}

    /// The gateway's limits: the transport's, with the idle GOAWAY carrying APNs' `IdleTimeout` reason.
    static var defaultLimits: ServerLimits {
        var l = ServerLimits()
        // Push payloads are 5 KB at most: bodies up to this are read and answered 413, larger ones reset.
        l.maxRequestBodySize = 64 * 1024
        l.idleGoAwayDebugData = Array("{\"reason\":\"\(APNsReason.idleTimeout.rawValue)\"}".utf8)
        return l
    }

    /// The descriptors kept for everything but connections (listeners, the loops' own handles, files).
    public static let reservedDescriptors = 64

    /// `--max-connections` when not given: what the descriptor limit leaves once `reserved` are kept.
    public static func defaultMaxConnections(descriptorLimit: Int, reserved: Int = reservedDescriptors) -> Int {
        max(1, descriptorLimit - reserved)
    }

    /// Reads a scenario file (JSON object; keys in docs/gateway.md) into this configuration.
    mutating func applyScenario(file path: String) throws(GatewayConfigurationError) {
        let bytes: [UInt8]
        do throws(InputFileError) { bytes = try InputFile.bytes(path) } catch {
            throw GatewayConfigurationError("scenario \(path): \(error.reason)")
        }
        let root: JSONValue
        do throws(JSONError) { root = try JSONValue.parse(bytes) } catch {
            throw GatewayConfigurationError("scenario \(path):\(error.line):\(error.column): not valid JSON: \(error.code.reason)")
        }
        guard let object = root.object else {
            throw GatewayConfigurationError("scenario \(path): the top level must be a JSON object")
        }
        var reader = ScenarioReader(path: path)
        try reader.apply(object, to: &self)
        scenarioFile = path
        do throws(GatewayConfigurationError) { try validate() } catch {
            throw GatewayConfigurationError("scenario \(path): \(error.message)")
        }
    }

    /// Checks combinations that no single option can (failure fractions summing over 1).
    func validate() throws(GatewayConfigurationError) {
        let total = failures.reduce(0) { $0 + $1.fraction }
        if total > 1.0000001 {
            throw GatewayConfigurationError("failure fractions add up to \(total), more than 1")
        }
        try fcm.validate()
        try auth.validate()
        try tls.validate()
    }

    /// Whether `token` (hex) is one of the tokens this configuration answers 410 Unregistered.
    func isUnregistered(token: String) -> Bool {
        var t = token
        return t.withUTF8 { isUnregistered(hash: tokenHash(UnsafeRawBufferPointer($0))) }
    }

    @inline(__always)
    func isUnregistered(hash: UInt64) -> Bool {
        unregisteredFraction > 0 && Double(hash >> 11) * 0x1.0p-53 < unregisteredFraction
    }

    /// Whether the gateway answers `token` (hex) sent with `topic` 400 DeviceTokenNotForTopic.
    func isNotForTopic(token: String, topic: String?) -> Bool {
        var t = token, p = topic ?? ""
        return t.withUTF8 { tb in
            p.withUTF8 { pb in
                isNotForTopic(token: UnsafeRawBufferPointer(tb), hash: tokenHash(UnsafeRawBufferPointer(tb)),
                              topic: topic == nil ? nil : UnsafeRawBufferPointer(pb))
            }
        }
    }

    /// Whether the token/topic checks are on at all (so a request's token hash is worth computing).
    /// Kept in step with `tokenTopics` and `notForTopicFraction` rather than computed: it is read per
    /// request, and reading `tokenTopics` copies the table's references.
    private(set) var checksTokenTopics = false
    private mutating func updateChecksTokenTopics() { checksTokenTopics = tokenTopics != nil || notForTopicFraction > 0 }

    /// A listed token (`tokenTopics`) is checked against its topics when the request has a topic; any other
    /// token is in the `notForTopicFraction` picked by its hash mixed with `seed` (a set apart from the
    /// unregistered one, which ignores the seed).
    @inline(__always)
    func isNotForTopic(token: UnsafeRawBufferPointer, hash: UInt64, topic: UnsafeRawBufferPointer?) -> Bool {
        if let tokenTopics, let allowed = tokenTopics.allows(token: token, hash: hash, topic: topic ?? UnsafeRawBufferPointer(start: nil, count: 0)) {
            return topic != nil && !allowed
        }
        return notForTopicFraction > 0 && Double(mix(hash ^ mix(seed ^ 0x7051_C0DE)) >> 11) * 0x1.0p-53 < notForTopicFraction
    }

    /// Whether `topic` is one of `disallowedTopics`.
    @inline(__always)
    func isDisallowed(topic: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < disallowedTopics.count {
            var name = disallowedTopics[i]
            let same = name.withUTF8 { n -> Bool in
                guard n.count == topic.count else { return false }
                var j = 0
                while j < n.count && n[j] == topic[j] { j += 1 }
                return j == n.count
            }
            if same { return true }
            i += 1
        }
        return false
    }

    // MARK: value parsers (shared by flags and the scenario file)

    static func fraction(_ text: String, _ name: String) throws(GatewayConfigurationError) -> Double {
        try ValueParser.quantity(text, option: name, Quantity.fraction)
    }

    static func duration(_ text: String, _ name: String) throws(GatewayConfigurationError) -> Double {
        let d = try ValueParser.quantity(text, option: name) { t throws(QuantityError) in try Quantity.duration(t) }
        guard let nanos = wholeNanos(d) else { throw GatewayConfigurationError("\(name): '\(text)' is not under an hour") }
        return Double(nanos) / 1e9
    }

    /// A duration under an hour in whole ns (``Quantity/duration(_:bareNumber:)``: `2ms`, `500us`, `1.5s`,
    /// `1m30s`; a number needs its unit); the error says what is wrong and lists the forms.
    static func durationNanos(_ text: String) throws(GatewayConfigurationError) -> UInt64 {
        let d: ParsedDuration
        do throws(QuantityError) { d = try Quantity.duration(text) } catch { throw GatewayConfigurationError(error.message) }
        guard let n = wholeNanos(d) else { throw GatewayConfigurationError("'\(text)' is not under an hour") }
        return n
    }

    private static func wholeNanos(_ d: ParsedDuration) -> UInt64? {
        d.nanoseconds < 3.6e12 ? UInt64(d.nanoseconds.rounded()) : nil
    }

    /// `2ms` (fixed), `1ms-5ms` (uniform), `p50=1ms,p99=10ms,p100=20ms` (percentiles), `0` or `none`.
    static func latency(spec: String) throws(GatewayConfigurationError) -> LatencyDistribution {
        if spec == "none" || spec == "0" { return .none }
        if spec.hasPrefix("p") {
            var points: [LatencyPoint] = []
            for part in spec.split(separator: ",") {
                let kv = part.split(separator: "=")
                guard kv.count == 2, kv[0].hasPrefix("p"), let pct = Double(kv[0].dropFirst()), pct >= 0, pct <= 100 else {
                    throw GatewayConfigurationError("'\(part)' is not pNN=DURATION (e.g. p99=10ms)")
                }
                points.append(LatencyPoint(percentile: pct, nanos: try durationNanos(String(kv[1]))))
            }
            return try percentiles(points)
        }
        if let dash = spec.firstIndex(of: "-") {
            let a = String(spec[..<dash]), b = String(spec[spec.index(after: dash)...])
            let lo: UInt64, hi: UInt64
            do throws(GatewayConfigurationError) { lo = try durationNanos(a); hi = try durationNanos(b) } catch {
                throw GatewayConfigurationError("'\(spec)' is not MIN-MAX (e.g. 1ms-5ms): \(error.message)")
            }
            guard lo <= hi else { throw GatewayConfigurationError("'\(spec)': the minimum is above the maximum") }
            return .uniform(minNanos: lo, maxNanos: hi)
        }
        let n: UInt64
        do throws(GatewayConfigurationError) { n = try durationNanos(spec) } catch {
            throw GatewayConfigurationError(Double(spec) != nil ? error.message
                                            : "'\(spec)' is not a latency (e.g. 2ms, 1ms-5ms, p50=1ms,p99=10ms)")
        }
        return n == 0 ? .none : .fixed(nanos: n)
    }

    static func percentiles(_ points: [LatencyPoint]) throws(GatewayConfigurationError) -> LatencyDistribution {
        guard !points.isEmpty else { throw GatewayConfigurationError("no percentile points") }
        let sorted = points.sorted { $0.percentile < $1.percentile }
        for i in sorted.indices.dropFirst() {
            if sorted[i].percentile == sorted[i - 1].percentile {
                throw GatewayConfigurationError("percentile \(sorted[i].percentile) given twice")
            }
            if sorted[i].nanos < sorted[i - 1].nanos {
                throw GatewayConfigurationError("latency at p\(sorted[i].percentile) is below the latency at p\(sorted[i - 1].percentile)")
            }
        }
        return .percentiles(sorted)
    }

    static func tokenLength(_ text: String) throws(GatewayConfigurationError) -> ClosedRange<Int> {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let lo = Int(parts[0]), let hi = Int(parts[parts.count - 1]) else {
            throw GatewayConfigurationError("'\(text)' is not N or MIN-MAX (e.g. 64 or 64-200)")
        }
        guard lo >= 2, lo <= hi, hi <= 1024 else {
            throw GatewayConfigurationError("'\(text)' must be within 2...1024 with MIN ≤ MAX")
        }
        guard lo % 2 == 0 || hi > lo else { throw GatewayConfigurationError("'\(text)': a hex token has an even length") }
        return lo...hi
    }
}

/// Reads the scenario file's JSON object, naming the field of every mistake.
private struct ScenarioReader {
    let path: String

    func error(_ field: String, _ why: String) -> GatewayConfigurationError {
        GatewayConfigurationError("scenario \(path): field '\(field)': \(why)")
    }

    func number(_ value: JSONValue, _ field: String) throws(GatewayConfigurationError) -> Double {
        guard let n = value.number, n.isFinite else { throw error(field, "must be a number") }
        return n
    }

    func integer(_ value: JSONValue, _ field: String, _ range: ClosedRange<Int>) throws(GatewayConfigurationError) -> Int {
        let d = try number(value, field)
        guard d == d.rounded(), d >= Double(range.lowerBound), d <= Double(range.upperBound) else {
            let bound = range.upperBound == Int.max ? "at least \(range.lowerBound)" : "\(range.lowerBound)...\(range.upperBound)"
            throw error(field, "must be a whole number, \(bound)")
        }
        return Int(d)
    }

    func fraction(_ value: JSONValue, _ field: String) throws(GatewayConfigurationError) -> Double {
        let d = try number(value, field)
        guard d >= 0, d <= 1 else { throw error(field, "must be a fraction between 0 and 1") }
        return d
    }

    func bool(_ value: JSONValue, _ field: String) throws(GatewayConfigurationError) -> Bool {
        guard let b = value.bool else { throw error(field, "must be true or false") }
        return b
    }

    func object(_ value: JSONValue, _ field: String) throws(GatewayConfigurationError) -> [String: JSONValue] {
        guard let o = value.object else { throw error(field, "must be a JSON object") }
        return o
    }

    func milliseconds(_ value: JSONValue, _ field: String) throws(GatewayConfigurationError) -> UInt64 {
        let ms = try number(value, field)
        guard ms >= 0, ms < 3_600_000 else { throw error(field, "must be milliseconds between 0 and 3600000") }
        return UInt64((ms * 1e6).rounded())
    }

    func checkKeys(_ o: [String: JSONValue], _ allowed: [String], _ prefix: String) throws(GatewayConfigurationError) {
        for key in o.keys.sorted() where !allowed.contains(key) {
            throw error(prefix + key, "unknown field (expected one of \(allowed.joined(separator: ", ")))")
        }
    }

    mutating func apply(_ o: [String: JSONValue], to c: inout GatewayConfiguration) throws(GatewayConfigurationError) {
        // "fcm" is read by FCMConfiguration (FCM/FCMConfiguration.swift).
        try checkKeys(o.filter { $0.key != "fcm" }, ["listen", "threads", "seed", "latency", "failures", "unregistered_fraction", "token_rate_limit",
                          "max_concurrent_streams", "streams_drop_on_error", "goaway", "drops", "token_length",
                          "require_topic", "token_topics", "not_for_topic_fraction", "disallowed_topics"], "")
        if let v = o["fcm"] { try c.fcm.applyScenario(v, path: path) }
        if let v = o["listen"] {
            guard let s = v.string else { throw error("listen", "must be a string HOST:PORT") }
            do throws(GatewayConfigurationError) {
                (c.host, c.port) = try GatewayConfiguration.listenAddress(s, "--listen")
            } catch { throw self.error("listen", innerMessage(error)) }
        }
        if let v = o["threads"] { c.threads = try integer(v, "threads", 1...64) }
        if let v = o["seed"] { c.givenSeed = UInt64(try integer(v, "seed", 0...Int.max)) }
        if let v = o["token_topics"] {
            guard let file = v.string else { throw error("token_topics", "must be a file name") }
            do throws(TokenFileError) { c.tokenTopics = try TokenTopics(path: file) } catch {
                throw self.error("token_topics", error.description)
            }
        }
        if let v = o["not_for_topic_fraction"] { c.notForTopicFraction = try fraction(v, "not_for_topic_fraction") }
        if let v = o["disallowed_topics"] {
            guard let list = v.array?.compactMap(\.string), list.count == v.array?.count else { throw error("disallowed_topics", "must be an array of topic strings") }
            do throws(GatewayConfigurationError) { c.disallowedTopics = try GatewayConfiguration.topicList(list.joined(separator: ","), "disallowed_topics") } catch {
                throw self.error("disallowed_topics", innerMessage(error))
            }
        }
        if let v = o["latency"] { c.latency = try latency(v) }
        if let v = o["failures"] {
            c.failures = []
            for (name, rate) in try object(v, "failures").sorted(by: { $0.key < $1.key }) {
                guard let reason = APNsReason(rawValue: name) else {
                    throw error("failures.\(name)", "not an APNs reason (e.g. InternalServerError)")
                }
                c.failures.append(FailureRate(reason: reason, fraction: try fraction(rate, "failures.\(name)")))
            }
        }
        if let v = o["unregistered_fraction"] { c.unregisteredFraction = try fraction(v, "unregistered_fraction") }
        if let v = o["token_rate_limit"] {
            let t = try object(v, "token_rate_limit")
            try checkKeys(t, ["per_second", "burst"], "token_rate_limit.")
            guard let r = t["per_second"] else { throw error("token_rate_limit.per_second", "is required") }
            let rate = try number(r, "token_rate_limit.per_second")
            guard rate > 0 else { throw error("token_rate_limit.per_second", "must be more than 0") }
            var burst = max(1, rate)
            if let b = t["burst"] {
                burst = try number(b, "token_rate_limit.burst")
                guard burst >= 1 else { throw error("token_rate_limit.burst", "must be at least 1") }
            }
            c.tokenRateLimit = TokenRateLimit(perSecond: rate, burst: burst)
        }
        if let v = o["max_concurrent_streams"] {
            c.maxConcurrentStreams = UInt32(try integer(v, "max_concurrent_streams", 1...Int(Int32.max)))
        }
        if let v = o["streams_drop_on_error"] { c.dropStreamsOnError = try bool(v, "streams_drop_on_error") }
        if let v = o["goaway"] {
            let g = try object(v, "goaway")
            try checkKeys(g, ["after_streams", "after_seconds", "reason"], "goaway.")
            if let s = g["after_streams"] { c.goawayAfterStreams = try integer(s, "goaway.after_streams", 1...Int.max) }
            if let s = g["after_seconds"] {
                let d = try number(s, "goaway.after_seconds")
                guard d > 0 else { throw error("goaway.after_seconds", "must be more than 0") }
                c.goawayAfterSeconds = d
            }
            if let s = g["reason"] {
                guard let name = s.string, let r = APNsReason(rawValue: name) else {
                    throw error("goaway.reason", "must be an APNs reason string (e.g. \"Shutdown\")")
                }
                c.goawayReason = r
            }
        }
        if let v = o["drops"] {
            let d = try object(v, "drops")
            try checkKeys(d, ["rate", "after_streams"], "drops.")
            if let s = d["rate"] { c.dropRate = try fraction(s, "drops.rate") }
            if let s = d["after_streams"] { c.dropAfterStreams = try integer(s, "drops.after_streams", 1...Int.max) }
        }
        if let v = o["token_length"] {
            if let s = v.string {
                do throws(GatewayConfigurationError) { c.tokenLength = try GatewayConfiguration.tokenLength(s) } catch { throw self.error("token_length", innerMessage(error)) }
            } else {
                let n = try integer(v, "token_length", 2...1024)
                guard n % 2 == 0 else { throw error("token_length", "a hex token has an even length") }
                c.tokenLength = n...n
            }
        }
        if let v = o["require_topic"] { c.requireTopic = try bool(v, "require_topic") }
    }

    func latency(_ v: JSONValue) throws(GatewayConfigurationError) -> LatencyDistribution {
        if let s = v.string {
            do throws(GatewayConfigurationError) { return try GatewayConfiguration.latency(spec: s) } catch { throw self.error("latency", innerMessage(error)) }
        }
        let l = try object(v, "latency")
        try checkKeys(l, ["fixed_ms", "uniform_ms", "percentiles_ms"], "latency.")
        guard l.count == 1 else { throw error("latency", "give exactly one of fixed_ms, uniform_ms, percentiles_ms") }
        if let f = l["fixed_ms"] {
            let n = try milliseconds(f, "latency.fixed_ms")
            return n == 0 ? .none : .fixed(nanos: n)
        }
        if let u = l["uniform_ms"] {
            guard let pair = u.array, pair.count == 2 else { throw error("latency.uniform_ms", "needs two numbers [min, max]") }
            let lo = try milliseconds(pair[0], "latency.uniform_ms[0]"), hi = try milliseconds(pair[1], "latency.uniform_ms[1]")
            guard lo <= hi else { throw error("latency.uniform_ms", "the minimum is above the maximum") }
            return .uniform(minNanos: lo, maxNanos: hi)
        }
        let p = try object(l["percentiles_ms"]!, "latency.percentiles_ms")
        var points: [LatencyPoint] = []
        for (key, value) in p {
            let field = "latency.percentiles_ms.\(key)"
            let k = key.hasPrefix("p") ? String(key.dropFirst()) : key
            guard let pct = Double(k), pct >= 0, pct <= 100 else { throw error(field, "the key must be a percentile 0...100 (e.g. \"99\" or \"p99\")") }
            points.append(LatencyPoint(percentile: pct, nanos: try milliseconds(value, field)))
        }
        do throws(GatewayConfigurationError) { return try GatewayConfiguration.percentiles(points) } catch { throw self.error("latency.percentiles_ms", innerMessage(error)) }
    }
}

/// The message of a nested error, without the option name it may start with.
private func innerMessage(_ e: GatewayConfigurationError) -> String {
    if let r = e.message.range(of: ": "), e.message.hasPrefix("--") { return String(e.message[r.upperBound...]) }
    return e.message
}
