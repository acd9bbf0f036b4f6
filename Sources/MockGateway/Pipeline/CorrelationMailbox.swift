#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PushPayload
import Synchronization

/// A standalone gateway's side of a pipeline run (`pushbench gateway --correlate-prefix`): a thread
/// drains the loops' ``PushCorrelator`` every 20 ms, as a pipeline run's main thread does, counts what it
/// found and keeps the matched pushes until a pipeline run given `--egress-url` takes them
/// (`POST /pipeline/arrivals`). At most ``capacity`` pushes wait; past that the oldest are dropped and
/// counted, so a gateway nobody fetches from stays bounded.
public final class CorrelationMailbox: @unchecked Sendable, Equatable {
    // @unchecked: `waiting` and the counts are guarded by `lock`; the thread is joined by `stop()`.
    /// The loops' correlator.
    public let correlator: PushCorrelator
    /// The run's prefix, e.g. `pb-7f3a-`.
    public let prefix: String
    /// The most pushes kept for a fetch.
    public let capacity: Int
    private let lock = Mutex<Void>(())
    private var waiting: [PushArrival] = []
    private var matched = 0, noID = 0, otherRun = 0, dropped = 0
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    /// Monotonic ns to Unix ns: arrivals go out on the wall clock, which another process can read back.
    private let unixOffset: Int64

    /// A mailbox for ids with `prefix`, for a gateway of `loops` event loops.
    public init(prefix: [UInt8], loops: Int, capacity: Int = 1 << 21) {
        self.prefix = String(decoding: prefix, as: UTF8.self)
        self.capacity = capacity
        correlator = PushCorrelator(prefix: prefix, loops: loops)
        var mono = timespec(), wall = timespec()
        clock_gettime(CLOCK_MONOTONIC, &mono)
        clock_gettime(CLOCK_REALTIME, &wall)
        unixOffset = (Int64(wall.tv_sec) - Int64(mono.tv_sec)) * 1_000_000_000 + Int64(wall.tv_nsec) - Int64(mono.tv_nsec)
        let thread = Thread { [self] in
            while !stopping.load(ordering: .relaxed) {
                drain()
                usleep(20_000)
            }
            drain()
            done.signal()
        }
        thread.start()
    }

    public static func == (a: CorrelationMailbox, b: CorrelationMailbox) -> Bool { a === b }

    private func drain() {
        var got: [PushArrival] = []
        correlator.drain { got.append($0) }
        guard !got.isEmpty else { return }
        lock.withLock { _ in
            for a in got {
                switch a.index {
                case PushArrival.noID: noID += 1
                case PushArrival.foreignID: otherRun += 1
                default: matched += 1
                }
            }
            waiting += got
            if waiting.count > capacity {
                dropped += waiting.count - capacity
                waiting.removeFirst(waiting.count - capacity)
            }
        }
    }

    /// The pushes kept since the last call, taken, as ``PipelineArrivalsText``.
    func takeText() -> String {
        let taken: [PushArrival] = lock.withLock { _ in
            defer { waiting.removeAll(keepingCapacity: false) }
            return waiting
        }
        return PipelineArrivalsText.render(prefix: prefix, taken.map {
            PipelineArrivalsText.Line(index: $0.index, unixNs: Int64($0.arrivedAt) + unixOffset, route: $0.route, status: $0.status,
                                      token: $0.token)
        })
    }

    /// Stops the draining thread; the counts as one line.
    @discardableResult
    public func stop() -> String {
        if !stopping.exchange(true, ordering: .relaxed) { done.wait() }
        return lock.withLock { _ in
            "matched \(matched), without an id \(noID), another run's \(otherRun), not queued \(correlator.refused), not fetched in time \(dropped)"
        }
    }
}
