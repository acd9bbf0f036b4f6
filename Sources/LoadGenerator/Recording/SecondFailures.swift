import Synchronization

/// The error answers of the last seconds one driver thread closed, by reason (by status where the answer
/// carried no reason), for the live dashboard: a small ring the driver thread fills once a second, copied
/// in place (nothing allocated), and the main thread reads as it passes each merged second on.
public final class SecondFailures: Sendable {
    private struct Slot: Sendable {
        var second = -1
        var any = false
        var byReason: [Int]
        var byStatus: [Int]
    }

    /// Seconds the ring holds: the main thread reads a second within a few polls of its closing.
    static let depth = 16
    private let slots: Mutex<[Slot]>

    init() {
        slots = Mutex((0..<Self.depth).map { _ in
            Slot(byReason: Array(repeating: 0, count: Reasons.count), byStatus: Array(repeating: 0, count: 600))
        })
    }

    /// Keeps second `second`'s counts (`any`: whether there was an error answer at all; without one the
    /// counts are not read).
    func put(second: Int, byReason: [Int], byStatus: [Int], any: Bool) {
        slots.withLock { s in
            let k = second % Self.depth
            s[k].second = second
            s[k].any = any
            guard any else { return }
            for i in 0..<min(byReason.count, s[k].byReason.count) { s[k].byReason[i] = byReason[i] }
            for i in 0..<min(byStatus.count, s[k].byStatus.count) { s[k].byStatus[i] = byStatus[i] }
        }
    }

    /// Adds second `second`'s error answers to `counts` (by reason name, or by status as text); false when
    /// the ring no longer holds the second.
    public func add(second: Int, into counts: inout [String: Int64]) -> Bool {
        // The counts are copied element by element under the lock (the slot's arrays are never shared, so
        // the driver thread's next `put` copies nothing) and named outside it: `put` never waits on the
        // main thread making strings.
        var reasons = [Int](repeating: 0, count: Reasons.count), statuses = [Int](repeating: 0, count: 600)
        let found: Bool? = slots.withLock { s in
            let k = second % Self.depth
            guard s[k].second == second else { return nil }
            guard s[k].any else { return false }
            for i in 0..<min(reasons.count, s[k].byReason.count) { reasons[i] = s[k].byReason[i] }
            for i in 0..<min(statuses.count, s[k].byStatus.count) { statuses[i] = s[k].byStatus[i] }
            return true
        }
        guard let found else { return false }
        guard found else { return true }
        for (i, n) in reasons.enumerated() where n > 0 { counts[Reasons.names[i], default: 0] += Int64(n) }
        for (i, n) in statuses.enumerated() where n > 0 { counts[String(i), default: 0] += Int64(n) }
        return true
    }
}
