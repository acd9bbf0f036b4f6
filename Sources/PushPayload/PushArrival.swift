/// One push as a pipeline run's gateway saw it: the request it belongs to, when it arrived, its route and
/// the answer the gateway decided.
public struct PushArrival: Sendable, Equatable {
    /// The request's global index; ``noID`` or ``foreignID`` when the push carried none or another run's.
    public var index: Int64
    /// Arrival (monotonic ns, the transport's stamp when it read the request).
    public var arrivedAt: UInt64
    /// The route: 0 APNs, 1 FCM.
    public var route: UInt8
    /// The status answered; 0 when the gateway dropped the connection instead.
    public var status: UInt16
    /// The push's device token as ``PushTokenHash`` fingerprints it; 0 when it named none.
    public var token: UInt64

    /// A push without a correlation id.
    public static let noID: Int64 = -1
    /// A push with another run's correlation id.
    public static let foreignID: Int64 = -2

    /// An arrival; see the properties.
    public init(index: Int64, arrivedAt: UInt64, route: UInt8, status: UInt16, token: UInt64 = 0) {
        self.index = index
        self.arrivedAt = arrivedAt
        self.route = route
        self.status = status
        self.token = token
    }

    /// Whether the answer asks the sender to try again (429, 500, 503, or a dropped connection).
    public var isRetryable: Bool { status == 0 || status == 429 || status == 500 || status == 503 }
}
