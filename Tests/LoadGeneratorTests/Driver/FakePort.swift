@testable import LoadGenerator

/// A connection pool without sockets: `streams` free streams; records what was started.
final class FakePort: RequestPort {
    var streams: Int
    var inFlight: [(slot: Int32, sequence: Int64)] = []
    var started: [Int64] = []
    /// The send time the core gave with each started request.
    var sentAt: [UInt64] = []
    var oversize: Set<Int64> = []
    /// Sequences the transport refuses as they are handed over, and why.
    var refused: [Int64: TransportErrorCause] = [:]

    init(streams: Int) { self.streams = streams }

    func startRequest(slot: Int32, sequence: Int64, at now: UInt64) -> StartResult {
        if oversize.contains(sequence) { return .oversize }
        if let cause = refused[sequence] { return .failed(cause) }
        guard inFlight.count < streams else { return .noStream }
        inFlight.append((slot, sequence))
        started.append(sequence)
        sentAt.append(now)
        return .started
    }

    /// Removes and returns the oldest request in flight.
    func takeOldest() -> Int32 { inFlight.removeFirst().slot }
}
