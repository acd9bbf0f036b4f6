/// A connection pool's counters, or those of every pool in a run added up.
public struct ConnectionStats: Sendable, Equatable {
    /// Connections opened, reconnects included.
    public var opened = 0
    /// GOAWAYs received.
    public var goaways = 0
    /// Connections lost (closed by the peer or the network, not by us).
    public var lost = 0
    /// Connects that failed or timed out.
    public var connectFailures = 0
    /// Lowest SETTINGS_MAX_CONCURRENT_STREAMS the peer announced (nil: never connected).
    public var peerMaxStreams: Int?

    /// No connections yet.
    public init() {}

    /// Adds `other`'s counts; the lowest peer stream limit of both.
    public mutating func merge(_ other: ConnectionStats) {
        opened += other.opened
        goaways += other.goaways
        lost += other.lost
        connectFailures += other.connectFailures
        if let p = other.peerMaxStreams { peerMaxStreams = min(peerMaxStreams ?? p, p) }
    }
}

/// What driver threads measured of their own sending, beside the counts and histograms of the
/// ``Recorder``: one thread's, filled in place as it runs, or a run's, merged from its threads (and an
/// A/B variant's, from its rounds) by ``merge(_:concurrent:)``.
public struct DriverStats: Sendable, Equatable {
    /// CPU seconds of the driver threads, user and system.
    public var cpuUser = 0.0, cpuSystem = 0.0
    /// Times the scheduler preempted a driver thread.
    public var involuntarySwitches = 0
    /// Deepest backlog (due requests waiting for a stream).
    public var maxBacklog = 0
    /// Times a due request found no free stream.
    public var blocked = 0
    /// Most requests in flight at once.
    public var maxInFlight = 0
    /// The connections' counters.
    public var connections = ConnectionStats()
    /// Tokens answered as gone (empty, of capacity 0, when pruning is off).
    public var pruned = TokenSet(capacity: 0)

    /// Nothing measured yet.
    public init() {}

    /// Adds `other`: counts add up, the deepest backlog is the deeper one, pruned tokens are united.
    /// `concurrent` says whether both ran at the same time (two threads of a run: their in-flight peaks
    /// add up) or one after the other (two rounds of an A/B variant: the higher peak is kept).
    public mutating func merge(_ other: DriverStats, concurrent: Bool) {
        cpuUser += other.cpuUser
        cpuSystem += other.cpuSystem
        involuntarySwitches += other.involuntarySwitches
        maxBacklog = max(maxBacklog, other.maxBacklog)
        blocked += other.blocked
        maxInFlight = concurrent ? maxInFlight + other.maxInFlight : max(maxInFlight, other.maxInFlight)
        connections.merge(other.connections)
        pruned.formUnion(other.pruned)
    }
}
