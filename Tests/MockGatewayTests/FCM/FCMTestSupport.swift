import Foundation
@testable import MockGateway

/// The seeds' example FCM message (design: the default FCM message of the load generator).
let fcmSeedMessage = #"{"message":{"token":"TOKEN","notification":{"title":"Portugal vs. Denmark","body":"great match!"},"apns":{"payload":{"aps":{"badge":1}}},"data":{"customKey":"customValue"}}}"#

let fcmPath = "/v1/projects/pushbench/messages:send"

/// An FCM send request with a bearer token.
func fcmRequest(_ body: String, token: String = "fcm-token-1", path: String = fcmPath,
                headers: [(String, String)] = [("authorization", "Bearer test")], method: String = "POST") -> TestRequest {
    TestRequest(method: method, path: path, headers: headers, body: body.replacingOccurrences(of: "TOKEN", with: token))
}

/// `{"message":{"token":…, <fields>}}`.
func fcmMessage(_ fields: String, token: String = "fcm-token-1") -> String {
    #"{"message":{"token":"\#(token)""# + (fields.isEmpty ? "" : "," + fields) + "}}"
}

extension Harness {
    /// The FCM answer to `request`.
    mutating func fcm(_ request: TestRequest) -> FCMResponse {
        let action = send(request)
        guard let r = action.response, let f = r.fcm else { fatalError("no FCM response: \(action)") }
        precondition(r.status == f.status)
        return f
    }

    /// The FCM stats as /stats would show them at monotonic time `now`.
    func fcmStats(at now: UInt64) -> FCMStats {
        var s = FCMStats()
        machine.counters.fcm.accumulate(into: &s, now: now)
        return s
    }
}

/// The parsed error body: (code, status, message, FcmError errorCode or nil).
func parseError(_ body: String) -> (code: Int, status: String, message: String, errorCode: String?)? {
    guard let o = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
          let e = o["error"] as? [String: Any], let code = e["code"] as? Int, let status = e["status"] as? String,
          let message = e["message"] as? String else { return nil }
    var errorCode: String?
    if let details = e["details"] as? [[String: Any]] {
        for d in details where (d["@type"] as? String) == "type.googleapis.com/google.firebase.fcm.v1.FcmError" {
            errorCode = d["errorCode"] as? String
        }
    }
    return (code, status, message, errorCode)
}

/// `0:<id>%<hex>` as the gateway writes it.
func fcmMessageID(_ id: UInt64) -> String {
    let r = FCMResponse(status: 200, code: nil, problem: .none, text: FCMInlineText("p"), number: id)
    return String(r.body.dropFirst(#"{"name":"projects/p/messages/"#.count).dropLast(2))
}

/// The id of a ``Harness``'s `k`-th accepted FCM message on loop 0.
func harnessMessageID(_ k: UInt64) -> String {
    fcmMessageID(FCMEngine.messageNumber(k, base: FCMEngine.messageBase(idSeed: Harness.idSeed), loopTag: 0))
}
