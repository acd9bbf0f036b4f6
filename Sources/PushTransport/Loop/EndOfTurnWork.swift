/// Work a layer above the transport runs once at the end of a loop turn, before the connections write
/// what the turn queued (``EventLoop/schedule(_:)``): a load generator refilling, in one pass, the
/// streams every response of the turn freed, so their requests join those connections' batched writes.
public final class EndOfTurnWork: LoopFlushable {
    var flushScheduled = false
    private let body: () -> Void

    /// Work that runs `body` at the end of each turn it was scheduled in.
    public init(_ body: @escaping () -> Void) {
        self.body = body
    }

    func flush() { body() }
}

extension EventLoop {
    /// Runs `work` at the end of this loop turn, once however often it is scheduled in the turn, in the
    /// pass that writes the connections' queued frames: a connection it queues frames on is written
    /// in the same pass.
    @inline(__always) public func schedule(_ work: EndOfTurnWork) {
        scheduleFlush(work)
    }
}
