/// FCM's per-project quota as a rolling window of 60 slots: the messages counted in the last
/// `windowNanos`, refused once they reach `limit`. Fixed memory; time only moves it forward.
struct QuotaWindow {
    let limit: UInt64
    let slotNanos: UInt64
    private var slots = [UInt64](repeating: 0, count: 60)
    private var head: UInt64 = 0
    private var total: UInt64 = 0

    /// A window of `windowNanos` allowing `limit` messages.
    init(limit: UInt64, windowNanos: UInt64) {
        self.limit = limit
        slotNanos = max(1, windowNanos / 60)
    }

    /// Moves the window to `now` (monotonic ns): slots that fell out of it are forgotten.
    mutating func advance(now: UInt64) {
        let slot = now / slotNanos
        guard slot > head else { return }
        let steps = min(slot - head, 60)
        for s in 1...steps {
            let i = Int((head + s) % 60)
            total -= slots[i]
            slots[i] = 0
        }
        head = slot
    }

    /// Whether the window is full: the next message is refused.
    var isExhausted: Bool { total >= limit }

    /// Counts one message in the current slot.
    mutating func count() {
        slots[Int(head % 60)] += 1
        total += 1
    }
}
