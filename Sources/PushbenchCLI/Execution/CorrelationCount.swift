import Dispatch
import Foundation
import MockGateway
import PushPayload
import Synchronization

/// A standalone gateway's correlator drained on a thread of its own, every 20 ms, as a pipeline run's
/// main thread drains it: the pushes counted by what was found in them.
final class CorrelationCount: @unchecked Sendable {
    // @unchecked: the counts are written by the draining thread only, read after `stop()` joined it.
    private let correlator: PushCorrelator
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private var matched = 0, noID = 0, otherRun = 0

    init(_ correlator: PushCorrelator) {
        self.correlator = correlator
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

    private func drain() {
        correlator.drain { arrival in
            switch arrival.index {
            case PushArrival.noID: noID += 1
            case PushArrival.foreignID: otherRun += 1
            default: matched += 1
            }
        }
    }

    /// Stops draining; the counts as one line.
    func stop() -> String {
        stopping.store(true, ordering: .relaxed)
        done.wait()
        return "matched \(matched), without an id \(noID), another run's \(otherRun), not queued \(correlator.refused)"
    }
}

