import LoadGenerator
import Testing

/// What the progress line and the dashboard read of the driver threads' live counters.
@Suite struct LiveSnapshotTests {
    @Test func connectionsAddUpAndTheLowestStreamLimitIsKept() {
        let a = LiveCounters(), b = LiveCounters(), c = LiveCounters()
        a.connections.store(4, ordering: .relaxed)
        a.peerStreamLimit.store(1000, ordering: .relaxed)
        b.connections.store(3, ordering: .relaxed)
        b.peerStreamLimit.store(100, ordering: .relaxed)
        // A thread whose peer has not sent SETTINGS yet says nothing of the limit.
        c.connections.store(1, ordering: .relaxed)
        let s = LiveSnapshot([a, b, c])
        #expect(s.connections == 8)
        #expect(s.peerStreamLimit == 100)
        #expect(LiveSnapshot([c]).peerStreamLimit == nil)
    }
}
