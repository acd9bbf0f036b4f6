import Foundation
import Testing
import PushPayload
@testable import LoadGenerator

/// How the load generator's request header fields are HPACK-coded, as a python h2 server decodes them.
@Suite(.serialized) struct HPACKIndexingTests {
    /// One request field as the server saw it.
    struct Field {
        var name: String, value: String, representation: String, nameIndexed: Bool
    }

    /// Runs `requests` requests over `connections` connections against the recording server; returns each
    /// connection's requests (in stream order) as the fields it decoded.
    private func record(connections: Int, requests: Int) throws -> [[[Field]]] {
        let path = NSTemporaryDirectory() + "pushbench-hpack-recorder-\(getpid()).py"
        try hpackRecorderSource.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let process = Process()
        let stdin = Pipe(), stdout = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", path]
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        let out = stdout.fileHandleForReading
        var line = [UInt8]()
        var byte: UInt8 = 0
        while read(out.fileDescriptor, &byte, 1) == 1 && byte != 0x0A { line.append(byte) }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "hpack recorder printed no port (python h2 missing? run scripts/setup)"])
        }
        var c = LoadConfiguration(host: "127.0.0.1", port: port, template: .defaultAPNs(), tokens: DeviceTokens(synthetic: 10, seed: 3))
        c.rate = 200
        c.durationNs = UInt64(requests) * 5_000_000
        c.connections = connections
        c.streams = 10
        let r = try LoadRun.run(c)
        try stdin.fileHandleForWriting.close()
        let data = out.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(r.measured.succeeded == requests)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [[[[Any]]]])
        return json.map { conn in conn.map { req in req.map { f in
            Field(name: f[0] as? String ?? "", value: f[1] as? String ?? "", representation: f[2] as? String ?? "",
                  nameIndexed: f[3] as? Bool ?? false)
        } } }
    }

    /// apns-id is new on every request: only a connection's first one enters the HPACK dynamic table, which
    /// puts its name there; every later one is a never-indexed literal that refers to that name by index
    /// (no name Huffman-coded per request, no table entry evicted).
    @Test func apnsIDNameIsIndexedOncePerConnectionAndLaterValuesAreNeverIndexedLiterals() throws {
        let connections = try record(connections: 2, requests: 40)
        #expect(connections.count == 2)
        #expect(connections.reduce(0) { $0 + $1.count } == 40)
        var ids: Set<String> = []
        for requests in connections {
            #expect(requests.count >= 2)
            for (i, fields) in requests.enumerated() {
                let id = try #require(fields.first { $0.name == "apns-id" })
                #expect(id.value.count == 36)
                ids.insert(id.value)
                if i == 0 {
                    #expect(id.representation == "incremental", "first request: \(id)")
                } else {
                    #expect(id.representation == "never" && id.nameIndexed, "request \(i): \(id)")
                }
                // The fixed fields are indexed whole once the peer has them.
                if i > 0 { #expect(fields.first { $0.name == "apns-topic" }?.representation == "indexed") }
            }
        }
        #expect(ids.count == 40, "a fresh apns-id per request")
    }
}
