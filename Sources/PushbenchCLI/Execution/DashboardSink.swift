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

    func append(_ second: TimelineInterval) {
        dashboard.publish(second: second)
        if let inner { inner.append(second) } else { kept.append(second) }
    }
}
