import CommandLineOptions
import PushCredentials
import PushPayload
import PushTransport
import PushVocabulary

/// A bad gateway option or scenario file: one line naming the option (or the file and field) and why,
/// e.g. `--latency: 'fast' is not a latency (…)` or `scenario s.json: field 'latency.uniform_ms': …`.
typealias GatewayConfigurationError = UsageError

extension GatewayConfiguration {
    /// Parses `pushbench gateway` options (`--name value` or `--name=value`). A `--scenario` file is read
    /// first and the flags override it. Throws a one-line error naming the option, or the file and field.
    public static func parse(_ arguments: [String]) throws(UsageError) -> GatewayConfiguration {
        let parsed = try ParsedArguments(arguments, options: options)
        try parsed.expectPositionals(0...0, "nothing")
        return try parse(parsed)
    }

    /// The configuration for options already split by ``ParsedArguments`` against ``options``
    /// (what `pushbench gateway` does): scenario first, then the flags in order, then the checks that
    /// span options.
    public static func parse(_ arguments: ParsedArguments) throws(UsageError) -> GatewayConfiguration {
        var config = GatewayConfiguration()
        try options.apply(arguments, to: &config)
        try config.validate()
        return config
    }

    /// Every gateway option, declared once: `pushbench gateway`, `pushbench run --gateway-arg`, their help
    /// and docs/options.md come from it.
    public static var options: OptionTable<GatewayConfiguration> {
        OptionTable([
            .value("--listen", "HOST:PORT", \.listen, default: "127.0.0.1:8080",
                   help: "address to listen on: HOST:PORT, [IPv6]:PORT, or :PORT for 127.0.0.1; a host name such as localhost is resolved; port 0 picks one") { text, name throws(UsageError) in
                try listenAddress(text, name)
            },
            .value("--threads", "N", \.threads, default: "1", help: "event loops sharing the port") { text, name throws(UsageError) in
                try ValueParser.integer(text, option: name, range: 1...64)
            },
            .value("--correlate-prefix", "PREFIX", \.correlatePrefix,
                   help: "find a pipeline run's correlation ids (PREFIX: pb-, 4 hex digits, -) in every push, as pushbench pipeline's egress does, and print the counts at exit: for measuring what matching costs") {
                text, name throws(UsageError) in
                let b = Array(text.utf8)
                let hex = { (c: UInt8) in (c >= 48 && c <= 57) || (c >= 97 && c <= 102) }
                guard b.count == 8, text.hasPrefix("pb-"), b[3...6].allSatisfy(hex), b[7] == UInt8(ascii: "-") else {
                    throw UsageError("\(name): '\(text)' is not a correlation prefix (pb-, four lower-case hex digits, -: pb-7f3a-)")
                }
                return text
            },
            .value("--seed", "N", \.givenSeed,
                   help: "seed of the random behaviours (1 without it) and of the generated apns-ids and FCM message ids (random per start without it)") {
                text, name throws(UsageError) in
                guard let s = UInt64(text) else { throw UsageError("\(name): '\(text)' is not a whole number") }
                return s
            },
            Option("--scenario", "FILE", appliesFirst: true, help: "JSON scenario file (keys in docs/gateway.md); flags override it") {
                (config, path) throws(UsageError) in try config.applyScenario(file: path)
            },
            .value("--latency", "SPEC", \.latency,
                   help: "response delay: 2ms | 1ms-5ms (uniform) | p50=1ms,p99=10ms,p100=20ms") { text, name throws(UsageError) in
                do throws(UsageError) { return try latency(spec: text) } catch { throw UsageError("\(name): \(error.message)") }
            },
            Option("--fail", "REASON=FRACTION", repeats: true,
                   help: "answer a fraction of valid requests with an APNs reason (repeatable), e.g. --fail InternalServerError=0.01 --fail TooManyRequests=1%") {
                (config, value) throws(UsageError) in
                let (reason, fraction) = try keyedFraction(value, "--fail", key: "REASON",
                                                           unknown: "an APNs reason (e.g. InternalServerError)", APNsReason.init(rawValue:))
                config.failures.removeAll { $0.reason == reason }
                config.failures.append(FailureRate(reason: reason, fraction: fraction))
            },
            .value("--unregistered", "FRACTION", \.unregisteredFraction,
                   help: "fraction of tokens (the same ones every run) answered 410 Unregistered") { text, name throws(UsageError) in
                try fraction(text, name)
            },
            .value("--token-rate", "N[/BURST]", \.tokenRateLimit,
                   help: "per-token limit in requests/s (burst default N) answered 429 TooManyRequests") { text, name throws(UsageError) in
                try tokenRate(text, name)
            },
            .value("--max-streams", "N", \.maxConcurrentStreams, default: "1000", help: "SETTINGS_MAX_CONCURRENT_STREAMS") {
                text, name throws(UsageError) in UInt32(try ValueParser.integer(text, option: name, range: 1...Int(Int32.max)))
            },
            .flag("--streams-drop-on-error", \.dropStreamsOnError,
                  help: "drop MAX_CONCURRENT_STREAMS to 1 after a rejection, restore after a 200"),
            .value("--goaway-after-streams", "N", \.goawayAfterStreams, help: "GOAWAY after N streams on a connection") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 1...Int.max)
            },
            .value("--goaway-after", "DURATION", \.goawayAfterSeconds,
                   help: "GOAWAY a while after a connection opened (e.g. 30s)") { text, name throws(UsageError) in
                let s = try duration(text, name)
                guard s > 0 else { throw UsageError("\(name): '\(text)' must be more than 0") }
                return s
            },
            .value("--goaway-reason", "REASON", \.goawayReason, default: "Shutdown", help: "reason in the GOAWAY debug data") {
                text, name throws(UsageError) in
                guard let r = APNsReason(rawValue: text) else { throw UsageError("\(name): '\(text)' is not an APNs reason (e.g. Shutdown)") }
                return r
            },
            .value("--drop-rate", "FRACTION", \.dropRate, help: "fraction of requests that drop the connection abruptly (no GOAWAY)") {
                text, name throws(UsageError) in try fraction(text, name)
            },
            .value("--drop-after-streams", "N", \.dropAfterStreams, help: "drop the connection abruptly at its N-th stream") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 1...Int.max)
            },
            .value("--token-length", "N|MIN-MAX", \.tokenLength, default: "64-200",
                   help: "accepted token length in hex characters (even only)") { text, name throws(UsageError) in
                do throws(UsageError) { return try tokenLength(text) } catch { throw UsageError("\(name): \(error.message)") }
            },
            .flag("--topic-optional", \.requireTopic, setting: false,
                  help: "accept a request without apns-topic (as with a single-topic certificate)"),
            .value("--token-topics", "FILE", \.tokenTopics,
                   help: "lines 'token topic[,topic...]': a listed token sent with another topic is answered 400 DeviceTokenNotForTopic") {
                text, name throws(UsageError) in
                do throws(TokenFileError) { return try TokenTopics(path: text) } catch { throw UsageError("\(name): \(error.description)") }
            },
            .value("--not-for-topic", "FRACTION", \.notForTopicFraction,
                   help: "fraction of the tokens --token-topics does not list (chosen by hash and --seed) answered 400 DeviceTokenNotForTopic") {
                text, name throws(UsageError) in try fraction(text, name)
            },
            .value("--disallowed-topics", "LIST", \.disallowedTopics, help: "comma-separated topics answered 400 TopicDisallowed") {
                text, name throws(UsageError) in try topicList(text, name)
            },

            .value("--apns-auth", "off|token|cert", \.auth.requestedMode,
                   group: "APNs authentication (off unless given; docs/gateway.md):",
                   help: "provider tokens (token: implied by --apns-key), TLS client certificates (cert: implied by --client-ca), or none (off)") {
                text, name throws(UsageError) in try ValueParser.choice(text, option: name, APNsAuthMode.allCases)
            },
            Option("--apns-key", "KEYID=FILE", repeats: true,
                   help: "a key provider tokens may be signed with: its key id and its .p8 file (or a public-key PEM); repeatable") {
                (config, value) throws(UsageError) in config.auth.keys.append(try providerKey(value, "--apns-key"))
            },
            .value("--apns-team", "TEAMID", \.auth.teamID, help: "the team id every provider token's iss must name") {
                text, name throws(UsageError) in try ValueParser.credentialID(text, option: name, what: "a team id")
            },
            .value("--apns-token-interval", "T", \.auth.tokenUpdateIntervalNanos, default: "20m",
                   help: "a connection may change its provider token once per T; more often is answered 429 TooManyProviderTokenUpdates") {
                text, name throws(UsageError) in UInt64((try ValueParser.duration(text, option: name) * 1e9).rounded())
            },
            Option("--client-ca", "FILE", help: "PEM file of the CAs a client certificate must chain to (--apns-auth cert; needs TLS)") {
                (config, path) throws(UsageError) in
                // Read now, so a bad file stops the start (exit 2); the TLS server loads it again.
                do throws(CredentialError) { _ = try ClientCertificateVerifier(caFile: path) } catch {
                    throw UsageError("--client-ca: \(error.message)")
                }
                config.auth.clientCAFile = path
            },
            .value("--apns-environment", "ENV", \.auth.environment, default: "production",
                   help: "production or development: the APNs environment played; a certificate issued only for the other one is answered 403 BadCertificateEnvironment") {
                text, name throws(UsageError) in try ValueParser.choice(text, option: name, APNsEnvironment.allCases)
            },

            .value("--max-connections", "N", \.maxConnections,
                   group: "Limits and timeouts (every bound a client meets; docs/gateway.md):",
                   help: "connections open at once across every loop; more are closed at once (default: the descriptor limit less 64)") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 1...10_000_000)
            },
            .value("--max-header-size", "SIZE", \.limits.maxHeaderListSize, default: "16KiB",
                   help: "header bytes of one request (name + value + 32 per field), announced as SETTINGS_MAX_HEADER_LIST_SIZE; over it: 431") {
                text, name throws(UsageError) in try size(text, name, 1024...(16 << 20))
            },
            .value("--max-header-memory", "SIZE", \.limits.maxHeaderMemoryPerConnection, default: "4MiB",
                   help: "header bytes one connection holds for its open requests; over it: RST_STREAM REFUSED_STREAM") {
                text, name throws(UsageError) in try size(text, name, 1024...(1 << 30))
            },
            .value("--max-body", "SIZE", \.limits.maxRequestBodySize, default: "64KiB",
                   help: "request body bytes read and answered (413 past the protocol's limit); larger: RST_STREAM CANCEL (HTTP/1.1: 413, connection closed)") {
                text, name throws(UsageError) in try size(text, name, 5120...(1 << 30))
            },
            .value("--max-body-memory", "SIZE", \.limits.maxBodyMemoryPerConnection, default: "8MiB",
                   help: "request body bytes one connection holds for its open requests; over it: RST_STREAM ENHANCE_YOUR_CALM") {
                text, name throws(UsageError) in try size(text, name, 5120...(1 << 40))
            },
            .value("--max-body-total", "SIZE", \.limits.maxBodyMemory, default: "128MiB",
                   help: "request body bytes the whole gateway holds; over it: RST_STREAM REFUSED_STREAM") {
                text, name throws(UsageError) in try size(text, name, 5120...(1 << 40))
            },
            .value("--max-outbound-frames", "N", \.limits.maxOutboundFrames, default: "4096",
                   help: "frames queued for a client before the gateway stops reading from it") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 16...10_000_000)
            },
            .value("--max-control-frames", "N", \.limits.maxControlFramesPerSecond, default: "10000",
                   help: "SETTINGS, PING, WINDOW_UPDATE, PRIORITY, RST_STREAM and empty DATA frames per second per connection; over it: GOAWAY ENHANCE_YOUR_CALM") {
                text, name throws(UsageError) in try ValueParser.integer(text, option: name, range: 10...100_000_000)
            },
            .value("--handshake-timeout", "T", \.limits.handshakeTimeoutNanos, default: "10s",
                   help: "from accept to the client's connection preface; 0s: none") {
                text, name throws(UsageError) in try timeout(text, name)
            },
            .value("--idle-timeout", "T", \.limits.idleTimeoutNanos, default: "5m",
                   help: "a connection with no stream that long gets GOAWAY {\"reason\":\"IdleTimeout\"}, as APNs sends; 0s: never") {
                text, name throws(UsageError) in try timeout(text, name)
            },
            .value("--request-timeout", "T", \.limits.requestTimeoutNanos, default: "10s",
                   help: "from a request's HEADERS to its last byte; past it: RST_STREAM CANCEL; 0s: none") {
                text, name throws(UsageError) in try timeout(text, name)
            },
            .value("--write-timeout", "T", \.limits.writeTimeoutNanos, default: "10s",
                   help: "how long a client may read nothing while answers wait; past it: GOAWAY ENHANCE_YOUR_CALM, closed; 0s: none") {
                text, name throws(UsageError) in try timeout(text, name)
            },

            Option("--topic-subscribers", "NAME=N", repeats: true, default: "1000",
                   group: "FCM (POST /v1/projects/<id>/messages:send; the behaviours above apply with FCM's codes):",
                   help: "devices a topic send fans out to (repeatable); a bare N (or *=N) sets every other topic") {
                (config, value) throws(UsageError) in try config.fcm.addTopicSubscribers(value, "--topic-subscribers")
            },
            .value("--fanout-rate", "N/s", \.fcm.fanoutPerSecond, default: "10000/s",
                   help: "devices reached per second by fan-out") { text, name throws(UsageError) in
                let r = try ValueParser.quantity(text, option: name) { t throws(QuantityError) in try Quantity.rate(t) }
                guard r.count > 0 else { throw UsageError("\(name): '\(text)' is not a positive rate N/s (e.g. 10000/s)") }
                return r.perSecond
            },
            .value("--fcm-quota", "N/UNIT", \.fcm.quota,
                   help: "project quota, rolling window (e.g. 600000/min); 429 QUOTA_EXCEEDED over it") { text, name throws(UsageError) in
                guard let r = try? Quantity.rate(text), r.count >= 1, r.count == r.count.rounded() else {
                    throw UsageError("\(name): '\(text)' is not a quota N/UNIT with a whole N ≥ 1 (e.g. 600000/min)")
                }
                return FCMQuota(messages: UInt64(r.count), windowNanos: UInt64(r.windowSeconds * 1e9))
            },
            .value("--token-churn", "F/s", \.fcm.tokenChurnPerSecond,
                   help: "fraction of the token space invalidated per second (APNs: 410, FCM: 404)") { text, name throws(UsageError) in
                try ValueParser.tokenChurn(text, option: name)
            },
            .value("--capture", "N", \.fcm.capture, help: "keep the first N delivered Apple pushes (headers + payload) in /stats") {
                text, name throws(UsageError) in
                guard let n = Int(text), (0...100_000).contains(n) else { throw UsageError("\(name): '\(text)' is not a count 0...100000") }
                return n
            },
            Option("--fcm-fail", "CODE=FRACTION", repeats: true,
                   help: "answer a fraction of valid FCM sends with an FCM error code (repeatable), e.g. --fcm-fail UNAVAILABLE=1%; without it --fail reasons are mapped") {
                (config, value) throws(UsageError) in
                let (code, fraction) = try keyedFraction(value, "--fcm-fail", key: "CODE",
                                                         unknown: "an FCM error code (e.g. UNAVAILABLE, INTERNAL, UNREGISTERED)",
                                                         FCMErrorCode.init(rawValue:))
                config.fcm.failures.removeAll { $0.code == code }
                config.fcm.failures.append(FCMFailureRate(code: code, fraction: fraction))
            },
            .value("--fcm-apns-topic", "TOPIC", \.fcm.appleTopic, default: "com.example.pushbench",
                   help: "apns-topic of the generated APNs request") { text, name throws(UsageError) in
                guard !text.isEmpty, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    throw UsageError("\(name): '\(text)' is not a bundle id")
                }
                return text
            },
            .value("--fcm-auth", "off|oauth", \.fcm.auth, default: "off",
                   help: "oauth: the send route accepts only unexpired access tokens from the token endpoint (401 UNAUTHENTICATED otherwise); off: any bearer token") {
                text, name throws(UsageError) in try ValueParser.choice(text, option: name, FCMAuthMode.allCases)
            },
            .value("--fcm-service-account", "FILE", \.fcm.serviceAccount,
                   help: "service-account JSON whose key checks the token endpoint's assertions (pushbench credentials fcm writes one); without it any well-formed assertion is accepted") {
                text, name throws(UsageError) in
                do throws(CredentialError) { return try ServiceAccount(contentsOfFile: text) } catch {
                    throw UsageError("\(name): \(error.message)")
                }
            },
            Option("--fcm-token-path", "PATH", repeats: true, default: "/token",
                   help: "another path the OAuth2 token endpoint answers on, besides /token (repeatable), e.g. the path of your service account's token_uri") {
                (config, value) throws(UsageError) in
                guard value.hasPrefix("/"), !value.hasPrefix("/v1/"), !value.hasPrefix("/3/"), value != "/stats",
                      value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    throw UsageError("--fcm-token-path: '\(value)' is not a path of its own (it must start with / and not be an FCM, APNs or /stats path)")
                }
                if !config.fcm.tokenPaths.contains(value) { config.fcm.tokenPaths.append(value) }
            },
            .value("--fcm-token-lifetime", "T", \.fcm.accessTokenLifetimeSeconds, default: "3599s",
                   help: "expires_in of the access tokens the token endpoint issues (short ones test a sender's refresh)") {
                text, name throws(UsageError) in
                let seconds = try ValueParser.duration(text, option: name)
                guard seconds >= 1, seconds <= 86_400, seconds == seconds.rounded() else {
                    throw UsageError("\(name): '\(text)' is not a whole number of seconds from 1s to 24h")
                }
                return Int(seconds)
            },
        ] + GatewayTLS.options)
    }

    /// A size in bytes (`16KiB`, `4MiB`, `65536`) within `range`.
    static func size(_ text: String, _ name: String, _ range: ClosedRange<Int>) throws(UsageError) -> Int {
        let n = try ValueParser.quantity(text, option: name, Quantity.size)
        guard range.contains(n) else { throw UsageError("\(name): \(text) is out of range (\(range.lowerBound)...\(range.upperBound) bytes)") }
        return n
    }

    /// A timeout in ns (`10s`, `500ms`, `5m`); `0s` turns it off. At most a day.
    static func timeout(_ text: String, _ name: String) throws(UsageError) -> UInt64 {
        let seconds = try ValueParser.duration(text, option: name)
        guard seconds <= 86_400 else { throw UsageError("\(name): '\(text)' is over a day") }
        return UInt64((seconds * 1e9).rounded())
    }

    /// `--seed` (and the scenario's `seed`): the seed of the behaviours, and of the generated ids, which are
    /// random per start without it.
    var givenSeed: UInt64 {
        get { seed }
        set { seed = newValue; idSeed = newValue }
    }

    /// `a,b,c`: topics as `apns-topic` carries them (printable ASCII, no spaces), none empty.
    static func topicList(_ value: String, _ name: String) throws(UsageError) -> [String] {
        let parts = value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        for p in parts {
            guard !p.isEmpty else { throw UsageError("\(name): '\(value)' has an empty topic (a list is topic[,topic...])") }
            guard p.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw UsageError("\(name): '\(p)' is not a topic (printable ASCII without spaces, e.g. com.example.app)")
            }
        }
        return parts
    }

    /// `--listen`'s (host, port) as one value, so the table can store it in one step.
    var listen: (host: String, port: Int) {
        get { (host, port) }
        set { (host, port) = newValue }
    }

    /// `KEY=FRACTION` (`--fail`, `--fcm-fail`): the key looked up by `lookup`, the fraction 0...1 or a percentage.
    static func keyedFraction<Key>(_ value: String, _ name: String, key: String, unknown: String,
                                   _ lookup: (String) -> Key?) throws(UsageError) -> (Key, Double) {
        guard let eq = value.firstIndex(of: "=") else { throw UsageError("\(name): '\(value)' is not \(key)=FRACTION") }
        let keyName = String(value[..<eq])
        guard let found = lookup(keyName) else { throw UsageError("\(name): '\(keyName)' is not \(unknown)") }
        return (found, try fraction(String(value[value.index(after: eq)...]), name))
    }

    /// `KEYID=FILE`: a provider key read from FILE now, so a bad file stops the start (exit 2).
    static func providerKey(_ value: String, _ name: String) throws(UsageError) -> APNsProviderKey {
        guard let eq = value.firstIndex(of: "=") else { throw UsageError("\(name): '\(value)' is not KEYID=FILE (e.g. ABC123DEFG=AuthKey_ABC123DEFG.p8)") }
        let id = try ValueParser.credentialID(String(value[..<eq]), option: name, what: "a key id")
        let path = String(value[value.index(after: eq)...])
        guard !path.isEmpty else { throw UsageError("\(name): '\(value)' names no file") }
        do throws(CredentialError) { return try APNsProviderKey(keyID: id, path: path) } catch {
            throw UsageError("\(name): \(error.message)")
        }
    }

    /// `HOST:PORT`, `[IPv6]:PORT` or `:PORT`, its host resolved (``HostResolver/listenAddress(_:)``).
    static func listenAddress(_ value: String, _ name: String) throws(UsageError) -> (host: String, port: Int) {
        try ValueParser.quantity(value, option: name, HostResolver.listenAddress)
    }

    /// `N` or `N/BURST` requests per second per token.
    static func tokenRate(_ value: String, _ name: String) throws(UsageError) -> TokenRateLimit {
        let parts = value.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let rate = Double(parts[0]), rate > 0, rate.isFinite else {
            throw UsageError("\(name): '\(value)' is not a positive rate N or N/BURST")
        }
        var burst = max(1, rate)
        if parts.count == 2 {
            guard let b = Double(parts[1]), b >= 1, b.isFinite else {
                throw UsageError("\(name): '\(value)' has a burst that is not a number ≥ 1")
            }
            burst = b
        }
        return TokenRateLimit(perSecond: rate, burst: burst)
    }
}

extension FCMConfiguration {
    /// One `--topic-subscribers` value: `NAME=N` for a topic, `N` or `*=N` for every other topic.
    mutating func addTopicSubscribers(_ value: String, _ name: String) throws(UsageError) {
        func fail(_ why: String) -> UsageError { UsageError("\(name): '\(value)' \(why)") }
        if let eq = value.firstIndex(of: "=") {
            let topic = String(value[..<eq])
            guard let n = Int(value[value.index(after: eq)...]), n >= 0 else { throw fail("has a count that is not a whole number ≥ 0") }
            if topic == "*" { defaultSubscribers = n; return }
            guard FCMNames.isValidTopic(topic) else { throw fail("has a topic name outside [a-zA-Z0-9-_.~%]") }
            topicSubscribers[topic] = n
        } else {
            guard let n = Int(value), n >= 0 else { throw fail("is not NAME=N or N (e.g. news=100000)") }
            defaultSubscribers = n
        }
    }
}
