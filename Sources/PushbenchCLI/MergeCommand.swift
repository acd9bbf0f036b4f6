/// `pushbench merge`: merge runs of several agents into one run folder.
public struct MergeCommand: PushbenchCommand {
    public static let name = "merge"
    public static let abstract = "merge runs of several agents into one run folder"
    public static let options: [OptionSpec] = []
    public static let help = """
    USAGE: pushbench merge RUN... --out DIR
    """

    public init(arguments a: ParsedArguments) throws(UsageError) {}

    public func run() -> Int32 {
        printError("pushbench merge: not yet")
        return 1
    }
}
