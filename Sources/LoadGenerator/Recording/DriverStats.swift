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
    /// Of ``connectFailures``, those whose TLS handshake failed because the target's certificate did
    /// not verify against the run's trust.
    public var certificateFailures = 0
    /// The first of those, in words: what did not verify and which CAs the run trusts.
    public var certificateProblem: String?
    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS in force at the end of the run: the lowest on the
    /// connections still open, else the last announced (nil: never connected). Not the lowest ever
    /// heard: APNs starts a provider-token connection at 1 and raises it after the first valid token.
    public var peerMaxStreams: Int?
    /// The TLS handshakes (nil over h2c, or before any connected).
    public var tls: TLSHandshakes?
    /// Responses whose body was longer than the client keeps (their first bytes were read for a reason).
    public var truncatedBodies = 0

    /// No connections yet.
    init() {}

    /// Adds `other`'s counts; the lowest peer stream limit of both.
    public mutating func merge(_ other: ConnectionStats) {
        opened += other.opened
        goaways += other.goaways
        lost += other.lost
        connectFailures += other.connectFailures
        certificateFailures += other.certificateFailures
        if certificateProblem == nil { certificateProblem = other.certificateProblem }
        truncatedBodies += other.truncatedBodies
        if let p = other.peerMaxStreams { peerMaxStreams = min(peerMaxStreams ?? p, p) }
        if let t = other.tls {
            if tls == nil { tls = t } else { tls!.merge(t) }
        }
    }
}

/// What the TLS handshakes of a run settled and how long they took (one per connection, reconnects
/// included). The version, cipher and ALPN are the first handshake's: every connection of a run uses
/// the same context against the same server.
public struct TLSHandshakes: Sendable, Equatable {
    /// e.g. `TLSv1.3`.
    public var version: String
    /// e.g. `TLS_AES_128_GCM_SHA256`.
    public var cipher: String
    /// The protocol ALPN selected (`h2`), nil when the server selected none.
    public var alpn: String?
    /// The SNI name sent (nil for an IP address).
    public var serverName: String?
    /// Whether the server's certificate was verified (false with `--insecure`).
    public var verified: Bool
    /// Handshakes completed.
    public var count = 0
    /// Handshake durations in ns, the first ``maxSamples``.
    public var nanoseconds: [UInt64] = []

    /// Durations kept (a run reconnecting for hours keeps the first ones; `count` counts them all).
    static let maxSamples = 100_000

    /// The first handshake.
    init(version: String, cipher: String, alpn: String?, serverName: String?, verified: Bool) {
        self.version = version
        self.cipher = cipher
        self.alpn = alpn
        self.serverName = serverName
        self.verified = verified
    }

    /// Counts a handshake of `nanoseconds`.
    public mutating func record(_ nanoseconds: UInt64) {
        count += 1
        if self.nanoseconds.count < Self.maxSamples { self.nanoseconds.append(nanoseconds) }
    }

    /// Adds another thread's handshakes.
    public mutating func merge(_ other: TLSHandshakes) {
        count += other.count
        nanoseconds += other.nanoseconds.prefix(max(0, Self.maxSamples - nanoseconds.count))
    }

    /// One line for the progress display, e.g. `TLSv1.3 h2`.
    var brief: String { version + " " + (alpn ?? "no ALPN") }
}

/// What driver threads measured of their own sending, beside the counts and histograms of the
/// ``Recorder``: one thread's, filled in place as it runs, or a run's, merged from its threads (and an
/// A/B variant's, from its rounds) by ``merge(_:concurrent:)``.
public struct DriverStats: Sendable, Equatable {
    /// CPU seconds of the driver threads, user and system.
    public var cpuUser = 0.0, cpuSystem = 0.0
    /// Times the scheduler preempted a driver thread.
    public var involuntarySwitches = 0
    /// Nanoseconds the driver threads were runnable but waited for a CPU, or nil where the kernel does not
    /// keep it.
    public var cpuWaitNanoseconds: UInt64?
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
    /// APNs provider tokens signed after the run's first (one per driver per refresh interval).
    public var providerTokenRefreshes = 0

    /// Nothing measured yet.
    init() {}

    /// Adds `other`: counts add up, the deepest backlog is the deeper one, pruned tokens are united.
    /// `concurrent` says whether both ran at the same time (two threads of a run: their in-flight peaks
    /// add up) or one after the other (two rounds of an A/B variant: the higher peak is kept).
    public mutating func merge(_ other: DriverStats, concurrent: Bool) {
        cpuUser += other.cpuUser
        cpuSystem += other.cpuSystem
        involuntarySwitches += other.involuntarySwitches
        if let w = other.cpuWaitNanoseconds { cpuWaitNanoseconds = (cpuWaitNanoseconds ?? 0) + w }
        maxBacklog = max(maxBacklog, other.maxBacklog)
        blocked += other.blocked
        maxInFlight = concurrent ? maxInFlight + other.maxInFlight : max(maxInFlight, other.maxInFlight)
        connections.merge(other.connections)
        pruned.formUnion(other.pruned)
        providerTokenRefreshes += other.providerTokenRefreshes
    }
}
