import PushPayload
import PushTransport
import PushVocabulary

/// The gateway's side of a pipeline run: each of its event loops finds the correlation id in every push
/// it answers (``CorrelationScanner``) and queues a ``PushArrival`` on its own ring; the run's main
/// thread drains the rings. Nothing is allocated per push; a ring that fills (a consumer that stopped
/// draining) refuses arrivals and counts them (``refused``).
public final class PushCorrelator: Sendable, Equatable {
    /// The scanner of the run's ids.
    let scanner: CorrelationScanner
    /// Where the id is looked for.
    public let source: CorrelationSource
    private let rings: [SPSCRing<PushArrival>]
    private let sourceHeader: [UInt8]
    /// Each loop's JSON tape for `--correlate /pointer` (reused, so a body parses without allocating).
    private let tapes: [TapeBox]

    final class TapeBox: @unchecked Sendable {
        // @unchecked: used by its own loop only.
        var tape = JSONTape(capacity: 256)
    }

    /// A correlator for ids with `prefix`, for a gateway of `loops` event loops, each ring holding
    /// `capacity` arrivals between two drains.
    public init(prefix: [UInt8], source: CorrelationSource = .anywhere, loops: Int, capacity: Int = 1 << 16) {
        scanner = CorrelationScanner(prefix: prefix)
        self.source = source
        if case .header(let name) = source { sourceHeader = Array(name.utf8) } else { sourceHeader = [] }
        rings = (0..<max(1, loops)).map { _ in SPSCRing(capacity: capacity) }
        if case .pointer = source { tapes = (0..<max(1, loops)).map { _ in TapeBox() } } else { tapes = [] }
    }

    public static func == (a: PushCorrelator, b: PushCorrelator) -> Bool { a === b }

    /// Arrivals refused because a ring was full.
    public var refused: Int { rings.reduce(0) { $0 + $1.refused } }

    /// Hands every arrival queued so far to `body` (one consumer thread); returns how many.
    @discardableResult
    public func drain(_ body: (PushArrival) -> Void) -> Int {
        rings.reduce(0) { $0 + $1.drain(body) }
    }

    /// Records a push on loop `loop`: finds its id in `body`, else in `headers`' values (as `source` says),
    /// and fingerprints its token (from `path` for APNs, `body` for FCM).
    @inline(__always)
    func record(loop: Int, route: GatewayRoute, status: Int, arrivedAt: UInt64, path: UnsafeRawBufferPointer? = nil,
                body: UnsafeRawBufferPointer, headerCount: Int,
                header: (Int) -> (name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)) {
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
        case .pointer(let tokens):
            found = scanPointer(tokens, body, tapes[loop % tapes.count])
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
        let token = route == .fcm ? PushTokenHash.ofFCMBody(body) : path.map { PushTokenHash.ofAPNsPath($0) } ?? 0
        rings[loop % rings.count].push(PushArrival(index: index, arrivedAt: arrivedAt, route: route == .fcm ? 1 : 0,
                                                   status: UInt16(clamping: status), token: token))
    }

    /// The id in the string at `tokens` (a JSON pointer) in `body`; `.none` when the body is not JSON or
    /// has no string there.
    private func scanPointer(_ tokens: [[UInt8]], _ body: UnsafeRawBufferPointer, _ box: TapeBox) -> CorrelationScanner.Found {
        guard box.tape.parse(body) == nil else { return .none }
        var index = box.tape.root
        // Index loop, not for-in: an unspecialized (debug) iterator over arrays of arrays allocates.
        var t = 0
        while t < tokens.count {
            let token = tokens[t]
            t += 1
            let e = box.tape[index]
            if e.kind == .object {
                guard let v = token.withUnsafeBytes({ box.tape.member($0, of: index, in: body) }) else { return .none }
                index = v
            } else if e.kind == .array {
                guard !token.isEmpty, token.count < 10, token.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return .none }
                let n = token.reduce(0) { $0 * 10 + Int($1 - 48) }
                guard n < e.count else { return .none }
                var i = 0, found = -1
                box.tape.forEachChild(of: index) { c in
                    if i == n { found = c }
                    i += 1
                }
                guard found >= 0 else { return .none }
                index = found
            } else {
                return .none
            }
        }
        let e = box.tape[index]
        guard e.kind == .string else { return .none }
        return scanner.scan(UnsafeRawBufferPointer(rebasing: body[e.start..<e.end]))
    }
}
