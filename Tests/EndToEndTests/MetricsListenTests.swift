import Foundation
@testable import MockGateway
import Testing

/// `pushbench run --metrics-listen`: a Prometheus scraper (Python's urllib over HTTP/1.1 and
/// prometheus_client's parser, installed by scripts/setup) follows the run while it lasts.
@Suite(.serialized) struct MetricsListenTests {
    static let scrape = """
    import sys, urllib.request
    from prometheus_client.parser import text_string_to_metric_families
    r = urllib.request.urlopen('http://127.0.0.1:%s/metrics' % sys.argv[1], timeout=5)
    assert r.status == 200, r.status
    assert r.headers['content-type'].startswith('text/plain; version=0.0.4'), r.headers['content-type']
    for family in text_string_to_metric_families(r.read().decode()):
        for s in family.samples:
            labels = ','.join('%s="%s"' % (k, s.labels[k]) for k in sorted(s.labels))
            print('%s%s %r' % (s.name, '{' + labels + '}' if labels else '', s.value))
    """

    /// One scrape: the samples by `name{labels}`, or nil when nothing answered.
    static func scrape(_ port: Int) throws -> [String: Double]? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", scrape, String(port)]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let problem = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        if p.terminationStatus != 0 {
            // Refused: the endpoint is not there (before the run or after it). Anything else is a failure.
            #expect(problem.contains("Connection refused"), "\(problem)")
            return nil
        }
        var samples: [String: Double] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let space = line.lastIndex(of: " "), let v = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = v
        }
        return samples
    }

    @Test func aRunIsScrapeableOverHTTP1WhileItRuns() throws {
        let bin = try #require(PushbenchBinary.url)
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let errURL = out.appendingPathComponent("stderr.txt")
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let p = Process()
        p.executableURL = bin
        p.arguments = ["--rps", "400", "--duration", "4s", "--warmup", "1s", "--label", "scraped", "--quiet",
                       "--metrics-listen", "127.0.0.1:0", "--out", out.appendingPathComponent("results").path]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = try FileHandle(forWritingTo: errURL)
        try p.run()
        defer { if p.isRunning { p.terminate() } }

        var port: Int?
        for _ in 0..<300 where port == nil {
            let text = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
            if let r = text.range(of: "metrics at http://127.0.0.1:"),
               let end = text[r.upperBound...].firstIndex(of: "/") {
                port = Int(text[r.upperBound..<end])
            }
            if port == nil { usleep(100_000) }
        }
        let scrapePort = try #require(port, "no 'metrics at' line: \((try? String(contentsOf: errURL, encoding: .utf8)) ?? "")")

        var seen: [String: Double] = [:]
        for _ in 0..<100 {
            if let m = try Self.scrape(scrapePort) {
                seen = m
                if (m["pushbench_run_requests_sent_total"] ?? 0) > 0, m["pushbench_run_latency_seconds{quantile=\"0.99\"}"] != nil { break }
            }
            usleep(200_000)
        }
        #expect(seen.keys.contains { $0.hasPrefix("pushbench_run_info{label=\"scraped\",protocol=\"apns\",target=") })
        #expect(seen["pushbench_run_target_rps"] == 400)
        #expect((seen["pushbench_run_requests_sent_total"] ?? 0) > 0)
        #expect((seen["pushbench_run_responses_total"] ?? 0) > 0)
        #expect(seen["pushbench_run_errors_total"] == 0)
        #expect((seen["pushbench_run_latency_seconds{quantile=\"0.99\"}"] ?? 0) > 0)

        while p.isRunning { usleep(50_000) }
        #expect(p.terminationStatus == 0)
        #expect(try Self.scrape(scrapePort) == nil, "the endpoint closes with the run")
    }

    @Test func aBadOrBusyAddressIsExit2BeforeAnyTraffic() throws {
        let out = PushbenchBinary.tempDir()
        defer { try? FileManager.default.removeItem(at: out) }
        let bad = try PushbenchBinary.run(["--metrics-listen", "nowhere", "--duration", "1s", "--out", out.path])
        #expect(bad.status == 2)
        #expect(bad.err.contains("--metrics-listen: 'nowhere' is not HOST:PORT"), "\(bad.err)")

        let gateway = try EmbeddedGateway.start(try GatewayConfiguration.parse(["--listen", "127.0.0.1:0"]))
        defer { gateway.stop() }
        let busy = try PushbenchBinary.run(["--metrics-listen", "127.0.0.1:\(gateway.port)", "--duration", "1s", "--out", out.path])
        #expect(busy.status == 2)
        #expect(busy.err.contains("--metrics-listen: listen 127.0.0.1:\(gateway.port): bind"), "\(busy.err)")
        let written = (try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []
        #expect(!written.contains("latest"), "no run folder for a run that never started")
    }
}
