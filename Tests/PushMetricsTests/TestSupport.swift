import Foundation
@testable import PushMetrics

/// Deterministic run records for the writer, reader, merge, compare and report tests.
enum Fixtures {
    /// 2026-11-29 12:00:00 UTC.
    static let start = Date(timeIntervalSince1970: 1_795_953_600)

    /// One thread's share of a run: per-second histograms and counts.
    static func threadIntervals(thread: Int, seconds: Int, rate: Int, slowSecond: Int? = nil) -> [TimelineInterval] {
        var rng = SeededRandom(seed: UInt64(1000 + thread))
        let lat = HdrHistogram.latencyMicroseconds(), svc = HdrHistogram.latencyMicroseconds()
        var out: [TimelineInterval] = []
        for s in 0..<seconds {
            var ok: Int64 = 0, failed: Int64 = 0
            for k in 0..<rate {
                let base = Int64(600 + (k % 7) * 40) + Int64.random(in: 0...400, using: &rng)
                let stall: Int64 = (s == slowSecond) ? 20_000 : (k % 997 == 0 ? 9_000 : 0)
                svc.record(base)
                lat.record(base + stall)
                if k % 250 == 0 { failed += 1 } else { ok += 1 }
            }
            let te: Int64 = s == 3 ? 2 : 0
            out.append(TimelineInterval(second: s, sent: Int64(rate) + te, completed: ok + failed, succeeded: ok,
                                        failed: failed, transportErrors: te, latency: lat, serviceTime: svc,
                                        stealMs: Int64((s * 7 + thread * 3) % 11)))
            lat.reset()
            svc.reset()
        }
        return out
    }

    /// A consistent record built from the given threads' intervals.
    static func record(label: String = "fixture", threads: [Int] = [0, 1], seconds: Int = 10, rate: Int = 500,
                       slowSecond: Int? = nil) -> RunRecord {
        var r = RunRecord(label: label, startedAt: start,
                          config: RunConfig(target: "embedded", protocolName: "apns", rps: rate * threads.count, durationSeconds: Double(seconds),
                                            connections: 8, streams: 100, threads: threads.count, encoder: "zerocopy"))
        r.version = "0.1.0"
        r.intervals = threads.flatMap { threadIntervals(thread: $0, seconds: seconds, rate: rate, slowSecond: slowSecond) }
        addUp(&r)
        r.counts.byStatus["200"] = r.counts.succeeded
        if r.counts.failed > 0 {
            r.counts.byStatus["410"] = r.counts.failed
            r.counts.byReason["Unregistered"] = r.counts.failed
        }
        r.measuredSeconds = Double(seconds)
        r.cpuUserSeconds = 1.25 * Double(threads.count)
        r.cpuSystemSeconds = 0.5 * Double(threads.count)
        r.maxRSSBytes = 50_000_000
        r.extra = [("warmup", .object([("sent", .int(100)), ("duration_s", .double(2))])), ("backlog_max", .int(3))]
        return r
    }

    /// Adds the record's intervals into its whole-run histograms and counts.
    static func addUp(_ r: inout RunRecord) {
        for i in r.intervals {
            r.latency.add(i.latency.decode())
            r.serviceTime.add(i.serviceTime.decode())
            r.counts.sent += i.sent
            r.counts.completed += i.completed
            r.counts.succeeded += i.succeeded
            r.counts.failed += i.failed
            r.counts.transportErrors += i.transportErrors
        }
    }

    static func sampleRecord() -> RunRecord { record() }

    static func tempDir(_ name: String = "pushmetrics") throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    static func fixtureURL(_ name: String) -> URL {
        Bundle.module.url(forResource: "Fixtures", withExtension: nil)!.appendingPathComponent(name)
    }

    static func text(_ url: URL) throws -> String {
        String(decoding: try Data(contentsOf: url), as: UTF8.self)
    }
}
