import PushVocabulary

/// summary.json `gateway`: what the embedded gateway counted.
public struct GatewayCounts: Sendable, Equatable {
    /// Push requests received.
    var received: Int
    /// Responses by HTTP status.
    public var byStatus: [Int: Int]
    /// Error responses by reason.
    public var byReason: [String: Int]
    /// Connections accepted.
    public var connectionsTotal: Int
    /// GOAWAYs sent by a behaviour.
    public var goaways: Int
    /// Connections dropped by a behaviour.
    public var drops: Int
    /// Request body bytes.
    public var bytesIn: Int
    /// The FCM route's counters, when it was used.
    public var fcm: FCMCounts?
    /// Requests that came over HTTP/1.1 (`--http1`, the token fetches), and HTTP/1.1 requests refused as
    /// APNs refuses them; `http1` in the JSON only when either is not 0.
    public var http1Requests = 0, http1Refused = 0

    /// The counts.
    public init(received: Int, byStatus: [Int: Int], byReason: [String: Int], connectionsTotal: Int, goaways: Int,
                drops: Int, bytesIn: Int, fcm: FCMCounts?, http1Requests: Int = 0, http1Refused: Int = 0) {
        self.http1Requests = http1Requests
        self.http1Refused = http1Refused
        self.received = received
        self.byStatus = byStatus
        self.byReason = byReason
        self.connectionsTotal = connectionsTotal
        self.goaways = goaways
        self.drops = drops
        self.bytesIn = bytesIn
        self.fcm = fcm
    }

    var json: JSONValue {
        .object([
            ("received", .int(Int64(received))),
            ("by_status", .object(byStatus.sorted { $0.key < $1.key }.map { (String($0.key), .int(Int64($0.value))) })),
            ("by_reason", .object(byReason.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
            ("connections_total", .int(Int64(connectionsTotal))), ("goaways", .int(Int64(goaways))),
            ("drops", .int(Int64(drops))), ("bytes_in", .int(Int64(bytesIn))),
        ] + (fcm.map { [("fcm", $0.json)] } ?? [])
          + (http1Requests + http1Refused == 0 ? [] : [("http1", .object([("requests", .int(Int64(http1Requests))),
                                                                          ("refused", .int(Int64(http1Refused)))]))]))
    }
}

/// summary.json `gateway.fcm`: the FCM route's counters (the captured pushes go to capture.json).
public struct FCMCounts: Sendable, Equatable {
    /// messages:send requests.
    public var requests: Int
    /// Messages accepted.
    public var messagesAccepted: Int
    /// validate_only requests answered.
    var validateOnly: Int
    /// Topic or condition messages.
    public var topicMessages: Int
    /// Devices reached by fan-out.
    public var deviceDeliveries: Int
    /// Devices still to reach.
    public var fanoutPending: Int
    /// Errors by FCM code.
    public var byCode: [String: Int]
    /// Tokens churned.
    public var churnedTokens: Int
    /// Requests refused because their token was churned.
    public var churnRefusals: Int
    /// Apple pushes captured.
    public var captured: Int

    /// The counters.
    public init(requests: Int, messagesAccepted: Int, validateOnly: Int, topicMessages: Int, deviceDeliveries: Int,
                fanoutPending: Int, byCode: [String: Int], churnedTokens: Int, churnRefusals: Int, captured: Int) {
        self.requests = requests
        self.messagesAccepted = messagesAccepted
        self.validateOnly = validateOnly
        self.topicMessages = topicMessages
        self.deviceDeliveries = deviceDeliveries
        self.fanoutPending = fanoutPending
        self.byCode = byCode
        self.churnedTokens = churnedTokens
        self.churnRefusals = churnRefusals
        self.captured = captured
    }

    var json: JSONValue {
        .object([
            ("requests", .int(Int64(requests))), ("messages_accepted", .int(Int64(messagesAccepted))),
            ("validate_only", .int(Int64(validateOnly))), ("topic_messages", .int(Int64(topicMessages))),
            ("device_deliveries", .int(Int64(deviceDeliveries))), ("fanout_pending", .int(Int64(fanoutPending))),
            ("by_code", .object(byCode.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
            ("churned_tokens", .int(Int64(churnedTokens))), ("churn_refusals", .int(Int64(churnRefusals))),
            ("captured", .int(Int64(captured))),
        ])
    }
}

/// summary.json `reconciliation`: every response the client counted was received by the gateway, and
/// the gateway received no request the client did not send (answered ≤ received ≤ attempts).
public struct Reconciliation: Sendable, Equatable {
    /// Requests the client sent, retries included, measured and warm-up.
    var clientAttempts: Int
    /// Responses the client received.
    var clientAnswered: Int
    /// Requests the gateway received.
    var gatewayReceived: Int
    /// The FCM route's check, when it was used.
    public var fcm: FCMReconciliation?

    /// The figures.
    public init(clientAttempts: Int, clientAnswered: Int, gatewayReceived: Int, fcm: FCMReconciliation? = nil) {
        self.clientAttempts = clientAttempts
        self.clientAnswered = clientAnswered
        self.gatewayReceived = gatewayReceived
        self.fcm = fcm
    }

    /// answered ≤ received ≤ attempts.
    var consistent: Bool { clientAnswered <= gatewayReceived && gatewayReceived <= clientAttempts }

    var json: JSONValue {
        var m: [(String, JSONValue)] = [
            ("client_attempts", .int(Int64(clientAttempts))), ("client_answered", .int(Int64(clientAnswered))),
            ("gateway_received", .int(Int64(gatewayReceived))), ("consistent", .bool(consistent)),
        ]
        if let fcm {
            m += [("fcm_messages_accepted", .int(Int64(fcm.accepted))), ("client_ok", .int(Int64(fcm.clientOK))),
                  ("fcm_consistent", .bool(fcm.consistent))]
        }
        return .object(m)
    }
}

/// FCM messages the gateway accepted against the client's 200s: every 200 the client counted is an
/// accepted message, and the gateway accepted none the client did not send (an unanswered request may
/// have been accepted): ok ≤ accepted ≤ ok + unanswered.
public struct FCMReconciliation: Sendable, Equatable {
    /// Messages the gateway accepted (validate_only included).
    var accepted: Int
    /// 200s the client counted.
    var clientOK: Int
    /// Requests the client sent that got no answer (unfinished or lost to the transport).
    var clientUnanswered: Int

    /// The figures.
    public init(accepted: Int, clientOK: Int, clientUnanswered: Int) {
        self.accepted = accepted
        self.clientOK = clientOK
        self.clientUnanswered = clientUnanswered
    }

    /// ok ≤ accepted ≤ ok + unanswered.
    var consistent: Bool { clientOK <= accepted && accepted <= clientOK + clientUnanswered }
}
