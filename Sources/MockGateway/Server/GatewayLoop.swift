import PushCredentials
import PushTransport
import PushVocabulary

/// Per-connection state: the state machine's part plus the timed-GOAWAY timer.
final class ConnectionEntry {
    var state: GatewayConnectionState
    var timer: LoopTimer?
    init(state: GatewayConnectionState) { self.state = state }
}

/// Where an answer goes: a stream of an HTTP/2 connection, or the request waiting on an HTTP/1.1 one.
enum ResponseTarget {
    case http2(HTTP2ServerConnection, streamID: Int32)
    case http1(HTTP1ServerConnection, sequence: UInt64)
}

/// A response held back until its latency has passed.
struct DelayedResponse {
    var target: ResponseTarget
    var response: GatewayResponse
}

/// One event loop of the gateway: the adapter between `HTTP2Server` and ``GatewayStateMachine``. It
/// turns each request into a ``GatewayRequest``, does what the machine's action says, and holds
/// delayed responses in a ``DeadlineHeap`` behind one timer. Loop-confined: created, used and
/// released on its own thread.
final class GatewayLoop: HTTP2ServerDelegate {
    let loop: EventLoop
    var server: HTTP2Server! {
        // New connections start with the state machine's stream limit (1 with provider tokens, as APNs).
        didSet { server?.updateSettings(maxConcurrentStreams: Int(machine.initialMaxConcurrentStreams)) }
    }
    let machine: GatewayStateMachine
    let allCounters: [GatewayCounters]
    private var connections: [UInt64: ConnectionEntry] = [:]
    /// Responses waiting for their latency (preallocated; grows only past the largest backlog seen).
    private var delayed = DeadlineHeap<DelayedResponse>(capacity: 16 * 1024)
    /// Fires at the earliest delayed deadline: a timerfd, or a millisecond libuv timer without one.
    private var delayTimer: PreciseTimer?
    private var fallbackTimer: LoopTimer?
    /// `{"reason":"…"}` for every reason, built once: error bodies and GOAWAY debug data are borrowed.
    private let reasonBodies: UnsafeMutableRawBufferPointer
    private var reasonRanges: [Range<Int>] = []
    /// Scratch for FCM bodies (rendered at send time, copied by `respond`).
    private let fcmBody = UnsafeMutableRawBufferPointer.allocate(byteCount: FCMResponse.maxBodySize, alignment: 1)
    private var shutdownTimer: LoopTimer?
    /// True once a graceful shutdown has closed every connection.
    private(set) var finished = false
    /// Where refused connections are reported (nil: nowhere).
    var log: (@Sendable (String) -> Void)?
    /// Refusals reported so far; past ``maxRefusalsLogged`` they are only counted.
    private var refusalsLogged = 0
    static let maxRefusalsLogged = 20

    /// The pipeline run's correlator and this loop's ring in it (nil: no matching).
    private let correlator: PushCorrelator?
    let loopIndex: Int

    init(loop: EventLoop, machine: GatewayStateMachine, allCounters: [GatewayCounters], loopIndex: Int = 0) {
        self.loop = loop
        self.loopIndex = loopIndex
        correlator = machine.configuration.correlator
        self.machine = machine
        self.allCounters = allCounters
        var bytes: [UInt8] = []
        for reason in APNsReason.allCases {
            let start = bytes.count
            bytes += Array("{\"reason\":\"\(reason.rawValue)\"}".utf8)
            reasonRanges.append(start..<bytes.count)
        }
        reasonBodies = .allocate(byteCount: bytes.count, alignment: 1)
        reasonBodies.copyBytes(from: bytes)
        connections.reserveCapacity(1024)
        do {
            delayTimer = try PreciseTimer(loop: loop) { [unowned self] _ in self.delayTimerFired() }
        } catch {
            // Without a timerfd the delays fall back to millisecond libuv timers (see `arm`).
        }
    }

    deinit {
        reasonBodies.deallocate()
        fcmBody.deallocate()
    }

    /// The transport settings of a gateway loop serving `configuration`: its limits (bodies up to
    /// `--max-body` are read and answered, 413 over 4096/5120 bytes; a larger one is reset by the
    /// transport, which buffers a body whole before the gateway sees it), with the whole gateway's body
    /// memory shared out between its loops, and the connection cap they share.
    static func serverConfiguration(_ configuration: GatewayConfiguration, reusePort: Bool,
                                    connectionCap: ConnectionCap?) -> HTTP2ServerConfiguration {
        var c = HTTP2ServerConfiguration()
        c.maxConcurrentStreams = Int(configuration.maxConcurrentStreams)
        c.limits = configuration.limits
        // APNs answers `authorization: bearer ` (no token after the scheme) MissingProviderToken.
        c.trailingWhitespaceTrimmed = ["authorization"]
        c.limits.maxBodyMemory = max(configuration.limits.maxRequestBodySize, configuration.limits.maxBodyMemory / configuration.threads)
        c.connectionCap = connectionCap
        c.reusePort = reusePort
        // A connection choosing its protocol (TLS handshake, first bytes) has not sent its preface yet.
        let handshake = configuration.limits.handshakeTimeoutNanos
        c.protocolSelectionTimeoutMilliseconds = handshake == 0 ? 0 : max(1, handshake / 1_000_000)
        // One port for both: HTTP/1.1 senders (firebase-admin's send(), the OAuth2 token fetch) beside h2c.
        c.servesHTTP1 = true
        return c
    }

    @inline(__always) func reasonBody(_ r: APNsReason) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: reasonBodies[reasonRanges[Int(r.code)]])
    }

    /// Stops taking connections and streams, lets the streams in flight finish (delayed ones included),
    /// sends GOAWAY, and stops the loop once every connection is closed (or after 10 s at most).
    func shutdown() {
        let done: () -> Void = { [unowned self] in
            self.finished = true
            self.loop.stop()
        }
        server.shutdownGracefully(done)
        if finished { return }
        shutdownTimer = LoopTimer(loop: loop) { [unowned self] in
            self.server.close()
            done()
        }
        shutdownTimer?.start(afterMilliseconds: 10_000)
    }

    /// Releases the timers, connections and held responses, and the server (before the loop closes).
    func tearDown() {
        delayTimer = nil
        fallbackTimer = nil
        shutdownTimer = nil
        for entry in connections.values { entry.timer = nil }
        connections.removeAll()
        delayed.removeAll()
        server = nil
    }

    // MARK: HTTP2ServerDelegate

    func server(_ server: HTTP2Server, didRefuseConnectionFrom peer: String, reason: String) {
        guard let log, refusalsLogged <= Self.maxRefusalsLogged else { return }
        refusalsLogged += 1
        log(refusalsLogged <= Self.maxRefusalsLogged
            ? "refused a connection from \(peer): \(reason)"
            : "refused a connection from \(peer): \(reason) (further refusals on this loop are not logged)")
    }

    func server(_ server: HTTP2Server, connectionDidOpen connection: HTTP2ServerConnection) {
        let entry: ConnectionEntry
        if machine.configuration.auth.mode == .cert {
            // The certificate is judged once, here; its verdict answers every push on the connection.
            let peer = connection.tls?.peerCertificate
            let certificate = peer.flatMap { try? X509Certificate(pem: Array($0.pem.utf8)) }
            let problem = peer.flatMap { $0.verified ? nil : ($0.verificationError ?? "it did not verify") }
            entry = ConnectionEntry(state: machine.connectionOpened(now: loop.now, certificate: certificate, verificationError: problem))
        } else {
            entry = ConnectionEntry(state: machine.connectionOpened(now: loop.now))
        }
        connections[connection.id] = entry
        connection.context = entry
        if let deadline = entry.state.goawayDeadline {
            let id = connection.id
            let timer = LoopTimer(loop: loop) { [unowned self, unowned connection] in
                guard let entry = self.connections[id] else { return }
                let now = self.loop.now
                // libuv's clock is whole milliseconds cached per loop turn, so the timer may fire a
                // little before the nanosecond deadline: wait the rest rather than miss the GOAWAY.
                if let deadline = entry.state.goawayDeadline, now < deadline {
                    entry.timer?.start(afterMilliseconds: (deadline - now) / 1_000_000 + 1)
                    return
                }
                guard let reason = self.machine.goawayDue(connection: &entry.state, now: now) else { return }
                connection.goAway(errorCode: 0, debugData: self.reasonBody(reason))
            }
            timer.setKeepsLoopAlive(false)
            let now = loop.now
            timer.start(afterMilliseconds: deadline > now ? (deadline - now + 999_999) / 1_000_000 : 0)
            entry.timer = timer
        }
    }

    func server(_ server: HTTP2Server, connection: HTTP2ServerConnection?, didEnforce limit: ServerLimit) {
        machine.counters.limitEnforced(limit)
        GatewayLog.once(limit, configuration: machine.configuration)
    }

    func server(_ server: HTTP2Server, connectionDidClose connection: HTTP2ServerConnection, error: TransportError) {
        connection.context = nil
        if let entry = connections.removeValue(forKey: connection.id) {
            entry.timer = nil
            machine.connectionClosed()
        }
    }

    func server(_ server: HTTP2Server, didReceive request: HTTP2ServerRequest) {
        var parsed = GatewayRequest()
        parsed.method = request.method
        parsed.path = request.path
        let headers = request.headers
        for i in 0..<headers.count {
            let field = headers[i]
            parsed.setHeader(name: field.name, value: field.value)
        }
        parsed.body = request.body
        guard let context = request.connection.contextRef else { return }
        if let correlator {
            correlatedRequest(request, parsed, correlator)
            return
        }
        context._withUnsafeGuaranteedRef { context in
            let entry = unsafeDowncast(context, to: ConnectionEntry.self)
            var response = GatewayResponse(status: 200, apnsID: .unset)
            let decision = machine.decide(parsed, connection: &entry.state, now: request.receivedAt, response: &response)
            if case .respond = decision {
                // The common answer goes straight out, on the connection borrowed for the call: a local
                // or a ResponseTarget would hold (retain) it.
                Unmanaged.passUnretained(request.connection)._withUnsafeGuaranteedRef {
                    send(response, on: $0, stream: request.streamID)
                }
                return
            }
            act(decision, response, .http2(request.connection, streamID: request.streamID), receivedAt: request.receivedAt)
        }
    }

    /// A request on a pipeline run's egress: decided as any other, then matched to its pipeline request
    /// before the answer goes out. Apart from the plain path so that one stays as small as it is.
    @inline(never)
    private func correlatedRequest(_ request: HTTP2ServerRequest, _ parsed: GatewayRequest, _ correlator: PushCorrelator) {
        guard let context = request.connection.contextRef else { return }
        context._withUnsafeGuaranteedRef { context in
            let entry = unsafeDowncast(context, to: ConnectionEntry.self)
            var response = GatewayResponse(status: 200, apnsID: .unset)
            let decision = machine.decide(parsed, connection: &entry.state, now: request.receivedAt, response: &response)
            correlate(correlator, decision, response, parsed, receivedAt: request.receivedAt, request.headers)
            act(decision, response, .http2(request.connection, streamID: request.streamID), receivedAt: request.receivedAt)
        }
    }

    /// Does what the state machine decided for a request from `target`; `response` is the push response
    /// it wrote (unused by the other decisions).
    @inline(__always)
    private func act(_ decision: GatewayDecision, _ response: borrowing GatewayResponse, _ target: ResponseTarget,
                     receivedAt: UInt64) {
        switch decision {
        case .respond:
            switch target {
            case .http2(let connection, let stream): send(response, on: connection, stream: stream)
            case .http1(let connection, let sequence): send(response, on: connection, sequence: sequence)
            }
        case .respondLater(let delay):
            let item = DelayedResponse(target: target, response: copy response)
            if delayed.insert(item, deadline: receivedAt &+ delay) { arm(receivedAt &+ delay) }
        case .stats:
            var json = GatewayStats(summing: allCounters).json
            json.withUTF8 { respond(target, status: 200, UnsafeRawBufferPointer($0), contentType: "application/json", noStore: false) }
        case .oauthToken(let status, var body):
            body.withUTF8 {
                respond(target, status: Int(status), UnsafeRawBufferPointer($0), contentType: "application/json; charset=utf-8",
                        noStore: true)
            }
        case .pipelineArrivals:
            var text = machine.configuration.mailbox?.takeText() ?? ""
            text.withUTF8 { respond(target, status: 200, UnsafeRawBufferPointer($0), contentType: "text/plain; charset=utf-8", noStore: true) }
        case .metrics:
            var text = GatewayStats(summing: allCounters).prometheusText
            text.withUTF8 {
                respond(target, status: 200, UnsafeRawBufferPointer($0), contentType: "text/plain; version=0.0.4; charset=utf-8",
                        noStore: false)
            }
        case .drop:
            switch target {
            case .http2(let connection, _): connection.close()
            case .http1(let connection, _): connection.close()
            }
        }
    }

    /// An answer that is not a push response (`/stats`, `/metrics`, the token endpoint).
    private func respond(_ target: ResponseTarget, status: Int, _ body: UnsafeRawBufferPointer, contentType: StaticString,
                         noStore: Bool) {
        switch target {
        case .http2(let connection, let stream):
            _ = connection.respond(to: stream, status: status, body: body) { h in
                h.add("content-type", contentType)
                if noStore { h.add("cache-control", "no-cache, no-store, max-age=0, must-revalidate") }
            }
        case .http1(let connection, let sequence):
            _ = connection.respond(to: sequence, status: status, body: body) { h in
                h.add("content-type", contentType)
                if noStore { h.add("cache-control", "no-cache, no-store, max-age=0, must-revalidate") }
            }
        }
    }

    // MARK: HTTP/1.1

    func server(_ server: HTTP2Server, http1ConnectionDidOpen connection: HTTP1ServerConnection) {
        let entry = ConnectionEntry(state: machine.connectionOpened(now: loop.now))
        connections[connection.id] = entry
        connection.context = entry
    }

    func server(_ server: HTTP2Server, http1ConnectionDidClose connection: HTTP1ServerConnection, error: TransportError) {
        connection.context = nil
        if connections.removeValue(forKey: connection.id) != nil { machine.connectionClosed() }
    }

    func server(_ server: HTTP2Server, didReceive request: HTTP1ServerRequest) {
        let connection = request.connection
        guard let context = connection.context else { return }
        let entry = unsafeDowncast(context, to: ConnectionEntry.self)
        machine.counters.countHTTP1Request()
        if machine.route(method: request.method, path: request.path) == .apns {
            refuseAPNsOverHTTP1(request)
            return
        }
        var parsed = GatewayRequest()
        parsed.method = request.method
        parsed.path = request.path
        let headers = request.headers
        var i = 0
        while i < headers.count {
            let field = headers[i]
            parsed.setHeader(name: field.name, value: field.value)
            i += 1
        }
        parsed.body = request.body
        var response = GatewayResponse(status: 200, apnsID: .unset)
        let decision = machine.decide(parsed, connection: &entry.state, now: request.receivedAt, response: &response)
        if let correlator {
            let route = machine.route(method: parsed.method, path: parsed.path)
            if route == .fcm || route == .apns {
                let status = Self.answeredStatus(decision, response)
                correlator.record(loop: loopIndex, route: route, status: status, arrivedAt: request.receivedAt, path: parsed.path,
                                  body: parsed.body,
                                  headerCount: headers.count) { (headers[$0].name, headers[$0].value) }
            }
        }
        act(decision, response, .http1(connection, sequence: request.sequence), receivedAt: request.receivedAt)
    }

    /// A push's answer for the correlator: its status, or 0 when the connection is dropped instead.
    @inline(__always)
    static func answeredStatus(_ decision: GatewayDecision, _ response: borrowing GatewayResponse) -> Int {
        switch decision {
        case .respond, .respondLater: return Int(response.status)
        default: return 0
        }
    }

    /// Matches an HTTP/2 push to its request (a pipeline run): only the push routes count.
    @inline(__always)
    private func correlate(_ correlator: PushCorrelator, _ decision: GatewayDecision, _ response: borrowing GatewayResponse,
                           _ parsed: GatewayRequest, receivedAt: UInt64, _ headers: HTTP2HeaderList) {
        let route = machine.route(method: parsed.method, path: parsed.path)
        guard route == .fcm || route == .apns else { return }
        correlator.record(loop: loopIndex, route: route, status: Self.answeredStatus(decision, response), arrivedAt: receivedAt,
                          path: parsed.path, body: parsed.body, headerCount: headers.count) { (headers[$0].name, headers[$0].value) }
    }

    /// APNs is HTTP/2 only, and answers an HTTP/1.1 request as an HTTP/2 server answers a client that
    /// skipped the preface: its SETTINGS, then GOAWAY(PROTOCOL_ERROR) naming the request line, then it
    /// closes (docs/gateway.md "HTTP/1.1").
    private func refuseAPNsOverHTTP1(_ request: HTTP1ServerRequest) {
        machine.counters.countHTTP1Refused()
        var text = "Unexpected HTTP/1.x request: " + request.method.pbString + " " + request.path.pbString + " "
        let settings: [(id: UInt16, value: UInt32)] = [(0x3, UInt32(clamping: machine.configuration.maxConcurrentStreams)),
                                                       (0x4, UInt32(clamping: server.configuration.initialWindowSize))]
        text.withUTF8 { debug in
            _ = request.connection.refuseAsHTTP2Only(request.sequence, settings: settings, debugData: UnsafeRawBufferPointer(debug))
        }
    }

    /// Sends `response` on an HTTP/1.1 connection. A GOAWAY behaviour becomes `Connection: close` on
    /// this answer (HTTP/1.1's way to say no more requests here); SETTINGS changes have no equivalent.
    private func send(_ response: GatewayResponse, on connection: HTTP1ServerConnection, sequence: UInt64) {
        if response.goaway != nil { connection.shutdownGracefully() }
        let id = response.apnsID
        if let fcm = response.fcm {
            let n = fcm.render(into: fcmBody)
            _ = connection.respond(to: sequence, status: Int(response.status),
                                   body: UnsafeRawBufferPointer(rebasing: fcmBody[0..<n])) { h in
                h.add("content-type", "application/json; charset=UTF-8")
            }
        } else if let reason = response.reason {
            var body = reasonBody(reason)
            if let ts = response.timestampMillis {
                body = UnsafeRawBufferPointer(rebasing: fcmBody[0..<Self.writeReasonWithTimestamp(body, ts, into: fcmBody)])
            }
            _ = connection.respond(to: sequence, status: Int(response.status), body: body) { h in
                id.withBytes { h.add("apns-id", $0) }
                h.add("content-type", "application/json")
            }
        } else {
            _ = connection.respond(to: sequence, status: Int(response.status)) { h in
                id.withBytes { h.add("apns-id", $0) }
            }
        }
    }

    /// Sends `response` and then its connection effects (SETTINGS, GOAWAY).
    @inline(__always)
    private func send(_ response: GatewayResponse, on connection: HTTP2ServerConnection, stream: Int32) {
        let id = response.apnsID
        if let fcm = response.fcm {
            let n = fcm.render(into: fcmBody)
            _ = connection.respond(to: stream, status: Int(response.status),
                                   body: UnsafeRawBufferPointer(rebasing: fcmBody[0..<n])) { h in
                h.add("content-type", "application/json; charset=UTF-8")
            }
        } else if let reason = response.reason {
            if let ts = response.timestampMillis {
                var buffer: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                             UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                withUnsafeMutableBytes(of: &buffer) { out in
                    let n = Self.writeReasonWithTimestamp(reasonBody(reason), ts, into: out)
                    _ = connection.respond(to: stream, status: Int(response.status),
                                           body: UnsafeRawBufferPointer(rebasing: out[0..<n])) { h in
                        id.withBytes { h.addUnique("apns-id", $0) }
                        h.add("content-type", "application/json")
                    }
                }
            } else {
                _ = connection.respond(to: stream, status: Int(response.status), borrowingBody: reasonBody(reason)) { h in
                    id.withBytes { h.addUnique("apns-id", $0) }
                    h.add("content-type", "application/json")
                }
            }
        } else {
            _ = connection.respond(to: stream, status: Int(response.status)) { h in
                id.withBytes { h.addUnique("apns-id", $0) }
            }
        }
        if let n = response.maxConcurrentStreams { connection.updateSettings(maxConcurrentStreams: Int(n)) }
        if let reason = response.goaway { connection.goAway(errorCode: 0, debugData: reasonBody(reason)) }
    }

    /// `{"reason":"X"}` + timestamp → `{"reason":"X","timestamp":1700000000000}` in `out`; returns its length.
    static func writeReasonWithTimestamp(_ reasonJSON: UnsafeRawBufferPointer, _ ts: Int64,
                                         into out: UnsafeMutableRawBufferPointer) -> Int {
        var n = 0
        for b in reasonJSON.dropLast() { out[n] = b; n += 1 }
        for b in ",\"timestamp\":".utf8 { out[n] = b; n += 1 }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        let count = withUnsafeMutableBytes(of: &digits) { d -> Int in
            var v = UInt64(max(ts, 0))
            var k = 0
            repeat { d[k] = UInt8(48 + v % 10); v /= 10; k += 1 } while v > 0
            return k
        }
        withUnsafeBytes(of: digits) { d in
            for k in stride(from: count - 1, through: 0, by: -1) { out[n] = d[k]; n += 1 }
        }
        out[n] = UInt8(ascii: "}")
        return n + 1
    }

    // MARK: delayed responses

    /// Points the delay timer at `deadline`, the earliest one held.
    private func arm(_ deadline: UInt64) {
        if let delayTimer {
            delayTimer.start(firstDeadline: deadline, intervalNanoseconds: 0)
        } else {
            if fallbackTimer == nil { fallbackTimer = LoopTimer(loop: loop) { [unowned self] in self.delayTimerFired() } }
            let now = loop.now
            fallbackTimer!.start(afterMilliseconds: deadline > now ? (deadline - now + 999_999) / 1_000_000 : 0)
        }
    }

    private func delayTimerFired() {
        let now = loop.now
        while let due = delayed.popDue(now: now) {
            machine.counters.countDelayedSent()
            act(.respond, due.response, due.target, receivedAt: now)
        }
        if let next = delayed.nextDeadline { arm(next) }
    }
}

@available(*, unavailable) extension GatewayLoop: Sendable {}
