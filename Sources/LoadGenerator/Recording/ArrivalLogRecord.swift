/// One push's record in a pipeline run's `--log` file, as the run's main thread hands it over when the
/// ledger took it: plain numbers, so queuing it copies a few words.
public struct ArrivalLogRecord: Sendable, Equatable {
    /// The request it belongs to (its global index), or ``PushArrival/noID``/``PushArrival/foreignID``.
    public var index: Int64
    /// The request's intended send time (monotonic ns; 0 when the push names no request of the run).
    public var intended: UInt64
    /// When the push arrived at the egress (monotonic ns).
    public var arrived: UInt64
    /// The token's index in the run's token list, -1 when the push's token is not one of them.
    public var tokenIndex: Int32
    /// The status the egress answered (0: it dropped the connection).
    public var status: UInt16
    /// 0 APNs, 1 FCM.
    public var route: UInt8
    /// ``PipelineLedger/Verdict`` raw value.
    public var verdict: UInt8
    /// The request's ``Phase`` raw value.
    public var phase: UInt8

    /// A record; see the properties.
    public init(index: Int64, intended: UInt64, arrived: UInt64, tokenIndex: Int32 = -1, status: UInt16, route: UInt8,
                verdict: UInt8, phase: UInt8 = 1) {
        self.index = index
        self.intended = intended
        self.arrived = arrived
        self.tokenIndex = tokenIndex
        self.status = status
        self.route = route
        self.verdict = verdict
        self.phase = phase
    }
}
