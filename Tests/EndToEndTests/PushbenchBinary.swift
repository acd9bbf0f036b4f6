import Foundation
import Testing

/// `pushbench` run as a user types it: the built binary (next to the test bundle; `swift build
/// --build-tests` builds both), a temporary --out. Shared by every test that runs the command line.
enum PushbenchBinary {
    static var url: URL? { built("pushbench") }

    /// `pushbench-testing`: the command with the test-only seams (the slowed encoder) filled.
    static var testingURL: URL? { built("pushbench-testing") }

    private static func built(_ name: String) -> URL? {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let candidate = exe.deletingLastPathComponent().appendingPathComponent(name)
        return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
    }

    /// Runs `pushbench args` (or `executable args`, e.g. a script given the binary through `environment`),
    /// with this process's environment as `environment` leaves it; returns the status and both outputs.
    static func run(_ args: [String], executable: URL? = nil,
                    environment: (inout [String: String]) -> Void = { _ in }) throws -> (status: Int32, out: String, err: String) {
        let bin = try #require(url, "build the pushbench binary first (swift build --build-tests)")
        let p = Process()
        p.executableURL = executable ?? bin
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        environment(&env)
        p.environment = env
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    static func tempDir(_ prefix: String = "pushbench-test") -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    /// summary.json of `out`/latest.
    static func summary(_ out: URL) throws -> [String: Any] {
        let data = try Data(contentsOf: out.appendingPathComponent("latest/summary.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func int(_ o: Any?, _ path: String...) -> Int {
        var cur = o
        for key in path { cur = (cur as? [String: Any])?[key] }
        return cur as? Int ?? -1
    }

    /// `by_reason` of the measured phase and the warm-up added: what the gateway, which counts the whole
    /// run, answered.
    static func byReasonWholeRun(_ s: [String: Any]) -> [String: Int] {
        let measured = (s["requests"] as? [String: Any])?["by_reason"] as? [String: Int] ?? [:]
        let warmup = (s["warmup"] as? [String: Any])?["by_reason"] as? [String: Int] ?? [:]
        return measured.merging(warmup, uniquingKeysWith: +)
    }

    /// The accounting invariant (docs/results.md) on a summary's `requests` block.
    static func accountingHolds(_ s: [String: Any]) -> Bool {
        let r = s["requests"] as? [String: Any] ?? [:]
        let byStatus = (r["by_status"] as? [String: Int] ?? [:]).values.reduce(0, +)
        return int(r, "sent") == int(r, "completed") + int(r, "transport_errors") + int(r, "unfinished")
            && int(r, "completed") == int(r, "succeeded") + int(r, "failed") && byStatus == int(r, "completed")
            && (s["accounting"] as? [String: Any])?["consistent"] as? Bool == true
    }
}
