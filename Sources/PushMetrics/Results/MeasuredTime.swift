import Foundation

/// When a run was measuring, as spans of seconds since its start: one span for a run, one per agent
/// for a merged run (overlapping agents joined), so a chart can tell a second nobody measured from a
/// second in which nothing happened.
struct MeasuredTime: Sendable, Equatable {
    /// One stretch of measured time, in seconds since the run's start.
    public struct Span: Sendable, Equatable {
        /// First instant measured.
        public var start: Double
        /// End of the measured time.
        public var end: Double

        /// Creates a span.
        public init(start: Double, end: Double) {
            self.start = start
            self.end = end
        }
    }

    /// Disjoint spans, in order.
    var spans: [Span]

    /// The union of `spans`.
    init(spans: [Span]) {
        var out: [Span] = []
        for s in spans.sorted(by: { $0.start < $1.start }) where s.end > s.start {
            if let last = out.last, s.start <= last.end {
                out[out.count - 1].end = Swift.max(last.end, s.end)
            } else {
                out.append(s)
            }
        }
        self.spans = out
    }

    /// The measured time of `record`: for a merged run, each agent's span from summary.json
    /// `merged_from` (`offset_s`, `measured_s`); for a merged run written without them, the stretches of
    /// consecutive seconds its intervals cover; otherwise 0 … `measuredSeconds`.
    init(record r: RunRecord) {
        guard case .array(let agents)? = r.extra.first(where: { $0.0 == "merged_from" })?.1 else {
            self.init(spans: [Span(start: 0, end: Swift.max(r.measuredSeconds, 0))])
            return
        }
        let known = agents.compactMap { a -> Span? in
            guard let offset = a["offset_s"]?.number, let measured = a["measured_s"]?.number else { return nil }
            return Span(start: offset, end: offset + measured)
        }
        if known.count == agents.count && !known.isEmpty {
            self.init(spans: known)
            return
        }
        var spans: [Span] = []
        for s in Set(r.intervals.map(\.second)).sorted() {
            if let last = spans.last, Double(s) == last.end {
                spans[spans.count - 1].end += 1
            } else {
                spans.append(Span(start: Double(s), end: Double(s + 1)))
            }
        }
        self.init(spans: spans)
    }

    /// Spans with nothing measured between the first start and the last end.
    public var gaps: [Span] {
        zip(spans, spans.dropFirst()).map { Span(start: $0.end, end: $1.start) }
    }

    /// Total measured seconds.
    var length: Double { spans.reduce(0) { $0 + $1.end - $1.start } }

    /// True when the whole second [s, s + 1) lies in one span: a rate over it is a real rate.
    func coversWholeSecond(_ s: Int) -> Bool {
        spans.contains { $0.start <= Double(s) + 1e-6 && Double(s + 1) <= $0.end + 1e-6 }
    }

    /// True when some of second s was measured.
    func touches(_ s: Int) -> Bool {
        spans.contains { $0.start < Double(s + 1) - 1e-6 && Double(s) < $0.end - 1e-6 }
    }
}
