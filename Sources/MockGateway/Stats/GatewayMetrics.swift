import PushVocabulary

extension GatewayStats {
    /// The numbers of `GET /stats` in Prometheus's text exposition format, as `GET /metrics` answers
    /// them: requests by route, responses by status, errors by reason (APNs) and code (FCM), the latency
    /// injected, streams open, connections, GOAWAYs and drops, limits enforced, token churn and FCM fan-out.
    /// Names start `pushbench_gateway_`; counters end in `_total`, times are in seconds.
    var prometheusText: String {
        var t = PrometheusText()
        let prefix = "pushbench_gateway_"
        func labelled(_ key: String, _ d: [String: UInt64]) -> [([String: String], Double)] {
            d.keys.sorted().map { ([key: $0], Double(d[$0]!)) }
        }
        let fcmRequests = min(fcm.requests, requests)
        t.family(prefix + "requests_total", .counter, "Push requests received, by route (GET /stats and /metrics are not counted).",
                 [(["route": "apns"], Double(requests - fcmRequests)), (["route": "fcm"], Double(fcmRequests))])
        t.family(prefix + "http1_requests_total", .counter, "Requests that came over HTTP/1.1, of every route.", Double(http1Requests))
        t.family(prefix + "http1_refused_total", .counter, "HTTP/1.1 requests to the APNs route, refused as APNs refuses them.",
                 Double(http1Refused))
        t.family(prefix + "responses_total", .counter, "Responses decided, by HTTP status (a delayed response counts when decided).",
                 byStatus.keys.sorted().map { (["status": String($0)], Double(byStatus[$0]!)) })
        t.family(prefix + "apns_errors_total", .counter, "APNs error responses, by reason.", labelled("reason", byReason))
        t.family(prefix + "fcm_errors_total", .counter, "FCM error responses, by errorCode.", labelled("code", fcm.byCode))
        t.family(prefix + "request_body_bytes_total", .counter, "Request body bytes received.", Double(bytesIn))
        t.family(prefix + "delayed_responses_total", .counter, "Responses held back by injected latency.", Double(delayedResponses))
        t.family(prefix + "injected_latency_seconds_total", .counter, "Latency injected into those responses, summed.",
                 Double(injectedDelayNanos) / 1e9)
        t.family(prefix + "connections_open", .gauge, "Connections open now.", Double(connectionsOpen))
        t.family(prefix + "streams_open", .gauge,
                 "Push requests received and not yet answered (those held back by injected latency).",
                 Double(streamsOpen))
        t.family(prefix + "connections_total", .counter, "Connections accepted since start.", Double(connectionsTotal))
        t.family(prefix + "goaways_total", .counter, "GOAWAY frames sent by a behaviour or at shutdown.", Double(goaways))
        t.family(prefix + "drops_total", .counter, "Connections dropped abruptly by a behaviour.", Double(drops))
        t.family(prefix + "limits_enforced_total", .counter, "Limits and timeouts enforced on clients, by limit.", labelled("limit", limits))
        t.family(prefix + "churned_tokens_total", .counter, "Distinct tokens invalidated by token churn.", Double(fcm.churnedTokens))
        t.family(prefix + "churn_refusals_total", .counter, "Requests refused because their token had churned.", Double(fcm.churnRefusals))
        t.family(prefix + "fcm_messages_accepted_total", .counter, "FCM messages accepted for delivery (not dry runs).",
                 Double(fcm.messagesAccepted))
        t.family(prefix + "fcm_validate_only_total", .counter, "FCM validate_only requests that passed.", Double(fcm.validatedOnly))
        t.family(prefix + "fcm_topic_messages_total", .counter, "FCM messages to a topic or condition.", Double(fcm.topicMessages))
        t.family(prefix + "fcm_device_deliveries_total", .counter, "Devices reached: one per token message plus topic fan-out done.",
                 Double(fcm.deviceDeliveries))
        t.family(prefix + "fcm_fanout_pending", .gauge, "Topic fan-out deliveries still pending.", Double(fcm.fanoutPending))
        return t.text
    }
}
