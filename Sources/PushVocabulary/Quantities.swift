/// Text that is not the quantity it should be. `message` quotes the text and lists the accepted forms;
/// the caller puts the option or field name in front (`--duration: 'soon' is not a duration: …`).
public struct QuantityError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was wrong and what is accepted.
    public var message: String
    /// An error saying `message`.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// A duration read from text. Seconds and nanoseconds are each the text's number times its unit's
/// factor, so neither carries the rounding of a conversion from the other.
public struct ParsedDuration: Equatable, Sendable {
    /// The duration in seconds.
    public var seconds: Double
    /// The duration in nanoseconds (not rounded).
    public var nanoseconds: Double
    /// A duration of `seconds`, also given as `nanoseconds`.
    init(seconds: Double, nanoseconds: Double) { self.seconds = seconds; self.nanoseconds = nanoseconds }
}

/// A rate read from text: `count` per `windowSeconds`.
public struct ParsedRate: Equatable, Sendable {
    /// How many.
    public var count: Double
    /// Per how many seconds (more than 0).
    public var windowSeconds: Double
    /// `count` per `windowSeconds`.
    init(count: Double, windowSeconds: Double) { self.count = count; self.windowSeconds = windowSeconds }
    /// `count` per second.
    public var perSecond: Double { count / windowSeconds }
}

/// What a number without a unit means where a duration is expected.
public enum BareNumber: Sendable {
    /// Seconds (`30` is `30s`; as a rate, 30 per second).
    case seconds
    /// Not a quantity: the text must name its unit (the default everywhere a user types one).
    case refused
}

/// The one parser of each quantity a user types: durations, rates, fractions and sizes. Every option
/// and scenario field of these kinds goes through here, so they accept the same forms everywhere.
public enum Quantity {
    /// A duration unit: its names, its size in seconds and in nanoseconds, and its rank (largest first).
    struct DurationUnit {
        var name: String
        var seconds: Double
        var nanoseconds: Double
        var rank: Int
    }

    /// Longest names first, so `ms` is tried before `s` and `m`.
    static let durationUnits: [DurationUnit] = [
        DurationUnit(name: "ms", seconds: 1e-3, nanoseconds: 1e6, rank: 3),
        DurationUnit(name: "us", seconds: 1e-6, nanoseconds: 1e3, rank: 4),
        DurationUnit(name: "µs", seconds: 1e-6, nanoseconds: 1e3, rank: 4),
        DurationUnit(name: "ns", seconds: 1e-9, nanoseconds: 1, rank: 5),
        DurationUnit(name: "s", seconds: 1, nanoseconds: 1e9, rank: 2),
        DurationUnit(name: "m", seconds: 60, nanoseconds: 60e9, rank: 1),
        DurationUnit(name: "h", seconds: 3600, nanoseconds: 3600e9, rank: 0),
    ]

    /// The forms a duration may take, for error messages.
    static let durationForms = "a number and a unit: ns, us or µs, ms, s, m, h; several as in 1m30s"

    /// A non-negative duration: a number and a unit (`1.5s`, `500ms`, `250us`, `250µs`, `100ns`, `2m`,
    /// `1h`), several of them from the largest unit down (`1m30s`, `1h2m3.5s`), or `0`. A number without
    /// a unit is refused (is `2` two seconds or two milliseconds?) unless `bareNumber` is `.seconds`.
    public static func duration(_ text: String, bareNumber: BareNumber = .refused) throws(QuantityError) -> ParsedDuration {
        if text == "0" { return ParsedDuration(seconds: 0, nanoseconds: 0) }
        if let d = singleDuration(text, bareNumber) ?? compoundDuration(text) { return d }
        if bareNumber == .refused, let v = Double(text), v.isFinite, v >= 0 {
            throw QuantityError("'\(text)' has no unit: say which, as in \(text)s or \(text)ms (\(durationForms))")
        }
        let bare = bareNumber == .seconds ? ", or a number of seconds" : ""
        throw QuantityError("'\(text)' is not a duration (\(durationForms)\(bare))")
    }

    /// One number and one unit, or a bare number; the number is anything `Double` reads.
    private static func singleDuration(_ text: String, _ bareNumber: BareNumber) -> ParsedDuration? {
        if let unit = durationUnits.first(where: { text.hasSuffix($0.name) }) {
            guard let v = Double(text.dropLast(unit.name.count)), v.isFinite, v >= 0 else { return nil }
            return ParsedDuration(seconds: v * unit.seconds, nanoseconds: v * unit.nanoseconds)
        }
        guard bareNumber == .seconds, let v = Double(text), v.isFinite, v >= 0 else { return nil }
        return ParsedDuration(seconds: v, nanoseconds: v * 1e9)
    }

    /// Decimal numbers each followed by a unit, units strictly falling (`1m30s`; not `30s1m`, not `1s1s`).
    private static func compoundDuration(_ text: String) -> ParsedDuration? {
        var total = ParsedDuration(seconds: 0, nanoseconds: 0)
        var rest = Substring(text)
        var lastRank = -1
        while !rest.isEmpty {
            let numberEnd = rest.firstIndex(where: { !isDecimalCharacter($0) }) ?? rest.endIndex
            let unitEnd = rest[numberEnd...].firstIndex(where: isDecimalCharacter) ?? rest.endIndex
            let name = rest[numberEnd..<unitEnd]
            guard let v = Double(rest[..<numberEnd]), v.isFinite,
                  let unit = durationUnits.first(where: { $0.name == name }), unit.rank > lastRank
            else { return nil }
            total.seconds += v * unit.seconds
            total.nanoseconds += v * unit.nanoseconds
            lastRank = unit.rank
            rest = rest[unitEnd...]
        }
        return lastRank >= 0 ? total : nil
    }

    private static func isDecimalCharacter(_ c: Character) -> Bool { c.isASCII && (c.isNumber || c == ".") }

    /// A non-negative rate: `N/WINDOW` where the window is a unit (`s`, `sec`, `m`, `min`, `h`, `hour`), a
    /// number and one of those (`10s`, `5min`), or any duration (`500ms`, `1m30s`); `0`; or, where
    /// `bareNumber` is `.seconds`, `N` per second. `N` is a number, optionally with a `k` (thousand) or `M` (million)
    /// suffix (`10k/s`, `2M`).
    public static func rate(_ text: String, bareNumber: BareNumber = .refused) throws(QuantityError) -> ParsedRate {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        if (1...2).contains(parts.count), let n = scaledCount(parts[0]) {
            if parts.count == 1 && (bareNumber == .seconds || n == 0) { return ParsedRate(count: n, windowSeconds: 1) }
            if parts.count == 2, let window = rateWindowSeconds(parts[1]), window > 0 {
                return ParsedRate(count: n, windowSeconds: window)
            }
            if parts.count == 1 {
                throw QuantityError("'\(text)' has no time unit: say per what, as in \(text)/s or \(text)/min "
                                    + "(N/UNIT as in 100/s, 600000/min, 5/10s)")
            }
        }
        let bare = bareNumber == .seconds ? "N per second as in 500, 10k, 1.5k, 2M, or " : ""
        throw QuantityError("'\(text)' is not a rate (\(bare)N/UNIT as in 100/s, 600000/min, 5/10s)")
    }

    /// A non-negative number, optionally with a `k`/`K` (thousand) or `M` (million) suffix: `500`, `10k`,
    /// `1.5k`, `2M` (a rate's count; not necessarily whole).
    private static func scaledCount(_ text: Substring) -> Double? {
        var number = text
        var scale = 1.0
        if let last = number.last, let s = ["k": 1e3, "K": 1e3, "M": 1e6][last] {
            scale = s
            number = number.dropLast()
        }
        guard let v = Double(number), v.isFinite, v >= 0 else { return nil }
        return v * scale
    }

    private static func rateWindowSeconds(_ window: Substring) -> Double? {
        let numberEnd = window.firstIndex(where: { !isDecimalCharacter($0) }) ?? window.endIndex
        let number = window[..<numberEnd], name = String(window[numberEnd...])
        let unit = ["sec": "s", "min": "m", "hour": "h"][name] ?? name
        return try? duration((number.isEmpty ? "1" : String(number)) + unit, bareNumber: .refused).seconds
    }

    /// A fraction from 0 to 1, as a number (`0.05`) or a percentage (`5%`).
    public static func fraction(_ text: String) throws(QuantityError) -> Double {
        var number = Substring(text)
        var scale = 1.0
        if number.hasSuffix("%") {
            number = number.dropLast()
            scale = 0.01
        }
        guard let v = Double(number), v.isFinite, v * scale >= 0, v * scale <= 1 else {
            throw QuantityError("'\(text)' is not a fraction between 0 and 1 (or 0%...100%)")
        }
        return v * scale
    }

    /// Size units: binary (KiB = 1024 bytes) and decimal (kB = 1000 bytes). Longest names first.
    static let sizeUnits: [(name: String, bytes: Double)] = [
        ("KiB", 1024), ("MiB", 1024 * 1024), ("GiB", 1024 * 1024 * 1024),
        ("kB", 1000), ("KB", 1000), ("MB", 1_000_000), ("GB", 1_000_000_000), ("B", 1),
    ]

    /// A size in bytes: a number (`4096`), or a number and a unit (`512B`, `4KiB`, `1.5MiB`, `1GiB`,
    /// `4kB`, `2MB`, `1GB`) that comes to a whole number of bytes.
    public static func size(_ text: String) throws(QuantityError) -> Int {
        let unit = sizeUnits.first(where: { text.hasSuffix($0.name) })
        let number = unit.map { text.dropLast($0.name.count) } ?? Substring(text)
        if let v = Double(number), v.isFinite, v >= 0, let bytes = Int(exactly: v * (unit?.bytes ?? 1)) {
            return bytes
        }
        throw QuantityError("'\(text)' is not a size (bytes, or a number and a unit: B, KiB, MiB, GiB, kB, MB, GB; "
                            + "a whole number of bytes)")
    }
}
