/// `pushbench report`: redraw the charts of a run (or --history).
public struct ReportCommand: PushbenchCommand {
    public static let name = "report"
    public static let abstract = "redraw the charts of a run (or --history)"
    public static let options: [OptionSpec] = []
    public static let help = """
    USAGE: pushbench report RUN | pushbench report --history
    """

    public init(arguments a: ParsedArguments) throws(UsageError) {}

    public func run() -> Int32 {
        printError("pushbench report: not yet")
        return 1
    }
}
