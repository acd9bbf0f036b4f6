import CAllocCounter
@testable import MockGateway
import PushVocabulary

/// Builds a ``GatewayRequest`` from Swift strings: every byte lives in one arena kept alive for the call.
struct TestRequest {
    var method = "POST"
    var path = "/3/device/" + String(repeating: "ab", count: 32)
    var headers: [(String, String)] = [("apns-topic", "com.example.app")]
    var body: [UInt8] = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

    init(method: String = "POST", path: String? = nil, headers: [(String, String)]? = nil, body: String? = nil) {
        self.method = method
        if let path { self.path = path }
        if let headers { self.headers = headers }
        if let body { self.body = Array(body.utf8) }
    }

    init(bodyBytes: Int, headers: [(String, String)]? = nil) {
        if let headers { self.headers = headers }
        // {"a":"xxx…"} padded to exactly bodyBytes.
        body = Array(#"{"a":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: bodyBytes - 8) + Array(#""}"#.utf8)
    }

    /// Calls `body` with the request built over one arena.
    func with<R>(_ body: (borrowing GatewayRequest) -> R) -> R {
        var pairs: [(String, String)] = [(":method", method), (":scheme", "http"), (":path", path), (":authority", "localhost")]
        pairs += headers
        var arena: [UInt8] = []
        var ranges: [(Range<Int>, Range<Int>)] = []
        for (n, v) in pairs {
            let a = arena.count
            arena += Array(n.utf8)
            let b = arena.count
            arena += Array(v.utf8)
            ranges.append((a..<b, b..<arena.count))
        }
        let bodyStart = arena.count
        arena += self.body
        return arena.withUnsafeBytes { raw in
            var request = GatewayRequest()
            for (n, v) in ranges {
                request.setHeader(name: UnsafeRawBufferPointer(rebasing: raw[n]), value: UnsafeRawBufferPointer(rebasing: raw[v]))
            }
            request.body = UnsafeRawBufferPointer(rebasing: raw[bodyStart...])
            return body(request)
        }
    }
}

/// The state machine's answer to one request: what it decided and the push response it wrote.
struct GatewayAnswer: Equatable {
    var decision: GatewayDecision
    var written: GatewayResponse

    /// The response, whether immediate or delayed; nil for an answer that is not a push response.
    var response: GatewayResponse? {
        switch decision {
        case .respond, .respondLater: written
        case .stats, .metrics, .drop, .oauthToken, .pipelineArrivals: nil
        }
    }
}

extension GatewayStateMachine {
    /// Decides the answer to `request` as the gateway loop does, with a fresh response.
    func answer(_ request: borrowing GatewayRequest, connection: inout GatewayConnectionState, now: UInt64) -> GatewayAnswer {
        var response = GatewayResponse(status: 200, apnsID: .unset)
        let decision = decide(request, connection: &connection, now: now, response: &response)
        return GatewayAnswer(decision: decision, written: response)
    }
}

/// A state machine with its connection, for tests.
struct Harness {
    var machine: GatewayStateMachine
    var connection: GatewayConnectionState
    var now: UInt64 = 1_000_000_000

    /// The id seed of a configuration that has none: the harness's generated ids are the same in every
    /// test run, as with `--seed`.
    static let idSeed: UInt64 = 1

    init(_ config: GatewayConfiguration = GatewayConfiguration(), loop: Int = 0) {
        var config = config
        if config.idSeed == nil { config.idSeed = Harness.idSeed }
        // The gateway started at 1_700_000_000_000 ms, 1 s into the monotonic clock, when `now` begins.
        machine = GatewayStateMachine(configuration: config, loopIndex: loop, counters: GatewayCounters(),
                                      clock: GatewayClock(wallMillis: 1_700_000_000_000, monotonicNanos: 1_000_000_000))
        connection = machine.connectionOpened(now: now)
    }

    init(_ flags: [String]) throws {
        self.init(try GatewayConfiguration.parse(flags))
    }

    mutating func send(_ request: TestRequest) -> GatewayAnswer {
        request.with { machine.answer($0, connection: &connection, now: now) }
    }

    mutating func status(_ request: TestRequest) -> (UInt16, String?) {
        let r = send(request).response!
        return (r.status, r.reason?.rawValue)
    }

    var stats: GatewayStats { GatewayStats(summing: [machine.counters]) }

    /// Allocations made deciding `request` 1000 times, the fewest over four rounds after a warm-up
    /// round (CAllocCounter counts this thread's mallocs).
    mutating func allocationsPer1000(_ request: TestRequest) -> UInt64 {
        var best = UInt64.max
        request.with { req in
            for round in 0..<5 {
                pb_alloc_reset()
                for _ in 0..<1000 { _ = machine.answer(req, connection: &connection, now: now) }
                if round > 0 { best = min(best, pb_alloc_count()) }
            }
        }
        return best
    }
}

func token(_ i: Int) -> String {
    var s = String(i, radix: 16)
    s = String(repeating: "0", count: 64 - s.count) + s
    return s
}
