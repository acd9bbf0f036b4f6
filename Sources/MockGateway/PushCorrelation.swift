#if canImport(Glibc)
import Glibc
#endif
import PushTransport

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
    public static let maxIDLength = 27

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

/// One push as a pipeline run's gateway saw it: the request it belongs to, when it arrived, its route and
/// the answer the gateway decided.
public struct PushArrival: Sendable, Equatable {
    /// The request's global index; ``noID`` or ``foreignID`` when the push carried none or another run's.
    public var index: Int64
    /// Arrival (monotonic ns, the transport's stamp when it read the request).
    public var arrivedAt: UInt64
    /// The route: 0 APNs, 1 FCM.
    public var route: UInt8
    /// The status answered; 0 when the gateway dropped the connection instead.
    public var status: UInt16

    /// A push without a correlation id.
    public static let noID: Int64 = -1
    /// A push with another run's correlation id.
    public static let foreignID: Int64 = -2

    /// An arrival; see the properties.
    public init(index: Int64, arrivedAt: UInt64, route: UInt8, status: UInt16) {
        self.index = index
        self.arrivedAt = arrivedAt
        self.route = route
        self.status = status
    }

    /// Whether the answer asks the sender to try again (429, 500, 503, or a dropped connection).
    public var isRetryable: Bool { status == 0 || status == 429 || status == 500 || status == 503 }
}

/// Where a pipeline run's gateway looks for the correlation id (`--correlate`).
public enum CorrelationSource: Equatable, Sendable {
    /// The body, then every header value (`:path` included): wherever the service put it.
    case anywhere
    /// The body only.
    case body
    /// One header's value (`header:NAME`, the name in lower case).
    case header(String)
}

/// The gateway's side of a pipeline run: each of its event loops finds the correlation id in every push
/// it answers (``CorrelationScanner``) and queues a ``PushArrival`` on its own ring; the run's main
/// thread drains the rings. Nothing is allocated per push; a ring that fills (a consumer that stopped
/// draining) refuses arrivals and counts them (``refused``).
public final class PushCorrelator: Sendable, Equatable {
    /// The scanner of the run's ids.
    public let scanner: CorrelationScanner
    /// Where the id is looked for.
    public let source: CorrelationSource
    private let rings: [SPSCRing<PushArrival>]
    private let sourceHeader: [UInt8]

    /// A correlator for ids with `prefix`, for a gateway of `loops` event loops, each ring holding
    /// `capacity` arrivals between two drains.
    public init(prefix: [UInt8], source: CorrelationSource = .anywhere, loops: Int, capacity: Int = 1 << 16) {
        scanner = CorrelationScanner(prefix: prefix)
        self.source = source
        if case .header(let name) = source { sourceHeader = Array(name.utf8) } else { sourceHeader = [] }
        rings = (0..<max(1, loops)).map { _ in SPSCRing(capacity: capacity) }
    }

    public static func == (a: PushCorrelator, b: PushCorrelator) -> Bool { a === b }

    /// Arrivals refused because a ring was full.
    public var refused: Int { rings.reduce(0) { $0 + $1.refused } }

    /// Hands every arrival queued so far to `body` (one consumer thread); returns how many.
    @discardableResult
    public func drain(_ body: (PushArrival) -> Void) -> Int {
        rings.reduce(0) { $0 + $1.drain(body) }
    }

    /// Records a push on loop `loop`: finds its id in `body`, else in `headers`' values (as `source` says).
    @inline(__always)
    func record(loop: Int, route: GatewayRoute, status: Int, arrivedAt: UInt64, body: UnsafeRawBufferPointer,
                headerCount: Int, header: (Int) -> (name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)) {
        var found = CorrelationScanner.Found.none
        switch source {
        case .anywhere, .body:
            found = scanner.scan(body)
            if case .match = found {} else if source == .anywhere {
                var i = 0
                while i < headerCount {
                    let f = scanner.scan(header(i).value)
                    if case .match = f { found = f; break }
                    if f == .foreign { found = .foreign }
                    i += 1
                }
            }
        case .header:
            var i = 0
            while i < headerCount {
                let h = header(i)
                if h.name.elementsEqual(sourceHeader) { found = scanner.scan(h.value); break }
                i += 1
            }
        }
        let index: Int64
        switch found {
        case .match(let g): index = g
        case .foreign: index = PushArrival.foreignID
        case .none: index = PushArrival.noID
        }
        rings[loop % rings.count].push(PushArrival(index: index, arrivedAt: arrivedAt, route: route == .fcm ? 1 : 0,
                                                   status: UInt16(clamping: status)))
    }
}
