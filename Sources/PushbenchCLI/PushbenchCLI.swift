import Foundation
import PushVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// Entry point of the `pushbench` command: parses arguments, runs a subcommand, returns the exit status.
public enum PushbenchMain {
    /// Every subcommand; `run` is the default when the first argument is an option or absent.
    public static var commands: [any PushbenchCommand.Type] { [
        RunCommand.self, GatewayCommand.self, CompareCommand.self, MergeCommand.self, ReportCommand.self,
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
        do throws(UsageError) {
            let parsed = try ParsedArguments(rest, options: command.options)
            let instance = try command.init(arguments: parsed)
            return instance.run()
        } catch {
            printError("pushbench \(command.name): \(error.message) (see 'pushbench \(command.name) --help')")
            return 2
        }
    }

    /// The top-level help text.
    public static var overview: String {
        var text = """
        pushbench: load-test and benchmark HTTP/2 push notification senders, encoders and gateways (APNs, FCM)

        USAGE: pushbench [run] [options]     (run is the default subcommand)
               pushbench <subcommand> [options]

        SUBCOMMANDS:

        """
        for command in commands {
            text += "  " + command.name.padding(toLength: 10, withPad: " ", startingAt: 0) + command.abstract + "\n"
        }
        text += "\nSee 'pushbench <subcommand> --help' for the options of each."
        return text
    }
}

/// Writes one line to standard output.
func printOut(_ line: String) { writeLine(line, fd: 1) }

/// Writes one line to standard error. `stderr` the C global is not concurrency-safe in Swift 6,
/// so this goes through the file descriptor.
func printError(_ line: String) { writeLine(line, fd: 2) }

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
