import Synchronization

/// What an ``EventStreamEndpoint`` holds between the thread that publishes and the endpoint's thread:
/// the events not yet sent to the viewers, and those a viewer that connects now is first sent again.
/// One lock guards both, so a viewer connecting while an event is published gets it exactly once.
final class EventStreamStore: Sendable {
    /// One published event.
    struct Stored: Sendable {
        var event: EventStreamEndpoint.Event
        var keeping: EventStreamEndpoint.Keeping
    }

    private struct State {
        var pending: [Stored] = []
        var kept: [Stored] = []
        /// `.history` events kept, by name: each name has its own bound, so one source's several events
        /// a second do not shorten the history of another.
        var keptHistory: [String: Int] = [:]
    }

    private let state = Mutex(State())
    private let historyLimit: Int
    // A stalled endpoint thread must not grow memory either: past this, the oldest unsent events go.
    private let pendingLimit: Int

    init(historyLimit: Int, pendingLimit: Int = 4096) {
        self.historyLimit = max(0, historyLimit)
        self.pendingLimit = pendingLimit
    }

    /// Queues `stored` for the viewers and keeps it as its ``EventStreamEndpoint/Keeping`` says.
    func publish(_ stored: Stored) {
        state.withLock { s in
            s.pending.append(stored)
            if s.pending.count > pendingLimit { s.pending.removeFirst(s.pending.count - pendingLimit) }
            switch stored.keeping {
            case .none: break
            case .latest:
                s.kept.removeAll { $0.keeping == .latest && $0.event.name == stored.event.name }
                s.kept.append(stored)
            case .history:
                let name = stored.event.name
                s.kept.append(stored)
                s.keptHistory[name, default: 0] += 1
                if s.keptHistory[name]! > historyLimit,
                   let first = s.kept.firstIndex(where: { $0.keeping == .history && $0.event.name == name }) {
                    s.kept.remove(at: first)
                    s.keptHistory[name]! -= 1
                }
            }
        }
    }

    /// The events published since the last call, and (when `replay`) everything kept, taken together.
    func take(replay: Bool) -> (pending: [Stored], kept: [Stored]) {
        state.withLock { s in
            defer { s.pending.removeAll(keepingCapacity: true) }
            return (s.pending, replay ? s.kept : [])
        }
    }

    /// The kept events named `name`, oldest first.
    func kept(named name: String) -> [EventStreamEndpoint.Event] {
        state.withLock { s in s.kept.filter { $0.event.name == name }.map(\.event) }
    }

    /// How many `.history` events named `name` are kept.
    func keptCount(named name: String) -> Int {
        state.withLock { $0.keptHistory[name] ?? 0 }
    }
}
