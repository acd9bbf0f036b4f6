import Foundation
import PushVocabulary

/// A schedule, stage or rate that could not be read: the message names what and where.
public struct ScheduleError: Error, Equatable, CustomStringConvertible {
    /// What was wrong.
    public var description: String
    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}

extension RateSchedule {
    /// A rate in whole requests per second from 0 to ``maxRate``: ``Quantity/rate(_:bareNumber:)`` with a bare
    /// number per second (`500`, `10k`, `1.5k`, `2M`, or `600k/min`).
    public static func parseRate(_ text: String) throws(ScheduleError) -> Int {
        let rate: Double
        do throws(QuantityError) { rate = try Quantity.rate(text, bareNumber: .seconds).perSecond } catch {
            throw ScheduleError(error.message)
        }
        guard rate <= Double(maxRate) else { throw ScheduleError("'\(text)' is over \(maxRate) requests per second") }
        guard let whole = Int(exactly: rate) else { throw ScheduleError("'\(text)' is not a whole number of requests per second") }
        return whole
    }

    /// `--stages`: `DURATION:RATE` pairs separated by commas (`30s:10k,60s:50k,30s:0`). The rate starts at 0
    /// and each stage goes linearly from the previous stage's rate to its own over its duration; a stage of
    /// `0s` is a step to its rate (`0s:10k,30s:10k` holds 10k for 30 s).
    public static func parseStages(_ text: String) throws(ScheduleError) -> [Stage] {
        var stages: [Stage] = []
        var previous = 0
        for (n, part) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 2 else {
                throw ScheduleError("stage \(n + 1) '\(part)' is not DURATION:RATE (as in 30s:10k)")
            }
            let duration: ParsedDuration
            do { duration = try Quantity.duration(String(fields[0])) } catch {
                throw ScheduleError("stage \(n + 1): \(error.message)")
            }
            guard duration.nanoseconds <= Double(maxStageNs) else {
                throw ScheduleError("stage \(n + 1): '\(fields[0])' is longer than a stage may be (100h)")
            }
            let rate: Int
            do { rate = try parseRate(String(fields[1])) } catch { throw ScheduleError("stage \(n + 1): \(error.description)") }
            stages.append(Stage(durationNs: UInt64(duration.nanoseconds.rounded()), from: previous, to: rate))
            previous = rate
        }
        try check(stages)
        return stages
    }

    /// A `--rate-file`: CSV lines `second,rate` (a header line and `#` comments may come first), seconds
    /// rising. Each line's rate holds from its second to the next line's, and the last line's for one
    /// second, so a per-second record of a production curve replays with the same count in every second.
    /// Rates may have decimals (a recorded average): they are rounded to whole requests per second.
    public static func parseRateFile(_ text: String, path: String) throws(ScheduleError) -> [Stage] {
        var points: [(ns: UInt64, rate: Int)] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            let place = "\(path):\(n + 1)"
            guard fields.count == 2 else { throw ScheduleError("\(place): expected 'second,rate', found '\(line)'") }
            guard let second = Double(fields[0]), second.isFinite, second >= 0 else {
                if points.isEmpty && Double(fields[0]) == nil { continue }   // the header
                throw ScheduleError("\(place): '\(fields[0])' is not a number of seconds")
            }
            guard let perSecond = try? Quantity.rate(fields[1], bareNumber: .seconds).perSecond else {
                throw ScheduleError("\(place): '\(fields[1])' is not a rate")
            }
            let rate = perSecond.rounded()
            guard rate <= Double(maxRate) else { throw ScheduleError("\(place): \(fields[1]) is over \(maxRate) requests per second") }
            let ns = UInt64((second * 1e9).rounded())
            if let last = points.last, ns <= last.ns {
                throw ScheduleError("\(place): second \(fields[0]) does not come after the line before it")
            }
            points.append((ns, Int(rate)))
        }
        guard !points.isEmpty else { throw ScheduleError("\(path): no 'second,rate' lines") }
        var stages: [Stage] = []
        for (k, p) in points.enumerated() {
            let end = k + 1 < points.count ? points[k + 1].ns : p.ns + 1_000_000_000
            guard end - p.ns <= maxStageNs else { throw ScheduleError("\(path): the gap after second \(Double(p.ns) / 1e9) is over 100h") }
            stages.append(Stage(durationNs: end - p.ns, from: p.rate, to: p.rate))
        }
        do { try check(stages) } catch { throw ScheduleError("\(path): \(error.description)") }
        return stages
    }

    /// A schedule must last and must send something.
    static func check(_ stages: [Stage]) throws(ScheduleError) {
        guard stages.contains(where: { $0.durationNs > 0 }) else { throw ScheduleError("every stage is 0 s long") }
        guard stages.contains(where: { $0.durationNs > 0 && ($0.from > 0 || $0.to > 0) }) else {
            throw ScheduleError("the rate is 0 throughout: nothing would be sent")
        }
    }

    /// The schedule in the syntax of `--stages` (a stage as `DURATION:RATE`, or `DURATION:FROM..TO` where
    /// it does not start from the previous stage's rate), for summary.json and reports.
    public var stagesText: String {
        var previous = 0
        return stages.map { s in
            let d = Self.durationText(s.durationNs)
            defer { previous = s.to }
            return s.from == previous ? "\(d):\(Self.rateText(s.to))" : "\(d):\(Self.rateText(s.from))..\(Self.rateText(s.to))"
        }.joined(separator: ",")
    }

    /// `10k`, `1.5k`, `2M`, `750`.
    public static func rateText(_ r: Int) -> String {
        if r >= 1_000_000 && r % 100_000 == 0 { return trimmed(Double(r) / 1e6) + "M" }
        if r >= 1_000 && r % 100 == 0 { return trimmed(Double(r) / 1e3) + "k" }
        return String(r)
    }

    static func durationText(_ ns: UInt64) -> String {
        if ns % 1_000_000_000 == 0 { return "\(ns / 1_000_000_000)s" }
        if ns % 1_000_000 == 0 { return "\(ns / 1_000_000)ms" }
        return "\(ns)ns"
    }

    private static func trimmed(_ v: Double) -> String {
        v == v.rounded() ? String(Int(v)) : String(v)
    }

    /// A short fingerprint of the stages (FNV-1a over their numbers), to tell whether agents ran the same
    /// schedule without listing every stage of a long rate file.
    public var digest: String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ v: UInt64) {
            for k in 0..<8 {
                h ^= (v >> (8 * UInt64(k))) & 0xff
                h = h &* 0x0000_0100_0000_01b3
            }
        }
        for s in stages { mix(s.durationNs); mix(UInt64(s.from)); mix(UInt64(s.to)) }
        return String(h, radix: 16)
    }
}
