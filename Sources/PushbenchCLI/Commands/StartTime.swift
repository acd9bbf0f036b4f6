/// `--start-at`: a wall-clock instant, read exactly to the nanosecond (no floating point on the way), so
/// agents given the same text share one t0.
enum StartTime {
    /// Nanoseconds since the Unix epoch of `text`: RFC 3339 (`2026-12-01T10:00:00Z`,
    /// `2026-12-01T10:00:00.250+01:00`, a space for the T) or Unix seconds with an optional fraction
    /// (`1796119200.25`). Nil when it is neither.
    static func parse(_ text: String) -> Int64? {
        unixSeconds(text) ?? rfc3339(text)
    }

    /// The text of `ns` since the epoch as RFC 3339 UTC with nanoseconds trimmed of trailing zeros.
    static func format(_ ns: Int64) -> String {
        let seconds = ns >= 0 ? ns / 1_000_000_000 : (ns - 999_999_999) / 1_000_000_000
        let fraction = ns - seconds * 1_000_000_000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rest = seconds - days * 86_400
        let (y, m, d) = civil(fromDays: days)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        var out = "\(y)-\(two(m))-\(two(d))T\(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60))"
        if fraction > 0 {
            var digits = String(fraction)
            digits = String(repeating: "0", count: 9 - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            out += "." + digits
        }
        return out + "Z"
    }

    private static func unixSeconds(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = Int64(parts[0]), whole >= 0, whole < 10_000_000_000,
              parts[0].allSatisfy(\.isNumber) else { return nil }
        var ns = whole * 1_000_000_000
        if parts.count == 2 {
            guard let f = fraction(parts[1]) else { return nil }
            ns += f
        }
        return ns
    }

    // Up to 9 decimal digits after the point, as nanoseconds.
    private static func fraction(_ digits: Substring) -> Int64? {
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(digits + String(repeating: "0", count: 9 - digits.count))
    }

    private static func rfc3339(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= b.count else { return nil }
            var v: Int64 = 0
            for k in from..<from + count {
                guard b[k] >= 48 && b[k] <= 57 else { return nil }
                v = v * 10 + Int64(b[k] - 48)
            }
            return v
        }
        guard b.count >= 20, let y = number(0, 4), b[4] == 45, let mo = number(5, 2), b[7] == 45, let d = number(8, 2),
              b[10] == 84 || b[10] == 116 || b[10] == 32, let h = number(11, 2), b[13] == 58, let mi = number(14, 2),
              b[16] == 58, let s = number(17, 2),
              (1...12).contains(mo), (1...daysIn(month: mo, year: y)).contains(d), h < 24, mi < 60, s < 61 else { return nil }
        var i = 19
        var ns: Int64 = 0
        if i < b.count && b[i] == 46 {
            var j = i + 1
            while j < b.count && b[j] >= 48 && b[j] <= 57 { j += 1 }
            guard let f = fraction(Substring(String(decoding: b[(i + 1)..<j], as: UTF8.self))) else { return nil }
            ns = f
            i = j
        }
        guard i < b.count else { return nil }
        var offset: Int64 = 0
        if b[i] == 90 || b[i] == 122 {   // Z
            guard i + 1 == b.count else { return nil }
        } else if b[i] == 43 || b[i] == 45, i + 6 == b.count, let oh = number(i + 1, 2), b[i + 3] == 58, let om = number(i + 4, 2),
                  oh < 24, om < 60 {
            offset = (oh * 3600 + om * 60) * (b[i] == 43 ? 1 : -1)
        } else {
            return nil
        }
        let seconds = days(year: y, month: mo, day: d) * 86_400 + h * 3600 + mi * 60 + s - offset
        return seconds * 1_000_000_000 + ns
    }

    private static func daysIn(month m: Int64, year y: Int64) -> Int64 {
        switch m {
        case 2: return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    private static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
