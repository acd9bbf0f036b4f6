import Synchronization

/// The bounds a server holds every connection to, so no client can make it keep memory, descriptors or
/// time without end (docs/gateway.md "Limits and timeouts"). Every per-request check is an integer
/// comparison; the timeouts are enforced by one sweep per server, not a timer per connection.
///
/// A session of any protocol (HTTP/2 here, HTTP/1.1 beside it) applies the same values: header bytes
/// per request and held per connection, body bytes per request, held per connection and held by the
/// whole server, and the timeouts.
public struct ServerLimits: Sendable, Equatable {
    /// The most header bytes of one request (name + value + 32 per field, as SETTINGS_MAX_HEADER_LIST_SIZE
    /// counts them; HTTP/2 announces it). A request past it is answered 431 and nothing more of its
    /// header block is kept.
    public var maxHeaderListSize = 16 * 1024
    /// The most header bytes one connection keeps for its open requests together; a request that would
    /// pass it is refused (HTTP/2: RST_STREAM REFUSED_STREAM).
    public var maxHeaderMemoryPerConnection = 4 << 20
    /// Request bodies larger than this are reset (HTTP/2: RST_STREAM CANCEL, not REFUSED_STREAM, which
    /// would tell the client the request was not processed and may be retried; HTTP/1.1: answered 413
    /// with `Connection: close`). A server whose requests are small (the gateway's are push payloads)
    /// sets it far lower.
    public var maxRequestBodySize = 1 << 20
    /// The most request-body bytes one connection keeps for its open requests together; a DATA frame
    /// that would pass it resets its stream (ENHANCE_YOUR_CALM).
    public var maxBodyMemoryPerConnection = 8 << 20
    /// The most request-body bytes the whole server (this loop's share of it) keeps; past it a stream is
    /// reset with REFUSED_STREAM (nothing of it was processed, so the client may send it again later).
    public var maxBodyMemory = 128 << 20
    /// The most frames queued for a client before the server stops reading from it (back-pressure); it
    /// reads again once half of them are written.
    public var maxOutboundFrames = 4096
    /// The most frames per second that carry no request (SETTINGS, PING, WINDOW_UPDATE, PRIORITY,
    /// RST_STREAM, empty DATA) one connection may send; past it the connection gets GOAWAY
    /// ENHANCE_YOUR_CALM and is closed.
    public var maxControlFramesPerSecond = 10_000
    /// From accept to the client's first SETTINGS (the connection preface); 0 = no limit.
    public var handshakeTimeoutNanos: UInt64 = 10_000_000_000
    /// A connection with no open stream and no new request for this long gets GOAWAY (NO_ERROR, with
    /// ``idleGoAwayDebugData``) and closes; 0 = never.
    public var idleTimeoutNanos: UInt64 = 300_000_000_000
    /// From a request's first HEADERS to its END_STREAM; past it the stream is reset (CANCEL), or the
    /// connection closed when the header block itself never ended; 0 = no limit.
    public var requestTimeoutNanos: UInt64 = 10_000_000_000
    /// How long a write may wait on a client that reads nothing; past it the connection gets GOAWAY
    /// ENHANCE_YOUR_CALM and is closed; 0 = no limit.
    public var writeTimeoutNanos: UInt64 = 10_000_000_000
    /// The debug data of the idle GOAWAY (the gateway puts `{"reason":"IdleTimeout"}` there, as APNs does).
    public var idleGoAwayDebugData: [UInt8] = []

    /// The defaults.
    public init() {}

    /// How often the server sweeps its connections for timeouts: a quarter of the shortest one, between
    /// 20 ms and 1 s (0: no timeout is set, no sweep).
    var sweepIntervalMilliseconds: UInt64 {
        let shortest = [handshakeTimeoutNanos, idleTimeoutNanos, requestTimeoutNanos, writeTimeoutNanos].filter { $0 > 0 }.min()
        guard let shortest else { return 0 }
        return min(1000, max(20, shortest / 4_000_000))
    }
}

/// A bound a server enforced, reported to its delegate (``HTTP2ServerDelegate/server(_:connection:didEnforce:)``)
/// each time, so the gateway can count them and log the first of each kind.
public enum ServerLimit: Int, Sendable, CaseIterable {
    /// A connection was accepted and closed at once: `--max-connections` were open.
    case connections
    /// accept(2) failed for want of a file descriptor (EMFILE/ENFILE).
    case descriptors
    /// A request's header list passed ``ServerLimits/maxHeaderListSize`` (answered 431).
    case headerListSize
    /// A connection's held header bytes passed ``ServerLimits/maxHeaderMemoryPerConnection``.
    case headerMemory
    /// A request body passed ``ServerLimits/maxRequestBodySize``.
    case requestBodySize
    /// A connection's held body bytes passed ``ServerLimits/maxBodyMemoryPerConnection``.
    case bodyMemoryPerConnection
    /// The server's held body bytes passed ``ServerLimits/maxBodyMemory``.
    case bodyMemory
    /// A client let ``ServerLimits/maxOutboundFrames`` pile up: reading from it paused.
    case outboundQueue
    /// A client sent more than ``ServerLimits/maxControlFramesPerSecond``.
    case controlFrames
    /// No connection preface within ``ServerLimits/handshakeTimeoutNanos``.
    case handshakeTimeout
    /// Idle past ``ServerLimits/idleTimeoutNanos``.
    case idleTimeout
    /// A request unfinished past ``ServerLimits/requestTimeoutNanos``.
    case requestTimeout
    /// A client read nothing for ``ServerLimits/writeTimeoutNanos``.
    case writeTimeout

    /// The limit's name in counts (`/stats` `limits`), snake case.
    public var name: String {
        switch self {
        case .connections: "connections"
        case .descriptors: "descriptors"
        case .headerListSize: "header_list_size"
        case .headerMemory: "header_memory"
        case .requestBodySize: "request_body_size"
        case .bodyMemoryPerConnection: "body_memory_per_connection"
        case .bodyMemory: "body_memory"
        case .outboundQueue: "outbound_queue"
        case .controlFrames: "control_frames"
        case .handshakeTimeout: "handshake_timeout"
        case .idleTimeout: "idle_timeout"
        case .requestTimeout: "request_timeout"
        case .writeTimeout: "write_timeout"
        }
    }
}

/// Open connections counted across every loop of one server process, against one cap: the loops of a
/// gateway share it (accepts are rare, so one atomic is cheap enough).
public final class ConnectionCap: Sendable {
    /// The most connections open at once.
    public let limit: Int
    private let open = Atomic<Int>(0)

    /// A cap of `limit` connections.
    public init(limit: Int) { self.limit = max(1, limit) }

    /// Connections counted open now.
    public var current: Int { open.load(ordering: .relaxed) }

    /// Takes one place; false (nothing taken) when all `limit` are in use.
    func acquire() -> Bool {
        var n = open.load(ordering: .relaxed)
        while n < limit {
            let (done, seen) = open.compareExchange(expected: n, desired: n + 1, ordering: .relaxed)
            if done { return true }
            n = seen
        }
        return false
    }

    /// Gives back a place taken by ``acquire()``.
    func release() { open.subtract(1, ordering: .relaxed) }
}
