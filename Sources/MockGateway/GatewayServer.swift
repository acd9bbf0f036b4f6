#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import PushTransport
import PushVocabulary
import Synchronization

/// The gateway's event loops: one thread per loop, each with an `HTTP2Server` on the same port
/// (SO_REUSEPORT when there are several) and its own ``GatewayStateMachine``.
final class GatewayServer: Sendable {
    let host: String
    let port: Int
    private let counters: [GatewayCounters]
    private let loops: [EventLoopHandle]
    private let threads: Mutex<[pthread_t]>
    private let finalStats = Mutex<GatewayStats?>(nil)

    private init(host: String, port: Int, counters: [GatewayCounters], loops: [EventLoopHandle], threads: [pthread_t]) {
        self.host = host
        self.port = port
        self.counters = counters
        self.loops = loops
        self.threads = Mutex(threads)
    }

    /// What a loop thread reports once it listens (or failed to).
    final class Startup: Sendable {
        let semaphore = DispatchSemaphore(value: 0)
        let result = Mutex<(port: Int, handle: EventLoopHandle?, error: String?)>((0, nil, nil))
    }

    static func start(_ configuration: GatewayConfiguration,
                      onSignal: (@Sendable () -> Void)? = nil) throws(GatewayStartError) -> GatewayServer {
        // A peer that closes while we write must not kill the process (libuv writes with write(2)).
        signal(SIGPIPE, SIG_IGN)
        let counters = (0..<configuration.threads).map { _ in GatewayCounters() }
        let wallClock = GatewayStateMachine.wallClockMillis()
        var port = configuration.port
        var handles: [EventLoopHandle] = []
        var threads: [pthread_t] = []
        for index in 0..<configuration.threads {
            let startup = Startup()
            let listenPort = port
            let counter = counters[index]
            let thread = spawnThread {
                GatewayLoop.runThread(configuration: configuration, index: index, port: listenPort, counters: counters,
                                      own: counter, wallClock: wallClock, startup: startup,
                                      onSignal: index == 0 ? onSignal : nil)
            }
            startup.semaphore.wait()
            let result = startup.result.withLock { $0 }
            guard let thread else {
                stopAll(handles, threads)
                throw GatewayStartError("cannot create an event-loop thread")
            }
            threads.append(thread)
            if let error = result.error {
                pthread_join(thread, nil)
                stopAll(handles, threads.dropLast())
                throw GatewayStartError("listen \(configuration.host):\(listenPort): \(error)")
            }
            handles.append(result.handle!)
            port = result.port
        }
        return GatewayServer(host: configuration.host, port: port, counters: counters, loops: handles, threads: threads)
    }

    private static func stopAll(_ handles: [EventLoopHandle], _ threads: some Collection<pthread_t>) {
        for h in handles { h.stop() }
        for t in threads { pthread_join(t, nil) }
    }

    func stats() -> GatewayStats { GatewayStats(summing: counters) }

    /// Graceful stop of every loop (each finishes its streams, sends GOAWAY and closes), then joins.
    func stop() -> GatewayStats {
        let joined: [pthread_t] = threads.withLock { t in
            let all = t
            t = []
            return all
        }
        if !joined.isEmpty {
            for h in loops { h.stop() }
            for t in joined { pthread_join(t, nil) }
            let s = stats()
            finalStats.withLock { $0 = s }
        }
        return finalStats.withLock { $0 } ?? stats()
    }

    static func runUntilSignalled(_ configuration: GatewayConfiguration,
                                  onListening: (String) -> Void) throws(GatewayStartError) -> GatewayStats {
        let signalled = DispatchSemaphore(value: 0)
        // A parent may have started us with these blocked (the mask survives exec); the loop threads
        // inherit this thread's mask, and libuv's handler must see the signals.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGINT)
        sigaddset(&unblock, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
        let server = try start(configuration, onSignal: { signalled.signal() })
        let shownHost = server.host.contains(":") ? "[\(server.host)]" : server.host
        onListening("\(shownHost):\(server.port)")
        signalled.wait()
        return server.stop()
    }
}

/// Runs `body` on a new joinable thread.
private func spawnThread(_ body: @escaping @Sendable () -> Void) -> pthread_t? {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let r = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        box.body()
        return nil
    }, box)
    if r != 0 {
        Unmanaged<Box>.fromOpaque(box).release()
        return nil
    }
    return thread
}

/// Per-connection state: the state machine's part plus the timed-GOAWAY timer.
final class ConnectionEntry {
    var state: GatewayConnectionState
    var timer: LoopTimer?
    init(state: GatewayConnectionState) { self.state = state }
}

/// A response waiting for its latency to pass.
struct Delayed {
    var deadline: UInt64
    var sequence: UInt64
    var connection: HTTP2ServerConnection
    var streamID: Int32
    var response: GatewayResponse

    @inline(__always) func before(_ o: Delayed) -> Bool {
        deadline < o.deadline || (deadline == o.deadline && sequence < o.sequence)
    }
}

/// One event loop of the gateway: the adapter between `HTTP2Server` and ``GatewayStateMachine``.
/// Loop-confined: created, used and released on its own thread.
final class GatewayLoop: HTTP2ServerDelegate {
    /// Bodies up to this size are read and answered (413 over 4096/5120 bytes); only a larger one is
    /// reset by the transport (CANCEL), since it must be buffered whole before the gateway sees it.
    static let maxRequestBody = 8 << 20
    let loop: EventLoop
    var server: HTTP2Server!
    var machine: GatewayStateMachine
    let allCounters: [GatewayCounters]
    private var connections: [UInt64: ConnectionEntry] = [:]
    /// Min-heap of delayed responses (preallocated; grows only past the largest backlog seen).
    private var heap: [Delayed] = []
    private var sequence: UInt64 = 0
    var delayTimer: PreciseTimer?
    private var armedDeadline: UInt64 = 0
    /// `{"reason":"…"}` for every reason, built once: error bodies and GOAWAY debug data are borrowed.
    private let reasonBodies: UnsafeMutableRawBufferPointer
    private var reasonRanges: [Range<Int>] = []
    private var shutdownTimer: LoopTimer?
    private var finished = false

    init(loop: EventLoop, machine: GatewayStateMachine, allCounters: [GatewayCounters]) {
        self.loop = loop
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
        heap.reserveCapacity(16 * 1024)
        connections.reserveCapacity(1024)
    }

    /// Scratch for FCM bodies (rendered at send time, copied by `respond`).
    private let fcmBody = UnsafeMutableRawBufferPointer.allocate(byteCount: FCMResponse.maxBodySize, alignment: 1)

    deinit {
        reasonBodies.deallocate()
        fcmBody.deallocate()
    }

    @inline(__always) func reasonBody(_ r: APNsReason) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: reasonBodies[reasonRanges[Int(r.code)]])
    }

    /// The body of loop thread `index`: listen, report to `startup`, run until stopped, shut down gracefully.
    static func runThread(configuration: GatewayConfiguration, index: Int, port: Int, counters: [GatewayCounters],
                          own: GatewayCounters, wallClock: Int64, startup: GatewayServer.Startup,
                          onSignal: (@Sendable () -> Void)?) {
        nameCurrentThread("pb-gateway-\(index)")
        let loop: EventLoop
        do { loop = try EventLoop() } catch {
            startup.result.withLock { $0.error = "\(error)" }
            startup.semaphore.signal()
            return
        }
        let machine = GatewayStateMachine(configuration: configuration, loopIndex: index, counters: own,
                                          wallClockMillis: wallClock)
        let gateway = GatewayLoop(loop: loop, machine: machine, allCounters: counters)
        var serverConfig = HTTP2ServerConfiguration()
        serverConfig.maxConcurrentStreams = Int(configuration.maxConcurrentStreams)
        serverConfig.maxRequestBodySize = GatewayLoop.maxRequestBody
        serverConfig.reusePort = configuration.threads > 1
        let server = HTTP2Server(loop: loop, configuration: serverConfig, delegate: gateway)
        gateway.server = server
        do {
            let bound = try server.listen(host: configuration.host, port: port)
            startup.result.withLock { $0.port = bound; $0.handle = loop.handle }
        } catch {
            startup.result.withLock { $0.error = "\(error)" }
            startup.semaphore.signal()
            gateway.server = nil
            loop.close()
            return
        }
        do {
            gateway.delayTimer = try PreciseTimer(loop: loop) { [unowned gateway] _ in gateway.delayTimerFired() }
        } catch {
            // Without a timerfd the delays fall back to millisecond libuv timers (see `schedule`).
        }
        var signals: SignalWatcher?
        if let onSignal {
            signals = SignalWatcher(loop: loop, signals: [SIGINT, SIGTERM]) { _ in onSignal() }
        }
        startup.semaphore.signal()

        loop.run()
        signals = nil
        gateway.shutdown()
        if !gateway.finished { loop.run() }
        gateway.delayTimer = nil
        gateway.shutdownTimer = nil
        gateway.fallbackTimer = nil
        for entry in gateway.connections.values { entry.timer = nil }
        gateway.connections.removeAll()
        gateway.heap.removeAll()
        gateway.server = nil
        _ = signals
        loop.close()
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

    // MARK: HTTP2ServerDelegate

    func server(_ server: HTTP2Server, connectionDidOpen connection: HTTP2ServerConnection) {
        let entry = ConnectionEntry(state: machine.connectionOpened(now: loop.now))
        connections[connection.id] = entry
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

    func server(_ server: HTTP2Server, connectionDidClose connection: HTTP2ServerConnection, error: TransportError) {
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
        let connection = request.connection
        guard let entry = connections[connection.id] else { return }
        switch machine.handle(parsed, connection: &entry.state, now: request.receivedAt) {
        case .respond(let response):
            send(response, on: connection, stream: request.streamID)
        case .respondLater(let delay, let response):
            schedule(Delayed(deadline: request.receivedAt &+ delay, sequence: 0, connection: connection,
                             streamID: request.streamID, response: response))
        case .stats:
            var json = GatewayStats(summing: allCounters).json
            json.withUTF8 { body in
                _ = connection.respond(to: request.streamID, status: 200, body: UnsafeRawBufferPointer(body)) { h in
                    h.add("content-type", "application/json")
                }
            }
        case .drop:
            connection.close()
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
                        id.withBytes { h.addNeverIndexed("apns-id", $0) }
                        h.add("content-type", "application/json")
                    }
                }
            } else {
                _ = connection.respond(to: stream, status: Int(response.status), borrowingBody: reasonBody(reason)) { h in
                    id.withBytes { h.addNeverIndexed("apns-id", $0) }
                    h.add("content-type", "application/json")
                }
            }
        } else {
            _ = connection.respond(to: stream, status: Int(response.status)) { h in
                id.withBytes { h.addNeverIndexed("apns-id", $0) }
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

    private var fallbackTimer: LoopTimer?

    private func schedule(_ item: Delayed) {
        var item = item
        sequence &+= 1
        item.sequence = sequence
        heap.append(item)
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[i].before(heap[parent]) else { break }
            heap.swapAt(i, parent)
            i = parent
        }
        if i == 0 { arm(heap[0].deadline) }
    }

    private func arm(_ deadline: UInt64) {
        armedDeadline = deadline
        if let delayTimer {
            delayTimer.start(firstDeadline: deadline, intervalNanoseconds: 0)
        } else {
            if fallbackTimer == nil { fallbackTimer = LoopTimer(loop: loop) { [unowned self] in self.delayTimerFired() } }
            let now = loop.now
            fallbackTimer!.start(afterMilliseconds: deadline > now ? (deadline - now + 999_999) / 1_000_000 : 0)
        }
    }

    func delayTimerFired() {
        let now = loop.now
        while let top = heap.first, top.deadline <= now {
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                siftDown()
            }
            send(top.response, on: top.connection, stream: top.streamID)
        }
        if let top = heap.first { arm(top.deadline) } else { armedDeadline = 0 }
    }

    private func siftDown() {
        var i = 0
        let n = heap.count
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < n && heap[l].before(heap[m]) { m = l }
            if r < n && heap[r].before(heap[m]) { m = r }
            if m == i { return }
            heap.swapAt(i, m)
            i = m
        }
    }
}

@available(*, unavailable) extension GatewayLoop: Sendable {}

/// The gateway on an event loop the caller owns and runs (single-thread tools, benchmarks, tests).
/// Loop-confined like everything on an `EventLoop`; `EmbeddedGateway` is the usual way to run one.
///
/// ```swift
/// let loop = try EventLoop()
/// let gateway = try GatewayLoopHandler(loop: loop, configuration: GatewayConfiguration())
/// let port = try gateway.listen(host: "127.0.0.1", port: 0)
/// loop.run()
/// ```
public final class GatewayLoopHandler {
    private let gateway: GatewayLoop
    private let server: HTTP2Server
    /// This loop's counters.
    public let counters: GatewayCounters

    /// A gateway on `loop` with `configuration`'s behaviours (its host, port and thread count are not used).
    public init(loop: EventLoop, configuration: GatewayConfiguration, counters: GatewayCounters = GatewayCounters()) throws {
        self.counters = counters
        gateway = GatewayLoop(loop: loop, machine: GatewayStateMachine(configuration: configuration, counters: counters),
                              allCounters: [counters])
        var serverConfig = HTTP2ServerConfiguration()
        serverConfig.maxConcurrentStreams = Int(configuration.maxConcurrentStreams)
        serverConfig.maxRequestBodySize = GatewayLoop.maxRequestBody
        server = HTTP2Server(loop: loop, configuration: serverConfig, delegate: gateway)
        gateway.server = server
        gateway.delayTimer = try PreciseTimer(loop: loop) { [unowned gateway] _ in gateway.delayTimerFired() }
    }

    /// Listens on `host:port` (0 picks a free port); returns the port.
    public func listen(host: String, port: Int) throws -> Int { try server.listen(host: host, port: port) }

    /// Connections open now.
    public var connectionsOpen: Int { server.connectionsOpen }

    /// This loop's numbers.
    public func stats() -> GatewayStats { GatewayStats(summing: [counters]) }

    /// Graceful shutdown: GOAWAY, the streams in flight finish; `done` runs when every connection closed.
    public func shutdownGracefully(_ done: (() -> Void)? = nil) { server.shutdownGracefully(done) }

    /// Closes the listener and every connection now.
    public func close() {
        server.close()
        gateway.delayTimer = nil
    }
}

@available(*, unavailable) extension GatewayLoopHandler: Sendable {}
