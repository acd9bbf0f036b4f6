/// A bad input (an option, its value, a scenario file): printed as one line naming what was wrong,
/// exit status 2, before any traffic.
public struct UsageError: Error, Equatable, CustomStringConvertible {
    /// What was wrong, naming the option and the value (e.g. `--rps: 'fast' is not a number or 'max'`).
    public var message: String
    /// Creates an error with `message`.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// The shape of one option on the command line: its name, and whether it takes a value or repeats.
public struct OptionSpec: Sendable {
    /// The option's name with its dashes, e.g. `--rps`.
    public var name: String
    /// Whether the option takes a value (`--rps 5000`, `--rps=5000`); otherwise it is a flag.
    var takesValue: Bool
    /// Whether the option may be given more than once (values accumulate).
    public var repeats: Bool
    /// Whether a value may itself look like one of the command's options (`--gateway-arg --threads=2`
    /// passes an option on); otherwise `--rps --duration 1s` is `--rps` without its value.
    var valueMayBeAnOption: Bool = false

    /// An option that takes a value.
    public static func value(_ name: String, repeats: Bool = false) -> OptionSpec {
        OptionSpec(name: name, takesValue: true, repeats: repeats)
    }
    /// A flag (no value).
    public static func flag(_ name: String) -> OptionSpec {
        OptionSpec(name: name, takesValue: false, repeats: false)
    }
}

/// Arguments after the subcommand name, checked against the subcommand's options: names and arity
/// only (an ``OptionTable`` then turns the values into a typed options value).
///
/// ```swift
/// let args = try ParsedArguments(["--rps", "max", "--quiet"], options: [.value("--rps"), .flag("--quiet")])
/// args.value("--rps")     // "max"
/// args.flag("--quiet")    // true
/// ```
public struct ParsedArguments: Sendable {
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []
    /// The options given, in command-line order (a flag's value is nil).
    public private(set) var given: [(name: String, value: String?)] = []
    /// Arguments that are not options, in order.
    public private(set) var positionals: [String] = []

    /// Parses `arguments` (`--name value`, `--name=value`, flags, positionals; `--` ends options).
    /// Throws a `UsageError` naming an unknown option, a missing value or a repeated option.
    public init(_ arguments: [String], options: [OptionSpec]) throws(UsageError) {
        var specs: [String: OptionSpec] = [:]
        for spec in options { specs[spec.name] = spec }
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" { optionsEnded = true; continue }
            var name = argument
            var inlineValue: String?
            if let eq = argument.firstIndex(of: "=") {
                name = String(argument[..<eq])
                inlineValue = String(argument[argument.index(after: eq)...])
            }
            guard let spec = specs[name] else {
                throw UsageError("unknown option '\(name)'")
            }
            if spec.takesValue {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError("\(name): needs a value") }
                    value = arguments[index]
                    let next = value.split(separator: "=", maxSplits: 1).first.map(String.init) ?? value
                    if !spec.valueMayBeAnOption && (specs[next] != nil || next == "--help" || next == "-h") {
                        throw UsageError("\(name): needs a value (got the option '\(next)' instead)")
                    }
                    index += 1
                }
                if !spec.repeats, values[name] != nil {
                    throw UsageError("\(name): given more than once")
                }
                values[name, default: []].append(value)
                given.append((name, value))
            } else {
                if inlineValue != nil { throw UsageError("\(name): takes no value") }
                flags.insert(name)
                given.append((name, nil))
            }
        }
    }

    /// Parses `arguments` against the options of `table`.
    public init<Options>(_ arguments: [String], options table: OptionTable<Options>) throws(UsageError) {
        try self.init(arguments, options: table.specs)
    }

    /// The value of option `name`, if given (the last one for repeatable options).
    public func value(_ name: String) -> String? { values[name]?.last }
    /// Every value given for option `name`, in order.
    func allValues(_ name: String) -> [String] { values[name] ?? [] }
    /// Whether flag `name` was given.
    public func flag(_ name: String) -> Bool { flags.contains(name) }
    /// Whether option `name` was given at all (flag or value).
    public func contains(_ name: String) -> Bool { flags.contains(name) || values[name] != nil }

    /// Throws unless the number of positionals is within `range`, naming what was expected.
    public func expectPositionals(_ range: ClosedRange<Int>, _ what: String) throws(UsageError) {
        if positionals.count < range.lowerBound { throw UsageError("missing \(what)") }
        if positionals.count > range.upperBound {
            throw UsageError("unexpected argument '\(positionals[range.upperBound])'")
        }
    }
}
