#if canImport(Glibc)
import Glibc
#endif

/// Entry point of the `pushbench` command: parses arguments, runs a subcommand, returns the exit status.
public enum PushbenchMain {
    /// Runs pushbench with `arguments` (argv, program name first) and returns the process exit status.
    public static func run(_ arguments: [String]) -> Int32 {
        printError("pushbench: not yet: the load generator has not landed")
        return 2
    }
}

/// Writes one line to standard error. `stderr` the C global is not concurrency-safe in Swift 6,
/// so this goes through the file descriptor.
func printError(_ line: String) {
    var text = line
    text.append("\n")
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let n = write(2, bytes.baseAddress! + offset, bytes.count - offset)
            if n <= 0 { break }
            offset += n
        }
    }
}
