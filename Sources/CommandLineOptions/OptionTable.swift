import Foundation

/// One option of a command, declared once: its name, value syntax, default, help and typed parser.
/// The command's parser, its `--help` and the generated docs/options.md all come from these.
///
/// ```swift
/// struct Options: Equatable { var connections = 8; var quiet = false }
/// let table = OptionTable<Options>([
///     .value("--connections", "N", \.connections, default: "8", help: "connections per thread") { text, name throws(UsageError) in
///         guard let n = Int(text), n > 0 else { throw UsageError("\(name): '\(text)' is not a count") }
///         return n
///     },
///     .flag("--quiet", \.quiet, help: "no progress line"),
/// ])
/// let options = try table.parse(["--connections", "16"], onto: Options())   // connections 16, quiet false
/// ```
public struct Option<Options> {
    /// The name with its dashes, e.g. `--rps`.
    public let name: String
    /// The value's syntax for help, e.g. `N|max`; nil for a flag.
    public let valueName: String?
    /// Whether the option may be given more than once.
    public let repeats: Bool
    /// The default in the option's own syntax (help shows "(default X)"); nil when there is none to
    /// show. A test checks that giving it changes nothing.
    public let defaultValue: String?
    /// What the option does, one paragraph (help wraps it to the terminal's width).
    public let help: String
    /// A heading printed above this option, starting a group of options in help and docs.
    public let group: String?
    /// Read before every other option, so the others override what it sets (a scenario file).
    public let appliesFirst: Bool
    let apply: (inout Options, String) throws(UsageError) -> Void

    /// Whether a value may look like an option (a pass-through such as `--gateway-arg`).
    public var valueMayBeAnOption = false

    /// The option's shape for ``ParsedArguments``.
    public var spec: OptionSpec {
        OptionSpec(name: name, takesValue: valueName != nil, repeats: repeats, valueMayBeAnOption: valueMayBeAnOption)
    }

    /// An option whose value `apply` folds into the options (given `(options, value)`; the option's name
    /// is ``name`` for error messages). The general form the others are built on.
    public init(_ name: String, _ valueName: String?, repeats: Bool = false, default defaultValue: String? = nil,
                group: String? = nil, appliesFirst: Bool = false, help: String,
                apply: @escaping (inout Options, String) throws(UsageError) -> Void) {
        self.name = name
        self.valueName = valueName
        self.repeats = repeats
        self.defaultValue = defaultValue
        self.help = help
        self.group = group
        self.appliesFirst = appliesFirst
        self.apply = apply
    }

    /// An option with a value: `parse(text, name)` turns it into the type of `field`, where it is stored.
    public static func value<V>(_ name: String, _ valueName: String, _ field: WritableKeyPath<Options, V>,
                                default defaultValue: String? = nil, group: String? = nil, help: String,
                                _ parse: @escaping (String, String) throws(UsageError) -> V) -> Option {
        Option(name, valueName, default: defaultValue, group: group, help: help) { (options, text) throws(UsageError) in
            options[keyPath: field] = try parse(text, name)
        }
    }

    /// A repeatable option: each value, parsed, is appended to `field`. `passesOptions`: its values are
    /// options of something else (`--gateway-arg --latency=2ms`), so they may look like options.
    public static func values<V>(_ name: String, _ valueName: String, _ field: WritableKeyPath<Options, [V]>,
                                 group: String? = nil, passesOptions: Bool = false, help: String,
                                 _ parse: @escaping (String, String) throws(UsageError) -> V) -> Option {
        var option = Option(name, valueName, repeats: true, group: group, help: help) { (options, text) throws(UsageError) in
            options[keyPath: field].append(try parse(text, name))
        }
        option.valueMayBeAnOption = passesOptions
        return option
    }

    /// The same option for a larger options type that holds these options at `path` (a command that adds
    /// its own options to another table's).
    public func lifted<Outer>(_ path: WritableKeyPath<Outer, Options>) -> Option<Outer> {
        let apply = self.apply
        var option = Option<Outer>(name, valueName, repeats: repeats, default: defaultValue, group: group,
                                   appliesFirst: appliesFirst, help: help) { (outer, text) throws(UsageError) in
            try apply(&outer[keyPath: path], text)
        }
        option.valueMayBeAnOption = valueMayBeAnOption
        return option
    }

    /// A flag: sets `field` to `value` (true unless given) when present.
    public static func flag(_ name: String, _ field: WritableKeyPath<Options, Bool>, setting value: Bool = true,
                            group: String? = nil, help: String) -> Option {
        Option(name, nil, group: group, help: help) { options, _ in options[keyPath: field] = value }
    }
}

/// A command's options in help order, and what is derived from them: the parser, `--help`'s OPTIONS
/// block and the Markdown reference in docs/options.md.
public struct OptionTable<Options> {
    /// The options, in the order help lists them.
    public let options: [Option<Options>]

    /// A table of `options`.
    public init(_ options: [Option<Options>]) { self.options = options }

    /// The options' shapes, for ``ParsedArguments``.
    public var specs: [OptionSpec] { options.map(\.spec) }

    /// The option named `name`.
    public func option(_ name: String) -> Option<Options>? { options.first { $0.name == name } }

    /// Folds the values of `arguments` into `options`: those that apply first, then the rest in
    /// command-line order, so the first bad value is the one reported.
    public func apply(_ arguments: ParsedArguments, to options: inout Options) throws(UsageError) {
        let byName = Dictionary(self.options.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for pass in [true, false] {
            for (name, value) in arguments.given {
                guard let option = byName[name], option.appliesFirst == pass else { continue }
                try option.apply(&options, value ?? "")
            }
        }
    }

    /// Parses `arguments` onto `base` (names, arity and values); positionals are refused.
    public func parse(_ arguments: [String], onto base: Options) throws(UsageError) -> Options {
        let parsed = try ParsedArguments(arguments, options: specs)
        try parsed.expectPositionals(0...0, "nothing")
        var options = base
        try apply(parsed, to: &options)
        return options
    }

    /// Help's OPTIONS lines: `  --name VALUE   help (default X)`, continuation lines aligned, a
    /// group's heading above its first option, and `-h, --help` last.
    public var helpText: String {
        let column = Swift.min(30, options.map { usage($0).count }.max().map { $0 + 4 } ?? 0)
        var lines: [String] = []
        for option in options {
            if let group = option.group { lines += ["", "  " + group] }
            var text = helpLines(option, width: Self.helpWidth - column)
            let head = "  " + usage(option)
            if head.count + 2 > column {
                lines.append(head)
            } else {
                lines.append(head.padding(toLength: column, withPad: " ", startingAt: 0) + text.removeFirst())
            }
            lines += text.map { String(repeating: " ", count: column) + $0 }
        }
        lines.append("  " + "-h, --help".padding(toLength: column - 2, withPad: " ", startingAt: 0) + "show this help")
        return lines.joined(separator: "\n")
    }

    /// The options as a Markdown table (option, default, meaning), for docs/options.md.
    public var markdown: String {
        var out = "| option | default | meaning |\n|---|---|---|\n"
        for option in options {
            if let group = option.group { out += "| **\(cell(group))** | | |\n" }
            let def = option.defaultValue.map { "`\(cell($0))`" } ?? ""
            out += "| `\(cell(usage(option)))` | \(def) | \(cell(option.help.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " "))) |\n"
        }
        return out
    }

    func usage(_ option: Option<Options>) -> String {
        option.valueName.map { "\(option.name) \($0)" } ?? option.name
    }

    /// The widest line help prints.
    public static var helpWidth: Int { 100 }

    /// The option's help and default, word-wrapped to `width` (a "\n" in the help only separates words).
    func helpLines(_ option: Option<Options>, width: Int) -> [String] {
        var words = option.help.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        if let d = option.defaultValue { words.append("(default \(d))") }
        var lines: [String] = []
        var line = ""
        for word in words {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = word
            } else {
                line += line.isEmpty ? word : " " + word
            }
        }
        lines.append(line)
        return lines
    }

    func cell(_ text: String) -> String { text.replacingOccurrences(of: "|", with: "\\|") }
}

extension OptionTable where Options: Equatable {
    /// Options whose documented default is not what an absent option gives (`base` parsed with no
    /// arguments versus with `--name DEFAULT`), so help and docs cannot drift from the code.
    public func optionsWithWrongDefaults(base: Options) -> [String] {
        options.compactMap { option -> String? in
            guard let d = option.defaultValue else { return nil }
            var given = base
            do throws(UsageError) { try option.apply(&given, d) } catch { return option.name }
            return given == base ? nil : option.name
        }
    }
}
