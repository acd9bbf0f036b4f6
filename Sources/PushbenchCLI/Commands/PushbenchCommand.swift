@_exported import CommandLineOptions

/// A pushbench subcommand: declares its options once, parses and validates, then runs.
///
/// Each subcommand lives in its own file (`RunCommand.swift`, `GatewayCommand.swift`, …) and is listed
/// in ``PushbenchMain/commands``. Its ``options`` table gives the parser, `--help` and docs/options.md;
/// `init(arguments:)` does all validation, so a bad option is reported before any traffic; `run()`
/// returns the process exit status.
protocol PushbenchCommand {
    /// What the options parse into.
    associatedtype Options
    /// The subcommand's name as typed (`run`, `gateway`, `compare`, …).
    static var name: String { get }
    /// One line for the command list.
    static var abstract: String { get }
    /// The usage lines and what the command does: the top of `--help`.
    static var usage: String { get }
    /// What `--help` ends with after the options (the exit status), if anything.
    static var footer: String? { get }
    /// Every option the subcommand accepts (`--help` is added by the framework).
    static var options: OptionTable<Options> { get }
    /// The full `--help` text: usage, options, footer.
    static var help: String { get }
    /// Validates `arguments`; throws a ``UsageError`` naming the bad option or value.
    init(arguments: ParsedArguments) throws(UsageError)
    /// Runs the subcommand and returns the exit status.
    func run() -> Int32
}

extension PushbenchCommand {
    static var footer: String? { nil }

    static var help: String {
        usage + "\n\nOPTIONS:\n" + options.helpText + (footer.map { "\n\n" + $0 } ?? "")
    }

    /// Parses `arguments` against ``options`` and runs the command; a usage error is one line on stderr
    /// naming the option, exit 2.
    static func main(_ arguments: [String]) -> Int32 {
        do throws(UsageError) {
            let parsed = try ParsedArguments(arguments, options: options)
            return try Self(arguments: parsed).run()
        } catch {
            printError("pushbench \(name): \(error.message) (see 'pushbench \(name) --help')")
            return 2
        }
    }

    /// This command's section of docs/options.md.
    static var reference: String {
        "## pushbench \(name)\n\n" + abstract.prefix(1).uppercased() + abstract.dropFirst() + ".\n\n```\n" + usage + "\n```\n\n"
            + options.markdown + (footer.map { "\n" + $0 + "\n" } ?? "")
    }
}
