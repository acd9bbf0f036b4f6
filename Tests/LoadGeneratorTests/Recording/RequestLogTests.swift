import Foundation
import Synchronization
import PushPayload
import Testing
@testable import LoadGenerator

/// The `--log` writer without a run: records queued on the rings come out as CSV lines, each once; a
/// full ring drops and counts; a write that fails stops the log; the sample keeps its fraction.
@Suite struct RequestLogTests {
    static func record(_ seq: Int64, thread: UInt8 = 0, latencyUs: UInt64 = 1_000) -> RequestLogRecord {
        let intended = 1_000_000 + UInt64(seq) * 20_000
        return RequestLogRecord(sequence: seq, intended: intended, sent: intended + 5_000, answered: intended + latencyUs * 1_000,
                                tokenIndex: Int32(seq % 7), connection: 1 + Int32(seq % 3), stream: 1 + 2 * Int32(seq % 50),
                                requestBytes: 160, responseBytes: 0, status: 200, thread: thread)
    }

    static func rows(_ url: URL) throws -> [[String]] {
        try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
    }

    @Test func everyQueuedRecordIsWrittenOnce() throws {
        let dir = {
            let d = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-test-\(UUID().uuidString)")
            try? FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
            return d
        }()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("log.csv")
        let log = try RequestLog(path: file.path, threads: 2, filter: RequestLogFilter(), seed: 1, apnsIDs: true, capacity: 1 << 10)
        log.start(t0: 1_000_000)
        // Two producers, far more records than a ring holds: the writer drains as they come.
        let finished = Atomic<Int>(0)
        let producers = (0..<2).map { t in
            Thread {
                for k in 0..<20_000 {
                    let seq = Int64(k * 2 + t)
                    // Bounded: the writer drains every 5 ms at most.
                    var tries = 0
                    while !log.rings[t].push(Self.record(seq, thread: UInt8(t))) && tries < 10_000 {
                        tries += 1
                        usleep(100)
                    }
                }
                finished.add(1, ordering: .releasing)
            }
        }
        for p in producers { p.start() }
        let deadline = Date().addingTimeInterval(60)
        while finished.load(ordering: .acquiring) < 2 && Date() < deadline { usleep(10_000) }
        log.finish()
        let rows = try Self.rows(file)
        #expect(rows.first == RequestLog.header.dropLast().split(separator: ",").map(String.init))
        let body = rows.dropFirst()
        #expect(body.count == 40_000 && log.written == 40_000)
        #expect(Set(body.map { $0[1] }).count == 40_000)
        let first = try #require(body.first { $0[1] == "6" })
        // seq 6: intended 120 µs after t0, sent 5 µs late, answered after 1 ms.
        #expect(first[0] == "request")
        #expect(first[2...14] == ["measured", "0", "1", "13", "6", "120", "125", "1120", "1000", "995", "5", "200", ""])
        #expect(first[18].count == 36, "an apns-id")
        #expect(first[19...21] == ["", "", ""], "no pipeline id, route or arrival outside a pipeline run")
    }

    /// A pipeline run's log: request lines and push lines in one file, of one width, joined by the
    /// pipeline id.
    @Test func aPipelineLogHasTheRequestsAndThePushes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("log.csv")
        let log = try RequestLog(path: file.path, threads: 1, filter: RequestLogFilter(), seed: 1, apnsIDs: false,
                                 pipelinePrefix: Array("pb-7f3a-".utf8))
        let arrivals = try #require(log.arrivals)
        #expect(log.rings[0].push(Self.record(6)))
        // Request 6 was intended at 120 µs; its push arrived 3 ms later, then once more.
        #expect(arrivals.push(ArrivalLogRecord(index: 6, intended: 1_120_000, arrived: 4_120_000, tokenIndex: 4, status: 200, route: 1,
                                               verdict: PipelineLedger.Verdict.delivered.rawValue)))
        #expect(arrivals.push(ArrivalLogRecord(index: 6, intended: 1_120_000, arrived: 5_000_000, status: 200, route: 1,
                                               verdict: PipelineLedger.Verdict.duplicate.rawValue)))
        #expect(arrivals.push(ArrivalLogRecord(index: PushArrival.noID, intended: 0, arrived: 6_000_000, status: 410, route: 0,
                                               verdict: PipelineLedger.Verdict.noID.rawValue)))
        log.start(t0: 1_000_000)
        log.finish()
        #expect(log.written == 4 && log.arrivalsWritten == 3)
        let rows = try Self.rows(file)
        #expect(rows.allSatisfy { $0.count == rows[0].count }, "\(rows)")
        let header = rows[0]
        func row(_ r: [String]) -> [String: String] { Dictionary(uniqueKeysWithValues: zip(header, r)) }
        let request = row(rows[1]), push = row(rows[2]), again = row(rows[3]), stray = row(rows[4])
        #expect(request["kind"] == "request" && request["pipeline_id"] == "pb-7f3a-000000006" && request["arrival"] == "")
        #expect(push == ["kind": "arrival", "seq": "6", "phase": "measured", "thread": "", "connection": "", "stream": "", "token": "4",
                         "intended_us": "120", "sent_us": "", "answered_us": "3120", "latency_us": "3000", "service_us": "", "late_us": "",
                         "status": "200", "reason": "", "attempt": "", "request_bytes": "", "response_bytes": "", "push_id": "",
                         "pipeline_id": "pb-7f3a-000000006", "route": "fcm", "arrival": "delivered"])
        #expect(again["arrival"] == "duplicate" && again["token"] == "")
        #expect(stray["seq"] == "" && stray["pipeline_id"] == "" && stray["route"] == "apns" && stray["arrival"] == "no_id"
                && stray["status"] == "410" && stray["latency_us"] == "")
    }

    @Test func aFullRingDropsAndCounts() throws {
        let dir = {
            let d = FileManager.default.temporaryDirectory.appendingPathComponent("pushbench-test-\(UUID().uuidString)")
            try? FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
            return d
        }()
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = try RequestLog(path: dir.appendingPathComponent("log.csv").path, threads: 1, filter: RequestLogFilter(), seed: 1,
                                 apnsIDs: false, capacity: 8)
        // No writer running: the ring fills after 8 records.
        let pushed = (0..<20).filter { log.rings[0].push(Self.record(Int64($0))) }.count
        #expect(pushed == 8 && log.dropped == 12)
        log.finish()
        #expect(log.written == 8)
    }

    @Test func aFailedWriteStopsTheLog() throws {
        let log = try RequestLog(path: "/dev/full", threads: 1, filter: RequestLogFilter(), seed: 1, apnsIDs: false)
        #expect(log.failure?.contains("No space left on device") == true)
        log.start(t0: 0)
        for k in 0..<1_000 { log.rings[0].push(Self.record(Int64(k))) }
        log.finish()
        #expect(log.written == 0)
        #expect(log.failure != nil)
    }

    @Test func aFileThatCannotBeOpenedIsBadInput() {
        #expect(throws: LoadRunError.self) {
            _ = try RequestLog(path: "/nonexistent-dir/log.csv", threads: 1, filter: RequestLogFilter(), seed: 1, apnsIDs: false)
        }
        do { _ = try RequestLog(path: "/nonexistent-dir/log.csv", threads: 1, filter: RequestLogFilter(), seed: 1, apnsIDs: false) } catch {
            #expect(error.badInput && error.description == "--log: /nonexistent-dir/log.csv: No such file or directory")
        }
    }

    @Test func theSampleKeepsItsFractionAndTheFloorItsLatency() {
        for fraction in [0.01, 0.1, 0.5] {
            let f = RequestLogFilter(fraction: fraction)
            let kept = (0..<Int64(100_000)).filter { f.keeps(sequence: $0, latencyNs: 0) }.count
            #expect(abs(Double(kept) / 100_000 - fraction) < fraction * 0.05, "\(fraction): \(kept)")
            // The same requests every time.
            #expect((0..<Int64(1_000)).filter { f.keeps(sequence: $0, latencyNs: 0) }
                    == (0..<Int64(1_000)).filter { RequestLogFilter(fraction: fraction).keeps(sequence: $0, latencyNs: 0) })
        }
        #expect((0..<Int64(1_000)).allSatisfy { RequestLogFilter().keeps(sequence: $0, latencyNs: 0) })
        let floor = RequestLogFilter(slowerThanNs: 2_000_000)
        #expect(!floor.keeps(sequence: 1, latencyNs: 1_999_999))
        #expect(floor.keeps(sequence: 1, latencyNs: 2_000_000))
    }
}
