import Foundation
import Testing

/// `pushbench run` against servers that misbehave on purpose (scripts/lib/hostile_peer.py, python h2):
/// for each, the documented exit status, a complete results folder, the accounting invariant, and the
/// errors under the cause that produced them.
@Suite(.serialized) struct HostileServerTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/lib/hostile_peer.py").path

    /// A running hostile peer; it exits when its stdin closes.
    final class Peer {
        let process = Process()
        let stdin = Pipe(), stdout = Pipe()
        let port: Int

        init(_ mode: String) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", HostileServerTests.script, mode]
            process.standardInput = stdin
            process.standardOutput = stdout
            try process.run()
            var line = [UInt8]()
            let fd = stdout.fileHandleForReading.fileDescriptor
            var byte: UInt8 = 0
            while read(fd, &byte, 1) == 1 && byte != 0x0A { line.append(byte) }
            guard let p = Int(String(decoding: line, as: UTF8.self)) else {
                process.terminate()
                throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "hostile_peer.py \(mode) printed no port (python h2 missing? run scripts/setup)"])
            }
            port = p
        }

        func stop() {
            try? stdin.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    struct Outcome {
        var status: Int32
        var err: String
        var out: String
        var summary: [String: Any]
        var causes: [String: Int] { (summary["accounting"] as? [String: Any])?["transport_errors_by_cause"] as? [String: Int] ?? [:] }
        func int(_ path: String...) -> Int {
            var cur: Any? = summary
            for key in path { cur = (cur as? [String: Any])?[key] }
            return cur as? Int ?? -1
        }
    }

    /// Runs 1 s at `rps` against a peer in `mode`; checks what every hostile run must keep: its documented
    /// exit status, every file written, the invariant, and transport errors adding up by cause.
    func run(_ mode: String, rps: Int = 200, connections: Int = 2, quiet: Bool = true, _ extra: [String] = []) throws -> Outcome {
        let peer = try Peer(mode)
        defer { peer.stop() }
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--target", "http://127.0.0.1:\(peer.port)", "--rps", String(rps), "--duration", "1s",
                                         "--warmup", "0s", "--connections", String(connections), "--out", out.path] + (quiet ? ["--quiet"] : []) + extra)
        for file in ["summary.json", "latency.hgrm", "latency.hlog", "service_time.hlog", "timeline.csv", "report.svg", "report.html"] {
            #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("latest/\(file)").path), "\(mode): \(file)")
        }
        let s = try PushbenchBinary.summary(out)
        // Documented: 0 the run completed, 4 when not one measured request was answered.
        let answered = PushbenchBinary.int(s, "requests", "completed")
        #expect(r.status == (answered == 0 ? 4 : 0), "\(mode): exit \(r.status), \(answered) answered: \(r.err)")
        #expect(PushbenchBinary.accountingHolds(s), "\(mode)")
        let o = Outcome(status: r.status, err: r.err, out: r.out, summary: s)
        #expect(o.causes.values.reduce(0, +) == o.int("requests", "transport_errors"), "\(mode): \(o.causes)")
        #expect(o.int("requests", "sent") > 0, "\(mode)")
        return o
    }

    @Test func aSilentPeerIsUnreachable() throws {
        let peer = try Peer("silent")
        defer { peer.stop() }
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--target", "http://127.0.0.1:\(peer.port)", "--rps", "100", "--duration", "1s",
                                         "--out", out.path, "--quiet"])
        #expect(r.status == 3, "\(r.err)")
        #expect(r.err.contains("target unreachable"), "\(r.err)")
    }

    @Test func aPeerThatNeverAnswersLeavesEveryRequestUnfinished() throws {
        let o = try run("never-answers")
        #expect(o.int("requests", "completed") == 0)
        #expect(o.int("requests", "unfinished") == o.int("requests", "sent"))
    }

    @Test func aStallAfterSomeAnswersLeavesTheRestUnfinished() throws {
        let o = try run("stall", connections: 1)
        #expect(o.int("requests", "succeeded") == 20)
        #expect(o.int("requests", "unfinished") == o.int("requests", "sent") - 20)
    }

    /// INTERNAL_ERROR: the server may have acted, so `--retry` never resends it.
    @Test func internalErrorResetsAreNamedAndNeverResent() throws {
        let o = try run("reset-2", quiet: false, ["--retry", "2"])
        #expect(o.causes == ["reset_internal_error": o.int("requests", "sent")])
        #expect(o.int("accounting", "retries") == 0)
        #expect(o.out.contains("transport  reset internal error \(o.int("requests", "sent"))"), "\(o.out)")
    }

    /// REFUSED_STREAM: not processed, so `--retry` resends it (here until its retries run out).
    @Test func refusedStreamsAreNamedAndResent() throws {
        let o = try run("reset-7", ["--retry", "2"])
        #expect(o.causes == ["refused_stream": o.int("requests", "sent")])
        #expect(o.int("accounting", "retries") == 2 * o.int("requests", "sent"))
    }

    @Test(arguments: ["reset-0", "reset-8", "reset-11", "reset-99"])
    func everyResetCodeHasItsCause(mode: String) throws {
        let o = try run(mode)
        let name = ["reset-0": "reset_no_error", "reset-8": "reset_cancel", "reset-11": "reset_enhance_your_calm", "reset-99": "reset_other"][mode]!
        #expect(o.causes == [name: o.int("requests", "sent")])
    }

    @Test(arguments: ["goaway-0", "goaway-11", "goaway-abrupt"])
    func goAwayRetiresTheConnectionAndTheRunGoesOn(mode: String) throws {
        let o = try run(mode)
        #expect(o.int("connections", "goaways") >= 1)
        #expect(o.int("connections", "opened") >= 2 + o.int("connections", "goaways") / 2)
        #expect(o.int("requests", "succeeded") >= 10)
        #expect(Set(o.causes.keys).isSubset(of: ["goaway", "connection_lost"]), "\(o.causes)")
    }

    /// A malformed frame counts as a lost connection and a protocol error, not as nothing.
    @Test func aMalformedFrameIsAProtocolErrorAndALostConnection() throws {
        let o = try run("malformed")
        #expect(o.int("connections", "lost") >= 1)
        #expect((o.causes["protocol_error"] ?? 0) >= 1, "\(o.causes)")
        #expect(Set(o.causes.keys).isSubset(of: ["protocol_error", "connection_lost"]), "\(o.causes)")
    }

    @Test func aCloseMidResponseIsALostConnection() throws {
        let o = try run("mid-response-close")
        #expect(o.int("connections", "lost") >= 1)
        #expect((o.causes["connection_lost"] ?? 0) >= 1, "\(o.causes)")
        #expect(Set(o.causes.keys) == ["connection_lost"], "\(o.causes)")
    }

    @Test func aStreamLimitOfOneIsFollowed() throws {
        let o = try run("streams-1", rps: 100)
        #expect(o.int("connections", "peer_max_concurrent_streams") == 1)
        #expect(o.int("requests", "succeeded") == o.int("requests", "sent"))
    }

    /// Bodies that are not one JSON object give no reason: a cut-off `{"reason":"Shutdown"` does not count
    /// as Shutdown.
    @Test func garbageBodiesCountAsOtherNeverAsTheirReason() throws {
        let o = try run("garbage-body", connections: 1)
        let reasons = (o.summary["requests"] as? [String: Any])?["by_reason"] as? [String: Int] ?? [:]
        #expect(o.int("requests", "failed") == o.int("requests", "sent"))
        #expect(reasons["Shutdown"] == nil, "\(reasons)")
        #expect(reasons["Other"] == o.int("requests", "failed") / 2, "\(reasons)")
    }

    /// 1 MiB bodies are counted, not kept: the client's memory stays where a normal run's is.
    @Test func hugeBodiesAreCountedNotKept() throws {
        let o = try run("huge-body", rps: 20)
        #expect(o.int("requests", "succeeded") == o.int("requests", "sent"))
        #expect(o.int("accounting", "truncated_response_bodies") == o.int("requests", "completed"))
        #expect(o.int("max_rss_bytes") < 256 << 20, "max RSS \(o.int("max_rss_bytes"))")
    }
}
