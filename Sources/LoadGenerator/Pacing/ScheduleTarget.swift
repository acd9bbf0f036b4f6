/// What the schedule asked of this process in each measured second: the `target` column of
/// timeline.csv beside `sent`. For an agent of several (`--segment`) it is the agent's own share, so the
/// agents' targets add up to the whole schedule's when their runs are merged.
struct ScheduleTarget {
    private let plan: DriverPlan

    /// The target of `config`'s open-loop schedule; nil for the closed loop.
    init?(_ config: LoadConfiguration) {
        guard config.rate != nil || config.schedule != nil else { return nil }
        plan = DriverPlan(rate: config.rate, threads: 1, warmupNs: config.warmupNs, durationNs: config.durationNs,
                          requests: config.requests, capacity: 1, schedule: config.schedule,
                          segment: config.segment, segments: config.segments)
        schedule = plan.pacingSchedule
        total = plan.totalRequests
    }

    private let schedule: RateSchedule?
    private let total: Int64

    /// Requests of this agent intended in measured second `second` (0 after the schedule's end).
    func sent(inSecond second: Int) -> Int64 {
        guard second >= 0 else { return 0 }
        let from = plan.warmupNs + UInt64(second) * 1_000_000_000
        return share(below: globalCount(before: from + 1_000_000_000)) - share(below: globalCount(before: from))
    }

    // Global requests whose intended time is before `offset` ns after t0.
    private func globalCount(before offset: UInt64) -> Int64 {
        if let schedule { return min(schedule.count(before: offset), total) }
        guard let rate = plan.rate, offset > 0 else { return 0 }
        // floor(g·1e9/rate) < offset ⟺ g·1e9 < offset·rate ⟺ g < ceil(offset·rate / 1e9)
        let p = offset.multipliedFullWidth(by: UInt64(rate))
        let (q, r) = UInt64(1_000_000_000).dividingFullWidth(p)
        return min(Int64(q) + (r > 0 ? 1 : 0), total)
    }

    private func share(below count: Int64) -> Int64 {
        let i = Int64(plan.segment), n = Int64(plan.segments)
        return count > i ? (count - i - 1) / n + 1 : 0
    }
}
