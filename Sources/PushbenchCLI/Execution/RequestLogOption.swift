import Foundation
import LoadGenerator
import PushMetrics
import PushVocabulary

extension RunExecution {
    /// The `--log` file, opened before any traffic (exit 2 when it cannot be), or nil without `--log`; a
    /// pipeline run gives its id prefix, and its pushes go to the log too.
    func openRequestLog(threads: Int, pipelinePrefix: [UInt8]? = nil) throws(Failure) -> RequestLog? {
        guard let path = options.logFile else { return nil }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        do throws(LoadRunError) {
            return try RequestLog(path: absolute, threads: threads,
                                  filter: RequestLogFilter(fraction: options.logSample,
                                                           slowerThanNs: UInt64((options.logSlowerThanSeconds * 1e9).rounded())),
                                  seed: options.seed, apnsIDs: options.pushProtocol == .apns && !options.noApnsID
                                      && options.pipeline.requestFile == nil, pipelinePrefix: pipelinePrefix)
        } catch {
            throw Failure(status: 2, message: error.description)
        }
    }

    /// Ends the log (its writer finishes what is queued), adds summary.json's `request_log` section and
    /// says on stderr what was dropped or why the log stopped.
    func closeRequestLog(_ log: RequestLog?, record: inout RunRecord) {
        guard let log else { return }
        log.finish()
        let command = options.pipeline.requestFile == nil ? "run" : "pipeline"
        if let why = log.failure {
            printError("pushbench \(command): WARNING: --log \(log.path) stopped after \(log.written) records: \(why); the run went on")
        }
        if log.dropped > 0 {
            printError("pushbench \(command): WARNING: --log left out \(log.dropped) records: the log writer fell behind the requests (try --log-sample)")
        }
        record.extra.append(("request_log", .object([
            ("path", .string(log.path)),
            ("format", .string("csv")),
            ("written", .int(Int64(log.written))),
            ("arrivals", .int(Int64(log.arrivalsWritten))),
            ("dropped", .int(Int64(log.dropped))),
            ("sample", .double(options.logSample)),
            ("slower_than_us", .int(Int64(options.logSlowerThanSeconds * 1e6))),
            ("stopped", log.failure.map { .string($0) } ?? .null),
        ])))
    }
}
