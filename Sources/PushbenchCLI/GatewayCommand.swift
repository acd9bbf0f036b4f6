/// `pushbench gateway`: runs the mock APNs/FCM gateway alone.
public struct GatewayCommand: PushbenchCommand {
    public static let name = "gateway"
    public static let abstract = "run the mock APNs/FCM gateway alone (--listen, behaviours)"
    public static let options: [OptionSpec] = [.value("--listen"), .value("--threads"), .value("--seed"), .value("--scenario")]
    public static let help = """
    USAGE: pushbench gateway [options]

    OPTIONS:
      --listen HOST:PORT      address to listen on (default 127.0.0.1:8080)
      --threads N             event loops sharing the port (default 1)
      --seed N                seed for random behaviours (default 1)
      --scenario FILE         JSON scenario file of behaviours
      -h, --help              show this help
    """

    public init(arguments a: ParsedArguments) throws(UsageError) {
        try a.expectPositionals(0...0, "nothing")
        _ = try a.integer("--threads", default: 1, range: 1...64)
    }

    public func run() -> Int32 {
        printError("pushbench gateway: not yet: the mock gateway has not landed")
        return 1
    }
}
