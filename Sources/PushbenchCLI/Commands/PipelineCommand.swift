import Foundation
import PushTransport
import MockGateway
import PushPayload

/// `pushbench pipeline`: drives a push service's front door and plays APNs and FCM behind it, matching
/// every push to the request that caused it.
struct PipelineCommand: PushbenchCommand {
    static let name = "pipeline"
    static let abstract = "drive your push service's front door, play APNs/FCM behind it, match every push to its request"
    static let usage = """
    USAGE: pushbench pipeline --target URL --request FILE.http --egress-listen HOST:PORT [options]

    Sends the request in FILE.http to the service at --target at an exact open-loop rate, each with its
    own correlation id ({{pipeline_id}}), and serves the mock APNs/FCM gateway at --egress-listen for the
    service to push to (TLS by default; its CA goes to --tls-cert-out). Every push the gateway answers is
    matched to its request: results/<run-id>/ gets the front-door figures of a run plus end-to-end
    latency (e2e_latency.hgrm, e2e_latency.hlog), pipeline.csv and a `pipeline` section in summary.json
    (expected, delivered, lost, duplicated, retried, unexpected). docs/pipeline.md walks through it.
    """
    static let footer: String? = """
        EXIT STATUS: as run's: 0 the run completed (whatever was lost: read the pipeline section); 1 a
        failure; 2 bad input, found before any traffic; 3 the front door unreachable; 4 not one measured
        request was answered, or not one push reached the egress (the message says which); 5 results
        written to a fallback folder; 6 the run completed and an objective (--slo) did not hold.
        """

    /// The options shared with `run`, with the meaning they have there.
    static let sharedOptions: Set<String> = [
        "--cacert", "--insecure", "--cert", "--key", "--rps", "--stages", "--rate-file", "--duration", "--warmup", "--requests",
        "--connections", "--streams", "--threads", "--tokens", "--out", "--label", "--retry", "--seed", "--pace-quantum",
        "--gateway-arg", "--segment", "--start-at", "--start-late-ok", "--quiet", "--json", "--metrics-listen",
        "--dashboard", "--dashboard-viewers", "--dashboard-linger",
        "--slo", "--abort-on-slo", "--slo-grace", "--junit", "--log", "--log-sample", "--log-slower-than",
    ]

    static var options: OptionTable<RunOptions> {
        let own: [Option<RunOptions>] = [
            .value("--target", "URL", \.target,
                   help: "the service's front door: http://host:port (HTTP/1.1 keep-alive; h2c with --h2c) or https://host:port (ALPN h2; HTTP/1.1 with --http1)") {
                text, name throws(UsageError) in
                guard text.hasPrefix("http://") || text.hasPrefix("https://") else {
                    throw UsageError("\(name): '\(text)' is not an http:// or https:// URL")
                }
                return text
            },
            .value("--request", "FILE.http", \.pipeline.requestFile,
                   help: "the request to send: 'METHOD /path', header lines, a blank line, then a JSON body template with {{pipeline_id}} (the correlation id, inside quotes), {{tokens:N}} (N device tokens, bare) and run's placeholders") {
                text, name throws(UsageError) in try RunCommand.fileName(text, name)
            },
            Option("--egress-listen", "HOST:PORT",
                   help: "where the mock APNs/FCM gateway listens for the service's pushes (both routes on one port); :PORT for 127.0.0.1") {
                options, text throws(UsageError) in
                let (host, port) = try ValueParser.quantity(text, option: "--egress-listen", HostResolver.listenAddress)
                options.pipeline.egressHost = host
                options.pipeline.egressPort = port
            },
            .value("--egress-url", "URL", \.pipeline.egressURL,
                   help: "instead of --egress-listen: a pushbench gateway started apart with --correlate-prefix is the egress; the run fetches what it matched from URL/pipeline/arrivals (https:// trusts as --cacert/--insecure say)") {
                text, name throws(UsageError) in
                guard text.hasPrefix("http://") || text.hasPrefix("https://") else {
                    throw UsageError("\(name): '\(text)' is not an http:// or https:// URL")
                }
                return text
            },
            .flag("--egress-h2c", \.pipeline.egressH2C, help: "the egress speaks h2c (and HTTP/1.1) instead of TLS"),
            .value("--tls-cert-out", "FILE", \.pipeline.certificateOut,
                   help: "write the CA certificate the service must trust to reach the egress over TLS (PEM)") {
                text, name throws(UsageError) in try RunCommand.fileName(text, name)
            },
            .value("--drain", "T", \.pipeline.drainSeconds, default: "5s",
                   help: "after the last request, how long to wait for pushes still on their way; what has not arrived by then is lost") {
                text, name throws(UsageError) in try ValueParser.duration(text, option: name)
            },
            .value("--correlate", "SPEC", \.pipeline.correlate, default: "anywhere",
                   help: "where the gateway looks for the id: anywhere (the body, then every header value), body, header:NAME, or a JSON pointer into the body (/message/data/pipeline_id)") {
                text, name throws(UsageError) in
                switch text {
                case "anywhere": return .anywhere
                case "body": return .body
                case _ where text.hasPrefix("/"):
                    guard let pointer = CorrelationSource.pointer(text) else {
                        throw UsageError("\(name): '\(text)' is not a JSON pointer (/key/key/0; ~0 for ~ and ~1 for / in a key)")
                    }
                    return pointer
                default:
                    guard text.hasPrefix("header:"), text.count > 7 else {
                        throw UsageError("\(name): '\(text)' is not anywhere, body, header:NAME or a JSON pointer (/key/key)")
                    }
                    return .header(String(text.dropFirst(7)).lowercased())
                }
            },
            .flag("--no-correlation", \.pipeline.noCorrelation,
                  help: "the request carries no {{pipeline_id}}: pushes are counted by route, not matched to requests"),
            .flag("--h2c", \.pipeline.h2c, help: "speak HTTP/2 with prior knowledge to an http:// front door instead of HTTP/1.1"),
            .flag("--http1", \.http1, help: "speak HTTP/1.1 over TLS to an https:// front door instead of h2"),
        ]
        return OptionTable(own + RunCommand.options.options.filter { sharedOptions.contains($0.name) })
    }

    /// The validated options.
    let options: RunOptions

    init(arguments a: ParsedArguments) throws(UsageError) {
        try a.expectPositionals(0...0, "nothing")
        var o = RunOptions()
        try Self.options.apply(a, to: &o)
        guard o.target != nil else { throw UsageError("--target: give the service's front door (http://host:port or https://host:port)") }
        guard let file = o.pipeline.requestFile else { throw UsageError("--request: give the request to send (a .http file)") }
        if o.pipeline.egressURL != nil {
            for (given, option) in [(o.pipeline.egressPort != nil, "--egress-listen"), (o.pipeline.egressH2C, "--egress-h2c"),
                                    (o.pipeline.certificateOut != nil, "--tls-cert-out"), (!o.gatewayArguments.isEmpty, "--gateway-arg"),
                                    (a.contains("--correlate"), "--correlate")] where given {
                throw UsageError("\(option): the egress is the gateway at --egress-url, started apart; give its options there")
            }
        } else if o.pipeline.egressPort == nil {
            throw UsageError("--egress-listen: give where the service sends its pushes (HOST:PORT), or --egress-url for a gateway started apart")
        }
        if o.rate == .max {
            throw UsageError("--rps: a pipeline run needs a rate (end-to-end latency is timed from each request's intended send time), not max")
        }
        if o.requests != nil && !a.contains("--warmup") { o.warmupSeconds = 0 }
        try RunCommand.checkSchedule(&o, a)
        try RunCommand.checkSegment(o)
        try RunCommand.checkObjectives(o, a, pipeline: true)
        if o.requests != nil && a.contains("--duration") {
            throw UsageError("--duration: not with --requests (a run ends after N requests or after a duration; give one)")
        }
        let https = o.target!.hasPrefix("https://")
        if o.pipeline.h2c && https { throw UsageError("--h2c: the front door is https://, where ALPN chooses h2; --h2c is for http://") }
        if o.http1 && !https { throw UsageError("--http1: an http:// front door is spoken to with HTTP/1.1 already (--h2c for HTTP/2)") }
        if !https { o.http1 = !o.pipeline.h2c }
        if o.pipeline.egressH2C && o.pipeline.certificateOut != nil {
            throw UsageError("--tls-cert-out: the egress speaks h2c (--egress-h2c); there is no certificate to trust")
        }
        if o.pipeline.noCorrelation && a.contains("--correlate") {
            throw UsageError("--correlate: nothing is correlated with --no-correlation")
        }
        // The request file and its template are checked now, before any traffic.
        let request: RequestFile
        do throws(TemplateError) { request = try RequestFile(path: file) } catch { throw UsageError("--request: \(error.description)") }
        guard !request.body.isEmpty else {
            throw UsageError("--request: \(file) has no body; the body is a JSON template that carries {{pipeline_id}} to the service")
        }
        let template: PayloadTemplate
        do throws(TemplateError) { template = try request.template(options: TemplateOptions(limit: nil, maxTokenLength: 256))! } catch {
            throw UsageError("--request: \(error.description)")
        }
        if !template.hasPipelineID && !o.pipeline.noCorrelation {
            throw UsageError("--request: \(file) has no {{pipeline_id}} in its body, so no push can be matched to its request (put \"{{pipeline_id}}\" where the service copies it into the push, or give --no-correlation)")
        }
        do throws(UsageError) { try RunCommand.checkTLS(o) } catch {
            throw UsageError(error.message.replacingOccurrences(of: "an https:// target", with: "an https:// --target"))
        }
        var egress = try RunCommand.embeddedGateway(o)
        if !o.pipeline.egressH2C { egress.tls.requested = true }
        if let out = o.pipeline.certificateOut { egress.tls.certificateOut = out }
        o.embeddedGateway = egress
        options = o
    }

    func run() -> Int32 {
        PipelineExecution(run: RunExecution(options: options)).execute()
    }
}
