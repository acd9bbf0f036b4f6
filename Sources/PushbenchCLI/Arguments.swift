import PushVocabulary

/// A command-line mistake: printed as one line naming the option or value, exit status 2.
public struct UsageError: Error, Equatable, CustomStringConvertible {
    /// What was wrong, naming the option and the value (e.g. `--rps: 'fast' is not a number or 'max'`).
    public var message: String
    /// Creates an error with `message`.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// One option a subcommand accepts.
public struct OptionSpec: Sendable {
    /// The option's name with its dashes, e.g. `--rps`.
    public var name: String
    /// Whether the option takes a value (`--rps 5000`, `--rps=5000`); otherwise it is a flag.
    public var takesValue: Bool
    /// Whether the option may be given more than once (values accumulate).
    public var repeats: Bool

    /// An option that takes a value.
    public static func value(_ name: String, repeats: Bool = false) -> OptionSpec {
        OptionSpec(name: name, takesValue: true, repeats: repeats)
    }
    /// A flag (no value).
    public static func flag(_ name: String) -> OptionSpec {
        OptionSpec(name: name, takesValue: false, repeats: false)
    }
}

/// Arguments after the subcommand name, checked against the subcommand's options.
///
/// ```swift
/// let args = try ParsedArguments(["--rps", "max", "--quiet"], options: [.value("--rps"), .flag("--quiet")])
/// let rate = try args.rate("--rps", default: .perSecond(1000))   // .max
/// ```
public struct ParsedArguments: Sendable {
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []
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
                    index += 1
                }
                if !spec.repeats, values[name] != nil {
                    throw UsageError("\(name): given more than once")
                }
                values[name, default: []].append(value)
            } else {
                if inlineValue != nil { throw UsageError("\(name): takes no value") }
                flags.insert(name)
            }
        }
    }

    /// The value of option `name`, if given (the last one for repeatable options).
    public func value(_ name: String) -> String? { values[name]?.last }
    /// Every value given for option `name`, in order.
    public func allValues(_ name: String) -> [String] { values[name] ?? [] }
    /// Whether flag `name` was given.
    public func flag(_ name: String) -> Bool { flags.contains(name) }

    /// An integer option within `range`, or `defaultValue` when absent.
    public func integer(_ name: String, default defaultValue: Int, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = value(name) else { return defaultValue }
        return try ValueParser.integer(text, option: name, range: range)
    }

    /// A duration option in seconds (`10s`, `500ms`, `2m`, `1h`, or a bare number of seconds).
    public func duration(_ name: String, default defaultValue: Double?) throws(UsageError) -> Double? {
        guard let text = value(name) else { return defaultValue }
        return try ValueParser.duration(text, option: name)
    }

    /// One of `choices`, or `defaultValue` when absent.
    public func choice(_ name: String, _ choices: [String], default defaultValue: String) throws(UsageError) -> String {
        guard let text = value(name) else { return defaultValue }
        guard choices.contains(text) else {
            throw UsageError("\(name): '\(text)' is not one of \(choices.joined(separator: ", "))")
        }
        return text
    }

    /// Throws unless the number of positionals is within `range`, naming what was expected.
    public func expectPositionals(_ range: ClosedRange<Int>, _ what: String) throws(UsageError) {
        if positionals.count < range.lowerBound { throw UsageError("missing \(what)") }
        if positionals.count > range.upperBound {
            throw UsageError("unexpected argument '\(positionals[range.upperBound])'")
        }
    }
}

/// Parsers for option values; each error names the option and the offending text.
public enum ValueParser {
    /// A decimal integer within `range`.
    public static func integer(_ text: String, option: String, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let n = Int(text) else { throw UsageError("\(option): '\(text)' is not a whole number") }
        guard range.contains(n) else {
            if range.upperBound == Int.max {
                throw UsageError("\(option): \(n) is out of range (at least \(range.lowerBound))")
            }
            throw UsageError("\(option): \(n) is out of range (\(range.lowerBound)...\(range.upperBound))")
        }
        return n
    }

    /// A duration in seconds (``Quantity/duration(_:bareNumber:)``: `10s`, `500ms`, `1m30s`, or a bare
    /// number of seconds).
    public static func duration(_ text: String, option: String) throws(UsageError) -> Double {
        do throws(QuantityError) {
            return try Quantity.duration(text).seconds
        } catch {
            throw UsageError("\(option): \(error.message)")
        }
    }
}
