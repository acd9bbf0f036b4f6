/// A pushbench subcommand: declares its options and help, parses and validates, then runs.
///
/// Each subcommand lives in its own file (`RunCommand.swift`, `GatewayCommand.swift`, …) and is listed
/// in ``PushbenchMain/commands``. `init(arguments:)` does all validation, so a bad option is reported
/// before any traffic; `run()` returns the process exit status.
public protocol PushbenchCommand {
    /// The subcommand's name as typed (`run`, `gateway`, `compare`, …).
    static var name: String { get }
    /// One line for the command list.
    static var abstract: String { get }
    /// The full `--help` text (usage line and options).
    static var help: String { get }
    /// The options this subcommand accepts (`--help` is added by the framework).
    static var options: [OptionSpec] { get }
    /// Validates `arguments`; throws a ``UsageError`` naming the bad option or value.
    init(arguments: ParsedArguments) throws(UsageError)
    /// Runs the subcommand and returns the exit status.
    func run() -> Int32
}
