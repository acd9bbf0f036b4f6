import Foundation
import Testing

/// The abuse battery (scripts/lib/abuse.py, python h2 and hpack): malformed and truncated frames of every
/// type, HPACK bombs, floods, rapid reset, clients that never read, slowloris, held bodies, oversized
/// headers, hostile JSON, thousands of idle connections and a seeded frame fuzzer against
/// `pushbench gateway`; then HTTP/1.1 clients that pipeline and never read (cleartext and TLS, 20 s each,
/// under 64 MiB and closed within the write timeout) and 2,000 held HTTP/1.1 bodies (within
/// `--max-body-total`), each against a gateway of its own. For each, the gateway stays up, answers a normal request on a fresh connection
/// during and after, keeps its peak RSS under the budget, and gives back the idle connections' memory.
/// `scripts/abuse` runs the same with a longer fuzz.
@Suite(.serialized) struct GatewayAbuseTests {
    @Test func theGatewayOutlastsEveryAbuse() throws {
        let bin = try #require(GatewayCommandTests().binary, "build pushbench first (swift build --build-tests)")
        let script = packageRoot.appendingPathComponent("scripts/lib/abuse.py").path
        let python = try #require(which("python3"), "python3 is missing: run scripts/setup")
        // A debug build, beside the rest of the suite running in parallel on two cores: a normal request
        // may wait a few hundred milliseconds behind other tests' work. A gateway that stalls on an
        // abuse takes seconds (checking every field of the HPACK bombs, as libnghttp2's own checks would,
        // costs about a second of CPU), so 400 ms still tells the two apart.
        let r = try runProcess(python, [script, bin, "--fuzz", "300", "--seed", "17", "--probe-ms", "400"], timeout: 600)
        #expect(!r.timedOut)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        // Every case ran and reported.
        #expect(lines.filter { $0.hasPrefix("ok ") }.count == 20, "\(r.stdout)\(r.stderr)")
        #expect(lines.contains { $0.hasPrefix("ok idle_connections_return_their_memory") })
        for name in ["http1_pipelining_never_reads:", "http1_pipelining_never_reads_tls:", "http1_held_bodies:"] {
            #expect(lines.contains { $0.hasPrefix("ok " + name) }, "\(r.stdout)")
        }
        #expect(lines.contains { $0.hasPrefix("ok fuzz: ") && $0.contains("300 iterations") })
    }
}
