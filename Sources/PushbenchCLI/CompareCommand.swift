/// `pushbench compare`: compare two runs; exit 1 when NEW regresses past a threshold.
public struct CompareCommand: PushbenchCommand {
    public static let name = "compare"
    public static let abstract = "compare two runs; exit 1 when NEW regresses past a threshold"
    public static let options: [OptionSpec] = []
    public static let help = """
    USAGE: pushbench compare BASE NEW [--threshold METRIC=PCT ...] [--markdown]
    """

    public init(arguments a: ParsedArguments) throws(UsageError) {}

    public func run() -> Int32 {
        printError("pushbench compare: not yet")
        return 1
    }
}
