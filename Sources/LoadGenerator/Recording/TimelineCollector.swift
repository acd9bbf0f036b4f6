import PushMetrics

/// The main thread's side of the per-second timeline: takes the seconds the driver threads close from
/// their outboxes, merges each second once every thread has passed it, adds the host steal and the
/// schedule's target, and hands it to a ``TimelineSink`` (streamed to the run folder) or, without one,
/// keeps it for ``LoadResult/intervals``.
///
/// With a sink it holds a few seconds at most, however long the run: the seconds a thread is ahead of
/// the slowest, and the steal samples not yet matched to a second.
final class TimelineCollector {
    private let outboxes: [IntervalOutbox]
    private var merger: TimelineMerger
    // Merged seconds waiting for their steal sample.
    private var merged: [TimelineInterval] = []
    private let target: ScheduleTarget?
    private let sink: TimelineSink?
    /// The merged seconds, when there is no sink.
    private(set) var kept: [TimelineInterval] = []
    // Host steal per measured second, ms: `steal[k]` is second `stealBase + k`; `stealSeconds` seconds
    // are known (a sample is taken at each second boundary by the main thread).
    private var steal: [Int64] = []
    private var stealBase = 0
    private var stealSeconds = 0
    private var sampling = false
    // Per thread: the last second it closed, and whether it will close no more.
    private var lastClosed: [Int]
    private var ended: [Bool]

    init(outboxes: [IntervalOutbox], target: ScheduleTarget?, sink: TimelineSink?) {
        self.outboxes = outboxes
        lastClosed = Array(repeating: -1, count: outboxes.count)
        ended = Array(repeating: false, count: outboxes.count)
        merger = TimelineMerger(sources: outboxes.count)
        self.target = target
        self.sink = sink
    }

    /// The error answers of merged second `second` over every thread, by reason; nil when a thread's ring
    /// no longer holds it.
    private func failures(ofSecond second: Int) -> [String: Int64]? {
        var counts: [String: Int64] = [:]
        for (k, box) in outboxes.enumerated() where !box.failures.add(second: second, into: &counts) {
            // A thread that ended before this second (nothing happened on it in the last, partial second)
            // had no error answers in it.
            if ended[k] && second > lastClosed[k] { continue }
            return nil
        }
        return counts
    }

    /// Intervals held here: those waiting for a thread, and those kept without a sink.
    var retained: Int { merger.retained + merged.count + kept.count }

    /// Steal sampling has started: from now on a second waits for its sample before it goes.
    func startSteal() { sampling = true }

    /// The steal of the next measured second.
    func addSteal(_ ms: Int64) {
        steal.append(ms)
        stealSeconds += 1
    }

    /// Takes what the threads closed and passes on every second that is complete; with `final` (every
    /// thread has finished, the last steal sample taken), everything.
    func collect(final: Bool = false) {
        for (k, box) in outboxes.enumerated() {
            let (intervals, ended) = box.take()
            for i in intervals { merger.add(i, from: k) }
            if let last = intervals.last { lastClosed[k] = last.second }
            if ended {
                merger.end(source: k)
                self.ended[k] = true
            }
        }
        merged += merger.takeReady(all: final)
        // A second whose steal sample is due waits for it (a poll or two).
        let count = sampling && !final ? merged.prefix { $0.second < stealSeconds }.count : merged.count
        for var i in merged[..<count] {
            if i.second < stealSeconds && i.second >= stealBase { i.stealMs = steal[i.second - stealBase] }
            if let target { i.target = target.sent(inSecond: i.second) }
            if let sink { sink.append(i, errors: sink.wantsErrors ? failures(ofSecond: i.second) : nil) } else { kept.append(i) }
            // Samples of seconds passed on are not needed again (seconds go in order).
            let drop = Swift.min(i.second + 1 - stealBase, steal.count)
            if drop > 0 {
                steal.removeFirst(drop)
                stealBase += drop
            }
        }
        merged.removeFirst(count)
    }
}
