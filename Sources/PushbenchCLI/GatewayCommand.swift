import MockGateway

/// `pushbench gateway`: runs the mock APNs gateway alone until SIGINT/SIGTERM, then prints its final stats.
public struct GatewayCommand: PushbenchCommand {
    public static let name = "gateway"
    public static let abstract = "run the mock APNs/FCM gateway alone (--listen, behaviours)"
    public static let options: [OptionSpec] = GatewayConfiguration.options.map {
        $0.takesValue ? .value($0.name, repeats: $0.repeats) : .flag($0.name)
    }
    public static let help = """
    USAGE: pushbench gateway [options]

    Emulates the APNs provider API (POST /3/device/<token>) over HTTP/2 cleartext (prior knowledge).
    Every behaviour is off by default: a valid request is answered 200 at once. GET /stats answers JSON
    counts. SIGINT/SIGTERM: finish the streams in flight, GOAWAY, print the final stats, exit 0.

    OPTIONS:
    \(GatewayConfiguration.optionsHelp)
      -h, --help                show this help
    """

    /// The validated configuration.
    public let configuration: GatewayConfiguration

    public init(arguments a: ParsedArguments) throws(UsageError) {
        try a.expectPositionals(0...0, "nothing")
        // The framework already checked names and arity; GatewayConfiguration.parse (shared with
        // `pushbench run --gateway-arg`) checks the values, so rebuild the argument list for it.
        var raw: [String] = []
        for option in GatewayConfiguration.options {
            if option.takesValue {
                for value in a.allValues(option.name) { raw.append("\(option.name)=\(value)") }
            } else if a.flag(option.name) {
                raw.append(option.name)
            }
        }
        do {
            configuration = try GatewayConfiguration.parse(raw)
        } catch {
            throw UsageError(error.message)
        }
    }

    public func run() -> Int32 {
        do {
            let final = try EmbeddedGateway.runUntilSignalled(configuration) { address in
                printOut("pushbench gateway: listening on \(address) (h2c, prior knowledge); GET /stats for counts")
            }
            printOut(final.json)
            return 0
        } catch {
            printError("pushbench gateway: \(error)")
            return 1
        }
    }
}
