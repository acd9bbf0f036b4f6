import PushMetrics

/// The timeline's sink with `--dashboard`: each merged second goes to the dashboard (on the main thread,
/// where the timeline merges it) and on to the run folder's spool, or is kept for the record when there
/// is no spool.
final class DashboardSink: TimelineSink {
    let inner: TimelineSink?
    let dashboard: RunDashboard
    /// The seconds, when there is no inner sink.
    private(set) var kept: [TimelineInterval] = []

    init(inner: TimelineSink?, dashboard: RunDashboard) {
        self.inner = inner
        self.dashboard = dashboard
    }

    /// The dashboard shows each second's errors by reason.
    var wantsErrors: Bool { true }

    func append(_ second: TimelineInterval) { append(second, errors: nil) }

    func append(_ second: TimelineInterval, errors: [String: Int64]?) {
        dashboard.publish(second: second, errors: errors)
        if let inner { inner.append(second, errors: errors) } else { kept.append(second) }
    }
}
