import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// This process's peak resident memory, as summary.json's `max_rss_bytes` reports it.
///
/// `getrusage`'s `ru_maxrss` is not this process's own figure on Linux: a process started through
/// vfork or posix_spawn (Foundation's Process, Python's subprocess, most CI runners) inherits its
/// parent's peak at exec, so a 25 MiB run started by a 300 MiB test runner reported 300 MiB. The
/// kernel's per-address-space high-water mark (`VmHWM` in /proc/self/status) starts afresh at exec.
enum PeakMemory {
    /// Peak resident bytes of this process: `VmHWM` where /proc has it, else `ru_maxrss`.
    static func bytes() -> Int64 {
        if let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8), let b = highWaterMark(inStatus: text) {
            return b
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Int64(usage.ru_maxrss) * 1024
    }

    /// The `VmHWM:` line of a /proc/<pid>/status text, in bytes (the kernel writes it in kB), or nil.
    static func highWaterMark(inStatus text: String) -> Int64? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return nil }
        let fields = line.dropFirst("VmHWM:".count).split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count == 2, fields[1] == "kB", let kb = Int64(fields[0]) else { return nil }
        return kb * 1024
    }
}
