import Foundation
import LoadGenerator
import MockGateway
import PushCredentials
import PushPayload
import PushTransport
import PushVocabulary

extension RunCommand {
    /// The options of a run, each declared once: name, value syntax, default, help, typed parser.
    static var options: OptionTable<RunOptions> {
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
            .value("--retry", "N", \.retries, default: "0", help: "resend up to N times a request the server did not act on: cut off by a lost connection, refused (REFUSED_STREAM) or above a GOAWAY's last stream (those are resent up to 8 times more, even without it); never one reset otherwise") {
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
            .flag("--realtime", \.realtime,
                  help: "run the driver threads and the embedded gateway's real-time (SCHED_FIFO, lowest priority) so no other process's thread delays them; needs root or CAP_SYS_NICE"),
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
                text, name throws(UsageError) in try ValueParser.tokenChurn(text, option: name)
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
                try ValueParser.credentialID(text, option: name, what: "a key id")
            },
            .value("--team-id", "ID", \.teamID, help: "the team id (the token's iss)") { text, name throws(UsageError) in
                try ValueParser.credentialID(text, option: name, what: "a team id")
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
                let (host, port) = try ValueParser.quantity(text, option: name, HostResolver.listenAddress)
                return MetricsAddress(host: host, port: port)
            },
        ] + DashboardOptions.options(\.dashboard, \.dashboardViewers, \.dashboardLingerSeconds, what: "run")
            + Self.objectiveOptions)
    }
}
