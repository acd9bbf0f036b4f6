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
        do throws(QuantityError) {
            return try Quantity.duration(text).seconds
        } catch {
            throw UsageError("\(option): \(error.message)")
        }
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
