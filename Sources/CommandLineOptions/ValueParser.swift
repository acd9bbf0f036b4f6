import PushVocabulary

/// Parsers for the values options of every command share; each error names the option and the offending
/// text.
public enum ValueParser {
    /// A decimal integer within `range`.
    public static func integer(_ text: String, option: String, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let n = Int(text) else { throw UsageError("\(option): '\(text)' is not a whole number") }
        guard range.contains(n) else {
            if range.upperBound == Int.max {
                throw UsageError("\(option): \(n) is out of range (at least \(range.lowerBound))")
            }
            throw UsageError("\(option): \(n) is out of range (\(range.lowerBound)...\(range.upperBound))")
        }
        return n
    }

    /// A duration in seconds (``Quantity/duration(_:bareNumber:)``, the one duration parser of the tool:
    /// `10s`, `500ms`, `1m30s`; a number without a unit is refused, and the error lists the forms).
    public static func duration(_ text: String, option: String) throws(UsageError) -> Double {
        try quantity(text, option: option) { t throws(QuantityError) in try Quantity.duration(t).seconds }
    }

    /// `parse(text)`, with the error it throws (a ``QuantityError`` or another error that describes itself
    /// in one line) turned into a usage error naming `option`: the one place a value's own error becomes
    /// the command's.
    public static func quantity<T, Failure: Error & CustomStringConvertible>(
        _ text: String, option: String, _ parse: (String) throws(Failure) -> T
    ) throws(UsageError) -> T {
        do throws(Failure) { return try parse(text) } catch { throw UsageError("\(option): \(error.description)") }
    }

    /// A key or team id: letters, digits, '.', '-' and '_' (Apple's are 10 capitals and digits).
    public static func credentialID(_ text: String, option: String, what: String) throws(UsageError) -> String {
        guard !text.isEmpty, text.utf8.count <= 64,
              text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2E || $0 == 0x2D || $0 == 0x5F }) else {
            throw UsageError("\(option): '\(text)' is not \(what) (letters, digits, '.', '-', '_'; Apple's are 10 characters like ABC123DEFG)")
        }
        return text
    }

    /// A fraction of the token space per time unit (`0.01/s`), as a fraction per second: the gateway's
    /// `--token-churn` and `pushbench run --token-churn`.
    public static func tokenChurn(_ text: String, option: String) throws(UsageError) -> Double {
        let r: ParsedRate
        do throws(QuantityError) { r = try Quantity.rate(text) } catch {
            throw UsageError("\(option): \(error.message.replacingOccurrences(of: "is not a rate", with: "is not a fraction per time unit"))")
        }
        guard r.perSecond <= 1 else {
            throw UsageError("\(option): '\(text)' is more than the whole token space per second (at most 1/s, e.g. 0.01/s)")
        }
        return r.perSecond
    }

    /// One of `choices`, named by its raw value; the error lists them in the order given.
    public static func choice<E: RawRepresentable>(_ text: String, option: String, _ choices: [E]) throws(UsageError) -> E
    where E.RawValue == String {
        guard let value = choices.first(where: { $0.rawValue == text }) else {
            throw UsageError("\(option): '\(text)' is not one of \(choices.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }
}
