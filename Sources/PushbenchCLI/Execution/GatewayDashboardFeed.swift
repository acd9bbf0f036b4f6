import MockGateway
import PushVocabulary

/// `pushbench gateway --dashboard`: turns the gateway's running totals, read once a second, into the
/// `gateway` event of each second: what arrived and was answered in that second (the difference from the
/// previous reading) and what is open at its end.
struct GatewayDashboardFeed {
    private var previous = GatewayStats()
    private var second = 0

    /// The next second's event data, from the totals `now`; and its number.
    mutating func next(_ now: GatewayStats) -> (second: Int, json: String) {
        let p = previous
        defer {
            previous = now
            second += 1
        }
        func delta(_ a: UInt64, _ b: UInt64) -> UInt64 { a >= b ? a - b : 0 }
        func deltas<K: Hashable>(_ a: [K: UInt64], _ b: [K: UInt64]) -> [K: UInt64] {
            a.compactMapValues { $0 }.reduce(into: [:]) { out, kv in
                let d = delta(kv.value, b[kv.key] ?? 0)
                if d > 0 { out[kv.key] = d }
            }
        }
        let json = JSONWriter.text { w in
            w.object { o in
                o.member("second", Int64(second))
                o.member("requests", delta(now.requests, p.requests))
                o.member("fcm", delta(now.fcm.requests, p.fcm.requests))
                o.member("http1", delta(now.http1Requests, p.http1Requests))
                o.member("http1_refused", delta(now.http1Refused, p.http1Refused))
                o.member("by_status", sortedByKey: deltas(now.byStatus, p.byStatus))
                o.member("by_reason", sortedByKey: deltas(now.byReason, p.byReason))
                o.member("connections_open", now.connectionsOpen)
                o.member("connections_new", delta(now.connectionsTotal, p.connectionsTotal))
                o.member("streams_open", now.streamsOpen)
                o.member("goaways", delta(now.goaways, p.goaways))
                o.member("drops", delta(now.drops, p.drops))
                o.member("delayed", delta(now.delayedResponses, p.delayedResponses))
                o.member("limits", sortedByKey: deltas(now.limits, p.limits))
                o.member("requests_total", now.requests)
            }
        }
        return (second, json)
    }
}
