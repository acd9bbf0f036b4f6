import Foundation

/// A directory under the system's temporary folder, removed when the value goes away.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-credentials-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    func write(_ name: String, _ bytes: [UInt8]) throws { try Data(bytes).write(to: url.appendingPathComponent(name)) }
}

struct CommandFailed: Error, CustomStringConvertible { var description: String }

/// Runs the `openssl` command (a real peer: its answers check ours); returns its standard output.
func runOpenSSL(_ arguments: [String]) throws -> String {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    p.arguments = arguments
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    let errors = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else {
        throw CommandFailed(description: "openssl \(arguments.joined(separator: " ")): \(String(decoding: errors, as: UTF8.self))")
    }
    return String(decoding: data, as: UTF8.self)
}
