import Foundation
import LoadGenerator
import MockGateway
import PushCredentials
import PushPayload
import PushTransport
import PushVocabulary

/// `pushbench [run]`: a load run against --target or the embedded mock gateway.
struct RunCommand: PushbenchCommand {
    static let name = "run"
    static let abstract = "a load run (default): paced HTTP/2 pushes, latency histograms, a results folder"
    static let usage = """
    USAGE: pushbench [run] [options]

    Drives a push endpoint at an exact open-loop rate over multiplexed HTTP/2 streams and writes
    results/<run-id>/ (summary.json, latency.hgrm, latency.hlog, timeline.csv, report.svg).
    With no --target, starts the embedded mock APNs/FCM gateway on a free loopback port.
    """
    static let footer: String? = """
        EXIT STATUS: 0 the run completed (whatever the gateway answered); 1 a failure (the message says
        which); 2 bad input, found before any traffic (an option, a file, a results root that cannot take
        a run); 3 target unreachable; 4 the run completed but not one measured request was answered;
        5 the results could not be written under --out at the end and were written to a fallback folder
        (the message names it); 6 the run completed and an objective (--slo) did not hold (4 and 5 come
        first). A run that did not keep its rate exits 0 with a warning on stderr, unless --slo rate_kept.
        """

    /// The validated options.
    let options: RunOptions

    init(arguments: ParsedArguments) throws(UsageError) {
        try arguments.expectPositionals(0...0, "nothing")
        var chosen = RunOptions()
        try Self.options.apply(arguments, to: &chosen)
        // --requests N asks for N pushes: no unasked-for warm-up traffic before them (against a real
        // endpoint those are real notifications), unless --warmup says so.
        if chosen.requests != nil && !arguments.contains("--warmup") { chosen.warmupSeconds = 0 }
        try Self.checkSchedule(&chosen, arguments)
        try Self.checkSegment(chosen)
        // Options that would contradict each other are refused rather than one silently winning.
        if chosen.requests != nil && arguments.contains("--duration") {
            throw UsageError("--duration: not with --requests (a run ends after N requests or after a duration; give one)")
        }
        if chosen.rate == .max && arguments.contains("--pace-quantum") {
            throw UsageError("--pace-quantum: only paces an open-loop rate, not --rps max")
        }
        if chosen.http1 && chosen.pushProtocol != .fcm {
            throw UsageError("--http1: APNs is HTTP/2 only; --http1 applies to --protocol fcm")
        }
        if chosen.credentials != nil && chosen.pushProtocol != .fcm {
            throw UsageError("--credentials: a service account is for FCM; use --protocol fcm (APNs uses provider tokens)")
        }
        if chosen.noApnsID && chosen.pushProtocol == .fcm {
            throw UsageError("--no-apns-id: FCM requests carry no apns-id (it applies to --protocol apns)")
        }
        if chosen.target != nil && !chosen.gatewayArguments.isEmpty {
            throw UsageError("--gateway-arg: only applies to the embedded gateway, not with --target")
        }
        if chosen.capture != nil {
            guard chosen.target == nil else { throw UsageError("--capture: only the embedded gateway captures pushes, not with --target") }
            guard chosen.pushProtocol == .fcm else {
                throw UsageError("--capture: the gateway captures the Apple pushes it builds from FCM messages; use --protocol fcm")
            }
        }
        if chosen.tokenChurnPerSecond != nil && chosen.target != nil {
            throw UsageError("--token-churn: only the embedded gateway can churn tokens, not with --target")
        }
        if chosen.realtime && chosen.rate == .max {
            throw UsageError("--realtime: not with --rps max (a closed loop never sleeps, and real-time threads that never sleep hold their CPUs from every other thread)")
        }
        if chosen.realtime, let refusal = realtimePriorityRefusal() {
            throw UsageError("--realtime: this process may not run threads real-time (SCHED_FIFO): \(refusal); run it as root or with CAP_SYS_NICE")
        }
        try Self.checkObjectives(chosen, arguments, pipeline: false)
        try Self.checkTLS(chosen)
        chosen.providerTokens = try Self.providerTokens(chosen)
        chosen.embeddedGateway = try Self.embeddedGateway(chosen)
        options = chosen
    }

    /// A schedule replaces --rps and --duration, and runs alone: no --requests, one encoder. One that starts
    /// from 0 has no warm-up unless --warmup asks (it would idle): start with a 0s stage to warm up at a rate.
    static func checkSchedule(_ options: inout RunOptions, _ arguments: ParsedArguments) throws(UsageError) {
        let given = ["--stages", "--rate-file"].filter(arguments.contains)
        if given.count > 1 { throw UsageError("--stages, --rate-file: give one schedule") }
        if let option = given.first {
            for other in ["--rps", "--duration", "--requests"] where arguments.contains(other) {
                throw UsageError("\(other): \(option) sets the rate and the length; leave \(other) out")
            }
        }
        guard let schedule = options.schedule else { return }
        let option = given.first ?? "--rps"
        if options.requests != nil { throw UsageError("--requests: \(option) sets how many requests; leave --requests out") }
        if options.encoderVariants.count > 1 {
            throw UsageError("--encoder: comparing encoders needs a constant --rps, not a schedule (\(option))")
        }
        options.durationSeconds = Double(schedule.durationNs) / 1e9
        if schedule.initialRate == 0 && !arguments.contains("--warmup") { options.warmupSeconds = 0 }
    }

    /// --segment with --rps max splits --connections; --start-at must lie ahead unless --start-late-ok.
    static func checkSegment(_ options: RunOptions) throws(UsageError) {
        if let segment = options.segment, options.rate == .max, options.connections < segment.count {
            throw UsageError("--connections: with --rps max each of the \(segment.count) agents runs its share of \(options.connections) connections; give at least \(segment.count)")
        }
        if let segment = options.segment, options.encoderVariants.count > 1 {
            throw UsageError("--encoder: comparing encoders is one process's work; not with --segment \(segment.index)/\(segment.count)")
        }
        if let at = options.startAtUnixNs, !options.startLateOK {
            let late = WallClock.unixNanoseconds() - at
            if late > 0 {
                throw UsageError("--start-at: \(StartTime.format(at)) is \(late / 1_000_000_000) s in the past (give a time ahead, or --start-late-ok to keep the schedule and send the missed requests late)")
            }
        }
        if options.startLateOK && options.startAtUnixNs == nil { throw UsageError("--start-late-ok: only with --start-at") }
    }

    /// The embedded gateway's configuration: the `--gateway-arg`s parsed with the gateway's own table,
    /// then the run options it takes over. Naming one both ways is an error, as it would be twice in
    /// `pushbench gateway`.
    static func embeddedGateway(_ options: RunOptions) throws(UsageError) -> GatewayConfiguration {
        var config: GatewayConfiguration
        do throws(UsageError) {
            let parsed = try ParsedArguments(options.gatewayArguments, options: GatewayConfiguration.options)
            try parsed.expectPositionals(0...0, "nothing")
            if options.capture != nil && parsed.contains("--capture") { throw UsageError("--capture: given more than once") }
            if options.tokenChurnPerSecond != nil && parsed.contains("--token-churn") {
                throw UsageError("--token-churn: given more than once")
            }
            config = try GatewayConfiguration.parse(parsed)
        } catch {
            throw UsageError("--gateway-arg: \(error.message)")
        }
        if options.tls { config.tls.requested = true }
        if let tokens = options.providerTokens, options.target == nil {
            // The embedded gateway checks the run's tokens with the same key.
            guard config.auth.requestedMode == nil, config.auth.mode == .off else {
                throw UsageError("--auth-key: the embedded gateway checks the run's own key; leave --apns-* and --client-ca out of --gateway-arg")
            }
            config.auth.requestedMode = .token
            config.auth.keys = [APNsProviderKey(keyID: tokens.keyID, publicKey: tokens.key.publicKey, path: tokens.keyFile)]
            config.auth.teamID = tokens.teamID
        }
        if let capture = options.capture { config.fcm.capture = capture }
        // With --credentials the embedded gateway is the token endpoint, and checks both the assertions
        // (with the account's key) and the access tokens it issues, as Google does.
        if let account = options.credentials, options.target == nil {
            if config.fcm.serviceAccount == nil { config.fcm.serviceAccount = account }
            config.fcm.auth = .oauth
        }
        if let churn = options.tokenChurnPerSecond { config.fcm.tokenChurnPerSecond = churn }
        config.realtime = options.realtime && options.target == nil
        return config
    }

    /// The TLS options' combinations: they need TLS (an https:// target, or the embedded gateway over TLS),
    /// and a certificate goes with its key.
    static func checkTLS(_ options: RunOptions) throws(UsageError) {
        if options.tls && options.target != nil {
            throw UsageError("--tls: runs the embedded gateway over TLS; for a target give an https:// URL")
        }
        if (options.certificateFile == nil) != (options.keyFile == nil) {
            throw UsageError(options.certificateFile == nil ? "--key: give the certificate too (--cert FILE)" : "--cert: give its key too (--key FILE)")
        }
        if options.caFile != nil && options.insecure { throw UsageError("--insecure: trusts anything, so --cacert would be ignored; give one") }
        let usesTLS = options.target.map { $0.hasPrefix("https://") } ?? (options.tls || options.gatewayArguments.contains { $0.hasPrefix("--tls") })
        if !usesTLS {
            let given = options.caFile != nil ? "--cacert" : options.insecure ? "--insecure" : options.certificateFile != nil ? "--cert" : nil
            if let given {
                throw UsageError(options.target != nil ? "\(given): the target is http:// (h2c); TLS options need an https:// target"
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
    static func providerTokens(_ options: RunOptions) throws(UsageError) -> ProviderTokenSettings? {
        let given = [("--auth-key", options.authKeyFile), ("--key-id", options.keyID), ("--team-id", options.teamID)]
        let missing = given.filter { $0.1 == nil }.map(\.0)
        if missing.count == 3 { return nil }
        guard missing.isEmpty else {
            throw UsageError("\(given.first { $0.1 != nil }!.0): provider tokens need --auth-key, --key-id and --team-id together (missing \(missing.joined(separator: ", ")))")
        }
        guard options.pushProtocol == .apns else { throw UsageError("--auth-key: APNs provider tokens apply to --protocol apns") }
        do throws(CredentialError) {
            let key = try ES256PrivateKey(contentsOfFile: options.authKeyFile!)
            return try ProviderTokenSettings(key: key, keyID: options.keyID!, teamID: options.teamID!, keyFile: options.authKeyFile!,
                                             refreshIntervalNanos: UInt64((options.authRefreshSeconds * 1e9).rounded()))
        } catch {
            throw UsageError("--auth-key: \(error.message)")
        }
    }

    func run() -> Int32 {
        RunExecution(options: options).execute()
    }
}
