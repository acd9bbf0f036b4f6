#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// `--realtime`: the driver and embedded gateway threads run SCHED_FIFO, the summary says so and how long
/// those threads waited for a CPU; a process that may not is refused before any traffic.
@Suite(.serialized) struct RealtimeRunTests {
    @Test func aRealtimeRunSaysSoAndReportsHowLongItsThreadsWaitedForACPU() throws {
        try #require(geteuid() == 0, "SCHED_FIFO needs root (CI runs as root)")
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--rps", "1000", "--duration", "1s", "--warmup", "0.5s", "--realtime", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("waited for a CPU: driver "), "\(r.out)")
        #expect(r.out.contains("(real-time threads)"), "\(r.out)")
        let machine = try #require(try PushbenchBinary.summary(out)["machine"] as? [String: Any])
        #expect(machine["realtime"] as? Bool == true)
        #expect((machine["driver_cpu_wait_ms"] as? Double ?? -1) >= 0)
        #expect((machine["gateway_cpu_wait_ms"] as? Double ?? -1) >= 0)
    }

    @Test func anOrdinaryRunReportsItsWaitsAndNoRealtime() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--rps", "1000", "--duration", "1s", "--warmup", "0.5s", "--out", out.path])
        #expect(r.status == 0, "\(r.err)")
        #expect(!r.out.contains("(real-time threads)"), "\(r.out)")
        let machine = try #require(try PushbenchBinary.summary(out)["machine"] as? [String: Any])
        #expect(machine["realtime"] as? Bool == false)
        #expect((machine["driver_cpu_wait_ms"] as? Double ?? -1) >= 0)
        #expect((machine["gateway_cpu_wait_ms"] as? Double ?? -1) >= 0)
    }

    @Test func againstATargetOnlyTheDriverWaitIsKnown() throws {
        let gateway = try LoopbackGatewayProcess()
        defer { gateway.stop() }
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try PushbenchBinary.run(["--target", gateway.url, "--rps", "1000", "--duration", "1s", "--warmup", "0s",
                                         "--out", out.path, "--quiet"])
        #expect(r.status == 0, "\(r.err)")
        let machine = try #require(try PushbenchBinary.summary(out)["machine"] as? [String: Any])
        #expect((machine["driver_cpu_wait_ms"] as? Double ?? -1) >= 0)
        #expect(machine["gateway_cpu_wait_ms"] is NSNull, "another process's threads: \(machine)")
    }

    @Test func aProcessThatMayNotRunRealtimeIsRefusedBeforeAnyTraffic() throws {
        try #require(geteuid() == 0, "needs root to run the binary as nobody")
        // A copy in a folder anyone may enter: the build folder may sit where nobody cannot reach.
        let folder = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        let bin = folder.appendingPathComponent("pushbench")
        try FileManager.default.copyItem(at: try #require(PushbenchBinary.url), to: bin)
        let r = try PushbenchBinary.run(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin.path,
                                         "--rps", "1000", "--duration", "1s", "--realtime", "--out", "/nonexistent-root"],
                                        executable: URL(fileURLWithPath: "/usr/bin/setpriv"))
        #expect(r.status == 2, "\(r.err)")
        #expect(r.err.contains("--realtime: this process may not run threads real-time (SCHED_FIFO): Operation not permitted"), "\(r.err)")
    }

    @Test func aClosedLoopRefusesRealtime() throws {
        let r = try PushbenchBinary.run(["--rps", "max", "--requests", "10", "--realtime", "--out", "/nonexistent-root"])
        #expect(r.status == 2, "\(r.err)")
        #expect(r.err.contains("--realtime: not with --rps max"), "\(r.err)")
    }
}
