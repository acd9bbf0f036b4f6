import LoadGenerator
import PushMetrics
import PushVocabulary

/// `pushbench pipeline --dashboard`: each second the pipeline's ledger closes, as a `pipeline` event
/// (main thread, where the ledger is polled): the front door's answers beside the pushes that reached the
/// egress, the backlog, the end-to-end percentiles of the second, and lost and duplicated so far.
enum PipelineDashboard {
    /// Publishes the seconds of `pipeline` from index `from` on; returns how many are published now.
    static func show(_ pipeline: PipelineRun, from: Int, on dashboard: RunDashboard) -> Int {
        let seconds = pipeline.seconds
        guard from < seconds.count else { return seconds.count }
        let counts = pipeline.ledger?.counts
        for s in seconds[from...] {
            dashboard.publish(event: "pipeline", json: line(s, lost: counts?.lost, duplicated: counts?.duplicated), second: s.second)
        }
        return seconds.count
    }

    /// One second's event data.
    static func line(_ s: PipelineLedger.Second, lost: Int64?, duplicated: Int64?) -> String {
        JSONWriter.text { w in
            w.object { o in
                o.member("second", Int64(s.second))
                o.member("front_door", s.frontDoor)
                o.member("apns", s.apns)
                o.member("fcm", s.fcm)
                o.member("egress", s.apns + s.fcm)
                o.member("backlog", s.backlog)
                if let h = s.histogram?.decode(), h.totalCount > 0 {
                    o.member("p50_us", h.valueAtPercentile(50))
                    o.member("p90_us", h.valueAtPercentile(90))
                    o.member("p99_us", h.valueAtPercentile(99))
                    o.member("p999_us", h.valueAtPercentile(99.9))
                    o.member("max_us", h.max)
                }
                if let lost { o.member("lost_so_far", lost) }
                if let duplicated { o.member("duplicated_so_far", duplicated) }
            }
        }
    }
}
