import Foundation
import Testing

/// `pushbench gateway` as its own process on a loopback port it picks, for tests whose several agents
/// must share one target. Stopped (SIGTERM) by `stop()`.
final class LoopbackGatewayProcess {
    let process = Process()
    /// The port it listens on.
    private(set) var port = 0

    init(threads: Int = 1) throws {
        let bin = try #require(PushbenchBinary.url, "build pushbench first (swift build --build-tests)")
        process.executableURL = bin
        process.arguments = ["gateway", "--listen", "127.0.0.1:0", "--threads", "\(threads)"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Its first line names the port; a gateway that exits first ends the output, and the port stays 0.
        var seen = ""
        while port == 0 {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            seen += String(decoding: data, as: UTF8.self)
            if let r = seen.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression) { port = Int(seen[r].split(separator: ":").last!) ?? 0 }
        }
        if port == 0 { stop() }
        try #require(port > 0, "the gateway named no port: \(seen)")
    }

    var url: String { "http://127.0.0.1:\(port)" }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}
