import Foundation
import Testing

/// scripts/bench-gateway and scripts/bench-latency end to end, tiny: one round each, the debug build of
/// pushbench (PUSHBENCH_BIN). The figures of a debug build beside a busy suite mean nothing, so the tests
/// hold the scripts to their lines: every server or reference measured in the round, the load and the
/// host's steal beside it, and the medians and ratios at the end.
@Suite(.serialized) struct BenchScriptTests {
    private static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts")

    /// Foundation starts children with SIGTERM blocked and SIGINT ignored; a script's servers inherit
    /// that, so the script runs from python3 with the signals as a shell would give them.
    private static let shellSignals = """
        import os, signal, sys
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        for s in (signal.SIGINT, signal.SIGPIPE, signal.SIGTERM): signal.signal(s, signal.SIG_DFL)
        os.execv("/bin/bash", ["/bin/bash"] + sys.argv[1:])
        """

    private func runScript(_ name: String, _ args: [String], env extra: [String: String] = [:]) throws -> (status: Int32, out: String, err: String) {
        let bin = try #require(PushbenchBinary.url, "build pushbench first (swift build --build-tests)")
        return try PushbenchBinary.run(["-c", Self.shellSignals, Self.scripts.appendingPathComponent(name).path] + args,
                                       executable: URL(fileURLWithPath: "/usr/bin/python3")) { env in
            env["PUSHBENCH_BIN"] = bin.path
            env.merge(extra) { _, new in new }
        }
    }

    /// The number after `label` in `line` (`h2o GET     79167 req/s` → 79167), or nil.
    private func figure(after label: String, in line: Substring) -> Double? {
        guard let r = line.range(of: label) else { return nil }
        return Double(line[r.upperBound...].drop { $0 == " " }.prefix { $0.isNumber || $0 == "." })
    }

    @Test func benchGatewayPutsH2oBesideTheGatewayAndNghttpd() throws {
        let r = try runScript("bench-gateway", ["1", "2000"])
        #expect(r.status == 0, "\(r.out)\(r.err)")
        let lines = r.out.split(separator: "\n")
        let round = try #require(lines.first { $0.hasPrefix("round 1: gateway ") }, "\(r.out)")
        for server in ["gateway", "nghttpd", "h2o GET"] {
            #expect((figure(after: server, in: round) ?? 0) > 0, "\(server) answered no request: \(round)")
        }
        #expect(figure(after: "busy)   load ", in: round) != nil, "\(round)")
        #expect(figure(after: "steal ", in: round) != nil, "\(round)")
        #expect(lines.contains { $0.hasPrefix("median: gateway ") && $0.contains(", h2o GET ") }, "\(r.out)")
        let h2o = try #require(lines.first { $0.contains("h2o ") && $0.contains("ratio h2o/gateway ") }, "\(r.out)")
        #expect(figure(after: "ratio h2o/gateway", in: h2o) != nil, "\(h2o)")
        #expect(lines.contains { $0.hasPrefix("machine: load average ") && $0.contains("steal per round ") }, "\(r.out)")
        #expect(r.out.contains("peak RSS with 10000 streams open"))
    }

    @Test func benchLatencyGivesP99AndP999AgainstTheFloorWithLoadAndSteal() throws {
        let r = try runScript("bench-latency", ["1", "1"], env: ["RATE": "2000"])
        #expect(r.status == 0, "\(r.out)\(r.err)")
        let lines = r.out.split(separator: "\n")
        for name in ["apns", "fcm", "floor", "h2load"] {
            let run = try #require(lines.first { $0.hasPrefix("round 1 \(name) ") }, "\(name): \(r.out)")
            #expect(figure(after: "p99.9", in: run) != nil, "\(run)")
            #expect(figure(after: "steal", in: run) != nil, "\(run)")
            #expect(figure(after: "| load ", in: run) != nil, "\(run)")
        }
        for name in ["apns", "fcm"] {
            for metric in ["p99  ", "p99.9"] {
                let ratio = try #require(lines.first { $0.hasPrefix("\(name)") && $0.contains("\(metric) / floor, median of the rounds' own ratios:") },
                                         "\(name) \(metric): \(r.out)")
                #expect(figure(after: "ratios:", in: ratio) != nil, "\(ratio)")
            }
        }
        #expect(lines.contains { $0.hasPrefix("machine: load average ") && $0.contains("the host stole ") }, "\(r.out)")
    }
}
