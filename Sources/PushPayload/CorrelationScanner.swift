#if canImport(Glibc)
import Glibc
#endif

/// Finds a pipeline run's correlation id (`pb-7f3a-000000123`, see `PipelineID`) in the bytes of a
/// push: the first `pb-` followed by four hex digits, `-` and at least one decimal digit. An id with the
/// run's own tag gives the request's index; one with another tag is another run's. Allocation-free.
///
/// ```swift
/// let scanner = CorrelationScanner(prefix: Array("pb-7f3a-".utf8))
/// scanner.scan(bodyBytes)            // .match(123), .foreign, or .none
/// ```
public struct CorrelationScanner: Sendable, Equatable {
    /// What a scan found.
    public enum Found: Equatable, Sendable {
        /// The run's own id, with the request's global index.
        case match(Int64)
        /// An id of another run (another tag).
        case foreign
        /// No id.
        case none
    }

    /// The run's tag, the four hex digits after `pb-`.
    public let tag: (UInt8, UInt8, UInt8, UInt8)
    /// The longest stretch of bytes an id can span: the 8-byte prefix and up to 19 digits.
    static let maxIDLength = 27

    /// A scanner for the ids whose prefix is `prefix` (8 bytes: `pb-`, four hex digits, `-`).
    public init(prefix: [UInt8]) {
        precondition(prefix.count == 8, "a correlation prefix is pb-XXXX-")
        tag = (prefix[3], prefix[4], prefix[5], prefix[6])
    }

    public static func == (a: Self, b: Self) -> Bool { a.tag == b.tag }

    /// The first id in `bytes`: the run's own (its index) wins over another run's, whichever comes first.
    @inline(__always)
    public func scan(_ bytes: UnsafeRawBufferPointer) -> Found {
        guard let base = bytes.baseAddress, bytes.count >= 9 else { return .none }
        var foreign = false
        var offset = 0
        while offset + 9 <= bytes.count {
            guard let hit = memchr(base + offset, Int32(UInt8(ascii: "p")), bytes.count - offset) else { break }
            let at = base.distance(to: UnsafeRawPointer(hit))
            offset = at + 1
            guard at + 9 <= bytes.count, bytes[at + 1] == UInt8(ascii: "b"), bytes[at + 2] == UInt8(ascii: "-") else { continue }
            switch idAt(bytes, at) {
            case .match(let g): return .match(g)
            case .foreign: foreign = true
            case .none: break
            }
        }
        return foreign ? .foreign : .none
    }

    /// The first id in `chunks` taken in order as one byte sequence (a body held in pieces, as its DATA
    /// frames came): an id split between two chunks is found as if they were one. Joins the chunks, so
    /// it allocates; the gateway scans bodies it already holds whole with ``scan(_:)-(UnsafeRawBufferPointer)``.
    public func scan(_ chunks: [UnsafeRawBufferPointer]) -> Found {
        var joined = [UInt8]()
        joined.reserveCapacity(chunks.reduce(0) { $0 + $1.count })
        for chunk in chunks { joined.append(contentsOf: chunk) }
        return joined.withUnsafeBytes { scan($0) }
    }

    @inline(__always)
    private func idAt(_ b: UnsafeRawBufferPointer, _ at: Int) -> Found {
        guard at + 9 <= b.count, Self.isHex(b[at + 3]), Self.isHex(b[at + 4]), Self.isHex(b[at + 5]), Self.isHex(b[at + 6]),
              b[at + 7] == UInt8(ascii: "-"), Self.isDigit(b[at + 8]) else { return .none }
        guard b[at + 3] == tag.0, b[at + 4] == tag.1, b[at + 5] == tag.2, b[at + 6] == tag.3 else { return .foreign }
        var g: Int64 = 0
        var i = at + 8
        while i < b.count, Self.isDigit(b[i]) {
            guard i - at - 8 < 18 else { return .foreign }  // longer than any index: not one of ours
            g = g * 10 + Int64(b[i] - 48)
            i += 1
        }
        return .match(g)
    }

    @inline(__always) static func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
    @inline(__always) static func isHex(_ c: UInt8) -> Bool { isDigit(c) || (c >= 97 && c <= 102) }
}
