import Foundation
import PushVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// Entry point of the `pushbench` command: parses arguments, runs a subcommand, returns the exit status.
public enum PushbenchMain {
    /// Every subcommand; `run` is the default when the first argument is an option or absent.
    static var commands: [any PushbenchCommand.Type] { [
        RunCommand.self, PipelineCommand.self, GatewayCommand.self, CompareCommand.self, MergeCommand.self, ReportCommand.self,
        CapacityCommand.self,
        CredentialsCommand.self, DashboardCommand.self,
    ] }

    /// Runs pushbench with `arguments` (argv, program name first) and returns the process exit status:
    /// the subcommand's own status, or 2 for a usage error (one line on stderr naming the option).
    public static func run(_ arguments: [String]) -> Int32 {
        var rest = Array(arguments.dropFirst())
        var command: any PushbenchCommand.Type = RunCommand.self
        if let first = rest.first {
            if first == "--help" || first == "-h" || first == "help" && rest.count == 1 {
                printOut(overview)
                return 0
            }
            if first == "--version" { printOut("pushbench \(PushbenchVersion.current)"); return 0 }
            if first == "help", rest.count >= 2 {
                guard let named = commands.first(where: { $0.name == rest[1] }) else {
                    printError("pushbench: unknown subcommand '\(rest[1])' (see 'pushbench --help')")
                    return 2
                }
                printOut(named.help)
                return 0
            }
            if !first.hasPrefix("-") {
                guard let named = commands.first(where: { $0.name == first }) else {
                    printError("pushbench: unknown subcommand '\(first)' (see 'pushbench --help')")
                    return 2
                }
                command = named
                rest.removeFirst()
            }
        }
        if rest.contains("--help") || rest.contains("-h") {
            printOut(command.help)
            return 0
        }
        return command.main(rest)
    }

    /// The top-level help text.
    static var overview: String {
        var text = """
        pushbench: load-test and benchmark HTTP/2 push notification senders, encoders and gateways (APNs, FCM)

        USAGE: pushbench [run] [options]     (run is the default subcommand)
               pushbench <subcommand> [options]

        SUBCOMMANDS:

        """
        // The widest name and two spaces set the column, so a longer name never runs into its text.
        let column = (commands.map { $0.name.count }.max() ?? 0) + 2
        for command in commands {
            text += "  " + command.name.padding(toLength: column, withPad: " ", startingAt: 0) + command.abstract + "\n"
        }
        text += """

        OPTIONS:
          --version   print the version and exit
          -h, --help  show this help

        See 'pushbench <subcommand> --help' for the options of each.
        """
        return text
    }

    /// docs/options.md: every subcommand's options, from the same tables as `--help` (a test keeps the
    /// file in step; `PUSHBENCH_UPDATE_DOCS=1 swift test --filter OptionTableTests` rewrites it).
    static var optionsReference: String {
        var text = """
        # Command-line options

        Every option of every subcommand, generated from the option tables in the code: `pushbench
        <subcommand> --help` prints the same. A value's default is what the option is when it is not
        given. A bad option or value is reported in one line naming it, with exit status 2, before any
        traffic.

        """
        for command in commands { text += "\n" + command.reference }
        return text
    }
}

/// Writes one line to standard output.
func printOut(_ line: String) { writeLine(line, fd: 1) }

/// Writes one line to standard error, its control characters escaped: an error quotes what the user
/// gave (an option value, a file's contents), which must not drive the terminal. `stderr` the C global
/// is not concurrency-safe in Swift 6, so this goes through the file descriptor.
func printError(_ line: String) { writeLine(escapingControls(line), fd: 2) }

/// `text` with every control character written as an escape: C0 and DEL as `\x1b`, C1 as `\u{9b}`.
/// Everything else is unchanged.
func escapingControls(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else { return text }
    var out = ""
    for scalar in text.unicodeScalars {
        let v = scalar.value
        if v < 0x20 || v == 0x7F {
            out += "\\x" + (v < 0x10 ? "0" : "") + String(v, radix: 16)
        } else if (0x80...0x9F).contains(v) {
            out += "\\u{" + String(v, radix: 16) + "}"
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}

private func writeLine(_ line: String, fd: Int32) {
    var text = line
    text.append("\n")
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n <= 0 { break }
            offset += n
        }
    }
}
