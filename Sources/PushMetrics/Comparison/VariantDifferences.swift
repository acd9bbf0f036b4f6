import Foundation

/// How an A/B variant differs from the reference, metric by metric, judged against the round-to-round
/// spread: a difference is only a regression when the whole-run change is past the metric's
/// threshold, the difference between the two variants' median rounds is past it too, the middle
/// halves of the two variants' rounds (their interquartile ranges) do not overlap, and both variants
/// ran enough rounds to show that spread. Medians and quartiles of rounds, not the whole run and the
/// range, because one stalled round moves a whole-run p99 and a range by itself.
extension VariantComparison {
    /// Rounds each variant needs before one of its differences can be called a regression.
    static let minimumRounds = 3

    /// The verdict on one metric of one variant.
    enum DifferenceVerdict: String, Sendable {
        /// Moved in the good direction.
        case better
        /// Unchanged.
        case same
        /// Moved in the bad direction, within the threshold (or not gated).
        case worse
        /// Past the threshold, but no larger than the round-to-round spread.
        case noise = "within noise"
        /// Past the threshold, but a variant ran fewer than ``VariantComparison/minimumRounds`` rounds.
        case tooFewRounds = "too few rounds"
        /// Past the threshold, but the rounds have no figure of this metric to measure the spread by.
        case unjudged = "no round figures"
        /// Past the threshold and past the spread.
        case regression = "REGRESSION"
        /// Missing in one of the runs.
        case missing = "n/a"
    }

    /// One metric of one variant against the reference.
    struct Difference: Sendable {
        /// Metric name (as `pushbench compare --threshold` spells it, or `cpu_s_per_million`).
        var metric: String
        /// True when larger is better (throughput).
        var higherIsBetter: Bool
        /// The reference's whole-run value, and this variant's.
        var reference: Double?, value: Double?
        /// Threshold in percent (nil: reported, not gated).
        var threshold: Double?
        /// Change of the median round against the reference's median round, in percent (nil without
        /// round figures).
        var roundChangePercent: Double?
        /// Round-to-round spread in percent of the reference's median round: the larger of the two
        /// variants' interquartile ranges over their rounds; nil when either has fewer than two rounds
        /// with the figure.
        var spreadPercent: Double?
        /// Rounds with the figure: the fewer of the two variants'.
        var rounds: Int
        /// The verdict.
        var verdict: DifferenceVerdict

        /// Change against the reference in percent (nil when unknown or from 0).
        var changePercent: Double? {
            guard let b = reference, let n = value, b != 0 else { return nil }
            return (n - b) / abs(b) * 100
        }

        /// "+18.65% (rounds +12.0%, spread 25.1%)".
        var text: String {
            guard let b = reference, let n = value else { return "n/a" }
            let change = changePercent.map { String(format: "%+.2f%%", $0) } ?? (b == n ? "0" : String(format: "%+g", n - b))
            guard let r = roundChangePercent, let s = spreadPercent else { return change }
            return change + String(format: " (rounds %+.1f%%, spread %.1f%%)", r, s)
        }
    }

    /// A round's figure of `metric`, where rounds have one.
    static func roundFigure(_ metric: String) -> ((RoundPoint) -> Double?)? {
        switch metric {
        case "achieved_rps": return { $0.achievedRPS }
        case "p50": return { Double($0.p50) }
        case "p99": return { Double($0.p99) }
        case "p999": return { $0.p999.map(Double.init) }
        case "cpu_s_per_million": return { $0.cpuSecondsPerMillion }
        default: return nil
        }
    }

    /// Each entry's differences from the reference (empty for the reference): the gated metrics of
    /// `pushbench compare`, then the CPU per million pushes (reported with its spread, not gated).
    var differences: [[Difference]] {
        guard let ref = entries.first else { return [] }
        return entries.enumerated().map { i, e in
            guard i > 0, let c = againstReference[i] else { return [] }
            var out = c.rows.filter { $0.threshold != nil }.map { row in
                judge(row.metric.name, higherIsBetter: row.metric.higherIsBetter, ref: ref, entry: e,
                      b: row.base, n: row.new, threshold: row.threshold)
            }
            out.append(judge("cpu_s_per_million", higherIsBetter: false, ref: ref, entry: e,
                             b: ref.cpuSecondsPerMillion, n: e.cpuSecondsPerMillion, threshold: nil))
            return out
        }
    }

    func judge(_ metric: String, higherIsBetter: Bool, ref: Entry, entry e: Entry, b: Double?, n: Double?, threshold: Double?) -> Difference {
        let figure = Self.roundFigure(metric)
        let refRounds = figure.map { f in ref.perRound.compactMap(f) } ?? []
        let rounds = figure.map { f in e.perRound.compactMap(f) } ?? []
        var roundChange: Double?, spread: Double?
        if refRounds.count >= 2, rounds.count >= 2 {
            let refMedian = Self.quantile(refRounds, 0.5)
            if refMedian != 0 {
                roundChange = (Self.quantile(rounds, 0.5) - refMedian) / abs(refMedian) * 100
                let iqr = { (v: [Double]) in Self.quantile(v, 0.75) - Self.quantile(v, 0.25) }
                spread = Swift.max(iqr(refRounds), iqr(rounds)) / abs(refMedian) * 100
            }
        }
        var d = Difference(metric: metric, higherIsBetter: higherIsBetter, reference: b, value: n, threshold: threshold,
                           roundChangePercent: roundChange, spreadPercent: spread,
                           rounds: Swift.min(refRounds.count, rounds.count), verdict: .missing)
        let m = RunComparison.Metric(name: metric, label: metric, higherIsBetter: higherIsBetter, defaultThreshold: threshold) { _ in nil }
        switch RunComparison.verdict(m, b, n, threshold) {
        case .better: d.verdict = .better
        case .same: d.verdict = .same
        case .worse: d.verdict = .worse
        case .missing: d.verdict = .missing
        case .regression:
            if figure == nil || (refRounds.isEmpty && rounds.isEmpty) {
                // Errors are failures, not timing noise: any rise past the threshold stands.
                d.verdict = metric == "transport_errors" ? .regression : .unjudged
            } else if d.rounds < Self.minimumRounds {
                d.verdict = .tooFewRounds
            } else if let change = roundChange, (higherIsBetter ? -change : change) > (threshold ?? 0),
                      Self.separated(worse: rounds, than: refRounds, higherIsBetter: higherIsBetter) {
                d.verdict = .regression
            } else {
                d.verdict = .noise
            }
        }
        return d
    }

    /// Whether the middle halves of the two variants' rounds do not overlap, the worse side beyond:
    /// the difference is then larger than either side's round-to-round spread. Judged on the rounds'
    /// own values rather than in percent of the reference, so a slowed variant whose rounds scatter
    /// widely in absolute terms (a loaded machine stretches a 5 ms round more than a 0.3 ms one) is
    /// still told apart from a reference it never comes near.
    static func separated(worse rounds: [Double], than refRounds: [Double], higherIsBetter: Bool) -> Bool {
        higherIsBetter ? quantile(rounds, 0.75) < quantile(refRounds, 0.25)
                       : quantile(rounds, 0.25) > quantile(refRounds, 0.75)
    }

    /// The `q` quantile of `values` (linear between the sorted values; `values` not empty).
    static func quantile(_ values: [Double], _ q: Double) -> Double {
        let v = values.sorted()
        let pos = q * Double(v.count - 1)
        let i = Int(pos.rounded(.down)), f = pos - Double(i)
        return i + 1 < v.count ? v[i] + (v[i + 1] - v[i]) * f : v[i]
    }

    /// The verdict column of the table for entry `i`.
    func verdictText(_ diffs: [Difference]) -> String {
        func list(_ v: DifferenceVerdict) -> [String] { diffs.filter { $0.verdict == v }.map { "\($0.metric) \($0.text)" } }
        let regressions = list(.regression)
        if !regressions.isEmpty { return "REGRESSION: " + regressions.joined(separator: ", ") }
        var notes: [String] = []
        let few = list(.tooFewRounds)
        if !few.isEmpty {
            let n = diffs.filter { $0.verdict == .tooFewRounds }.map(\.rounds).min() ?? 0
            notes.append("too few rounds to judge (\(n) of \(Self.minimumRounds)): " + few.joined(separator: ", "))
        }
        let noise = list(.noise)
        if !noise.isEmpty { notes.append("within noise: " + noise.joined(separator: ", ")) }
        let unjudged = list(.unjudged)
        if !unjudged.isEmpty { notes.append("no round figures to judge: " + unjudged.joined(separator: ", ")) }
        return notes.isEmpty ? "ok" : "ok (" + notes.joined(separator: "; ") + ")"
    }
}
