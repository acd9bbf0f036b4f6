import Foundation
import LoadGenerator
import MockGateway
import PushCredentials
import PushPayload
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
        (the message names it). A run that did not keep its rate exits 0 with a warning on stderr.
        """

    /// The validated options.
    let options: RunOptions

    init(arguments a: ParsedArguments) throws(UsageError) {
        try a.expectPositionals(0...0, "nothing")
        var o = RunOptions()
        try Self.options.apply(a, to: &o)
        // --requests N asks for N pushes: no unasked-for warm-up traffic before them (against a real
        // endpoint those are real notifications), unless --warmup says so.
        if o.requests != nil && !a.contains("--warmup") { o.warmupSeconds = 0 }
        try Self.checkSchedule(&o, a)
        try Self.checkSegment(o)
        // Options that would contradict each other are refused rather than one silently winning.
        if o.requests != nil && a.contains("--duration") {
            throw UsageError("--duration: not with --requests (a run ends after N requests or after a duration; give one)")
        }
        if o.rate == .max && a.contains("--pace-quantum") {
            throw UsageError("--pace-quantum: only paces an open-loop rate, not --rps max")
        }
        if o.http1 && o.pushProtocol != .fcm {
            throw UsageError("--http1: APNs is HTTP/2 only; --http1 applies to --protocol fcm")
        }
        if o.credentials != nil && o.pushProtocol != .fcm {
            throw UsageError("--credentials: a service account is for FCM; use --protocol fcm (APNs uses provider tokens)")
        }
        if o.noApnsID && o.pushProtocol == .fcm {
            throw UsageError("--no-apns-id: FCM requests carry no apns-id (it applies to --protocol apns)")
        }
        if o.target != nil && !o.gatewayArguments.isEmpty {
            throw UsageError("--gateway-arg: only applies to the embedded gateway, not with --target")
        }
        if o.capture != nil {
            guard o.target == nil else { throw UsageError("--capture: only the embedded gateway captures pushes, not with --target") }
            guard o.pushProtocol == .fcm else {
                throw UsageError("--capture: the gateway captures the Apple pushes it builds from FCM messages; use --protocol fcm")
            }
        }
        if o.tokenChurnPerSecond != nil && o.target != nil {
            throw UsageError("--token-churn: only the embedded gateway can churn tokens, not with --target")
        }
        try Self.checkTLS(o)
        o.providerTokens = try Self.providerTokens(o)
        o.embeddedGateway = try Self.embeddedGateway(o)
        options = o
    }

    /// A schedule replaces --rps and --duration, and runs alone: no --requests, one encoder. One that starts
    /// from 0 has no warm-up unless --warmup asks (it would idle): start with a 0s stage to warm up at a rate.
    static func checkSchedule(_ o: inout RunOptions, _ a: ParsedArguments) throws(UsageError) {
        let given = ["--stages", "--rate-file"].filter(a.contains)
        if given.count > 1 { throw UsageError("--stages, --rate-file: give one schedule") }
        if let option = given.first {
            for other in ["--rps", "--duration", "--requests"] where a.contains(other) {
                throw UsageError("\(other): \(option) sets the rate and the length; leave \(other) out")
            }
        }
        guard let schedule = o.schedule else { return }
        let option = given.first ?? "--rps"
        if o.requests != nil { throw UsageError("--requests: \(option) sets how many requests; leave --requests out") }
        if o.encoderVariants.count > 1 {
            throw UsageError("--encoder: comparing encoders needs a constant --rps, not a schedule (\(option))")
        }
        o.durationSeconds = Double(schedule.durationNs) / 1e9
        if schedule.initialRate == 0 && !a.contains("--warmup") { o.warmupSeconds = 0 }
    }

    /// --segment with --rps max splits --connections; --start-at must lie ahead unless --start-late-ok.
    static func checkSegment(_ o: RunOptions) throws(UsageError) {
        if let s = o.segment, o.rate == .max, o.connections < s.count {
            throw UsageError("--connections: with --rps max each of the \(s.count) agents runs its share of \(o.connections) connections; give at least \(s.count)")
        }
        if let s = o.segment, o.encoderVariants.count > 1 {
            throw UsageError("--encoder: comparing encoders is one process's work; not with --segment \(s.index)/\(s.count)")
        }
        if let at = o.startAtUnixNs, !o.startLateOK {
            let late = WallClock.unixNanoseconds() - at
            if late > 0 {
                throw UsageError("--start-at: \(StartTime.format(at)) is \(late / 1_000_000_000) s in the past (give a time ahead, or --start-late-ok to keep the schedule and send the missed requests late)")
            }
        }
        if o.startLateOK && o.startAtUnixNs == nil { throw UsageError("--start-late-ok: only with --start-at") }
    }

    /// The embedded gateway's configuration: the `--gateway-arg`s parsed with the gateway's own table,
    /// then the run options it takes over. Naming one both ways is an error, as it would be twice in
    /// `pushbench gateway`.
    static func embeddedGateway(_ o: RunOptions) throws(UsageError) -> GatewayConfiguration {
        var config: GatewayConfiguration
        do throws(UsageError) {
            let parsed = try ParsedArguments(o.gatewayArguments, options: GatewayConfiguration.options)
            try parsed.expectPositionals(0...0, "nothing")
            if o.capture != nil && parsed.contains("--capture") { throw UsageError("--capture: given more than once") }
            if o.tokenChurnPerSecond != nil && parsed.contains("--token-churn") {
                throw UsageError("--token-churn: given more than once")
            }
            config = try GatewayConfiguration.parse(parsed)
        } catch {
            throw UsageError("--gateway-arg: \(error.message)")
        }
        if o.tls { config.tls.requested = true }
        if let tokens = o.providerTokens, o.target == nil {
            // The embedded gateway checks the run's tokens with the same key.
            guard config.auth.requestedMode == nil, config.auth.mode == .off else {
                throw UsageError("--auth-key: the embedded gateway checks the run's own key; leave --apns-* and --client-ca out of --gateway-arg")
            }
            config.auth.requestedMode = .token
            config.auth.keys = [APNsProviderKey(keyID: tokens.keyID, publicKey: tokens.key.publicKey, path: tokens.keyFile)]
            config.auth.teamID = tokens.teamID
        }
        if let capture = o.capture { config.fcm.capture = capture }
        // With --credentials the embedded gateway is the token endpoint, and checks both the assertions
        // (with the account's key) and the access tokens it issues, as Google does.
        if let account = o.credentials, o.target == nil {
            if config.fcm.serviceAccount == nil { config.fcm.serviceAccount = account }
            config.fcm.auth = .oauth
        }
        if let churn = o.tokenChurnPerSecond { config.fcm.tokenChurnPerSecond = churn }
        return config
    }

    /// The TLS options' combinations: they need TLS (an https:// target, or the embedded gateway over TLS),
    /// and a certificate goes with its key.
    static func checkTLS(_ o: RunOptions) throws(UsageError) {
        if o.tls && o.target != nil {
            throw UsageError("--tls: runs the embedded gateway over TLS; for a target give an https:// URL")
        }
        if (o.certificateFile == nil) != (o.keyFile == nil) {
            throw UsageError(o.certificateFile == nil ? "--key: give the certificate too (--cert FILE)" : "--cert: give its key too (--key FILE)")
        }
        if o.caFile != nil && o.insecure { throw UsageError("--insecure: trusts anything, so --cacert would be ignored; give one") }
        let usesTLS = o.target.map { $0.hasPrefix("https://") } ?? (o.tls || o.gatewayArguments.contains { $0.hasPrefix("--tls") })
        if !usesTLS {
            let given = o.caFile != nil ? "--cacert" : o.insecure ? "--insecure" : o.certificateFile != nil ? "--cert" : nil
            if let given {
                throw UsageError(o.target != nil ? "\(given): the target is http:// (h2c); TLS options need an https:// target"
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
    static func providerTokens(_ o: RunOptions) throws(UsageError) -> ProviderTokenSettings? {
        let given = [("--auth-key", o.authKeyFile), ("--key-id", o.keyID), ("--team-id", o.teamID)]
        let missing = given.filter { $0.1 == nil }.map(\.0)
        if missing.count == 3 { return nil }
        guard missing.isEmpty else {
            throw UsageError("\(given.first { $0.1 != nil }!.0): provider tokens need --auth-key, --key-id and --team-id together (missing \(missing.joined(separator: ", ")))")
        }
        guard o.pushProtocol == .apns else { throw UsageError("--auth-key: APNs provider tokens apply to --protocol apns") }
        do throws(CredentialError) {
            let key = try ES256PrivateKey(contentsOfFile: o.authKeyFile!)
            return try ProviderTokenSettings(key: key, keyID: o.keyID!, teamID: o.teamID!, keyFile: o.authKeyFile!,
                                             refreshIntervalNanos: UInt64((o.authRefreshSeconds * 1e9).rounded()))
        } catch {
            throw UsageError("--auth-key: \(error.message)")
        }
    }

    func run() -> Int32 {
        RunExecution(options: options).execute()
    }
}
