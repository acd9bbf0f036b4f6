/// How far apart the answers of one capacity search run several times (`pushbench capacity --repeat N`)
/// are: each search's answer, the median, and the spread between the lowest and the highest.
///
/// The median is the lower of the two middle answers when the count is even, so it is always an answer
/// some search gave (and the verdict judged at it rests on steps that ran). A search that found no rate
/// (not even `--min` held) ranks below every answer; with one among the searches the spread is unknown.
///
/// ```swift
/// let s = CapacityStability(answers: [140_000, 150_000, 142_000])
/// s.median            // 142_000 (the answer of search 3: s.medianIndex == 2)
/// s.spreadFraction    // 10_000 / 142_000, about 7%
/// ```
public struct CapacityStability: Sendable, Equatable {
    /// Each search's answer in requests per second, in the order the searches ran; nil for a search in
    /// which no rate held.
    public let answers: [Int?]

    /// The answers of searches run one after the other; at least one.
    public init(answers: [Int?]) {
        precondition(!answers.isEmpty, "a stability needs at least one search")
        self.answers = answers
    }

    /// The index (into ``answers``) of the search whose answer is the median: the answers ranked from
    /// the lowest (no answer first), equal answers in the order run, and the lower middle one taken.
    public var medianIndex: Int {
        let ranked = answers.indices.sorted { a, b in
            let x = answers[a] ?? -1, y = answers[b] ?? -1
            return x != y ? x < y : a < b
        }
        return ranked[(ranked.count - 1) / 2]
    }

    /// The median answer, or nil when the median search found no rate.
    public var median: Int? { answers[medianIndex] }

    /// The lowest answer, or nil when some search found no rate.
    public var lowest: Int? {
        answers.contains { $0 == nil } ? nil : answers.compactMap { $0 }.min()
    }

    /// The highest answer, or nil when no search found a rate.
    public var highest: Int? { answers.compactMap { $0 }.max() }

    /// The highest answer minus the lowest, or nil when some search found no rate.
    public var spread: Int? {
        guard let lo = lowest, let hi = highest else { return nil }
        return hi - lo
    }

    /// ``spread`` as a fraction of ``median`` (0.07 is 7%), or nil when either is unknown or the median is 0.
    public var spreadFraction: Double? {
        guard let spread, let median, median > 0 else { return nil }
        return Double(spread) / Double(median)
    }

    /// The stability in one line, as the command prints it last: `capacity over 3 searches: median
    /// 142,000 rps (search 3); answers 140,000, 150,000, 142,000 rps; spread 140,000-150,000 rps, 7.04% of
    /// the median`.
    public var line: String {
        let each = answers.map { $0.map(CapacitySearch.grouped) ?? "none" }.joined(separator: ", ")
        let median = self.median.map { "median \(CapacitySearch.grouped($0)) rps" } ?? "median: no rate held"
        var s = "capacity over \(answers.count) search\(answers.count == 1 ? "" : "es"): \(median) (search \(medianIndex + 1)); "
        s += "answers \(each) rps; "
        if let lo = lowest, let hi = highest {
            s += "spread \(CapacitySearch.grouped(lo))-\(CapacitySearch.grouped(hi)) rps"
            s += spreadFraction.map { ", \(CapacitySearch.percent($0)) of the median" } ?? ""
        } else {
            s += "spread unknown: \(answers.filter { $0 == nil }.count) of \(answers.count) found no rate"
        }
        return s
    }
}
