#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import PushTransport
import Synchronization

/// The gateway's threads: one per event loop, each a ``GatewayLoop`` with its own `HTTP2Server` on the
/// same port (SO_REUSEPORT when there are several) and its own ``GatewayStateMachine``.
final class GatewayServer: Sendable {
    let host: String
    let port: Int
    /// The connection cap every loop shares (`--max-connections`, or derived from the descriptor limit).
    let connectionCap: ConnectionCap
    private let counters: [GatewayCounters]
    private let loops: [EventLoopHandle]
    /// The loop threads' kernel ids (for their CPU wait).
    let threadIDs: [Int32]
    private let threads: Mutex<[pthread_t]>
    private let finalStats = Mutex<GatewayStats?>(nil)
    /// TLS in force (nil: h2c).
    let tls: GatewayTLSSetup?
    /// The matched pushes a pipeline run fetches (`--correlate-prefix`), nil otherwise.
    let mailbox: CorrelationMailbox?

    private init(host: String, port: Int, tls: GatewayTLSSetup?, mailbox: CorrelationMailbox?, connectionCap: ConnectionCap,
                 counters: [GatewayCounters],
                 loops: [EventLoopHandle], threadIDs: [Int32], threads: [pthread_t]) {
        self.host = host
        self.port = port
        self.tls = tls
        self.mailbox = mailbox
        self.connectionCap = connectionCap
        self.counters = counters
        self.loops = loops
        self.threadIDs = threadIDs
        self.threads = Mutex(threads)
    }

    /// What a loop thread reports once it listens (or failed to).
    final class Startup: Sendable {
        let semaphore = DispatchSemaphore(value: 0)
        let result = Mutex<(port: Int, handle: EventLoopHandle?, error: String?, tid: Int32)>((0, nil, nil, 0))
        /// Why the thread could not take the scheduling asked for (nothing listens then).
        let refused = Mutex<String?>(nil)
    }

    /// Starts every loop; `log` receives the lines worth a log (connections refused before a session,
    /// with their reason), from the loop threads.
    static func start(_ configuration: GatewayConfiguration, onSignal: (@Sendable () -> Void)? = nil,
                      log: (@Sendable (String) -> Void)? = nil) throws(GatewayStartError) -> GatewayServer {
        let configuration = withMailbox(configuration)
        let tls = try configuration.makeTLS()
        let counters = (0..<configuration.threads).map { _ in GatewayCounters() }
        let cap = ConnectionCap(limit: configuration.maxConnections
                                ?? GatewayConfiguration.defaultMaxConnections(descriptorLimit: DescriptorLimit.current.soft))
        // One clock reading for every loop: 410 timestamps agree whichever loop answers.
        let clock = GatewayClock.now()
        var port = configuration.port
        var handles: [EventLoopHandle] = []
        var threads: [pthread_t] = []
        var threadIDs: [Int32] = []
        for index in 0..<configuration.threads {
            let startup = Startup()
            let listenPort = port
            let counter = counters[index]
            let thread = spawnThread {
                runLoop(configuration: configuration, index: index, port: listenPort, counters: counters,
                        own: counter, clock: clock, cap: cap, startup: startup, onSignal: index == 0 ? onSignal : nil,
                        tls: tls?.context, log: log)
            }
            startup.semaphore.wait()
            let result = startup.result.withLock { $0 }
            guard let thread else {
                stopAll(handles, threads)
                throw GatewayStartError("cannot create an event-loop thread")
            }
            threads.append(thread)
            if let refused = startup.refused.withLock({ $0 }) {
                pthread_join(thread, nil)
                stopAll(handles, threads.dropLast())
                throw GatewayStartError("gateway loop thread \(index): \(refused)")
            }
            if let error = result.error {
                pthread_join(thread, nil)
                stopAll(handles, threads.dropLast())
                throw GatewayStartError("listen \(configuration.host):\(listenPort): \(error)", cannotListen: true)
            }
            handles.append(result.handle!)
            threadIDs.append(result.tid)
            port = result.port
        }
        return GatewayServer(host: configuration.host, port: port, tls: tls, mailbox: configuration.mailbox, connectionCap: cap, counters: counters, loops: handles,
                             threadIDs: threadIDs, threads: threads)
    }

    /// `configuration` with a mailbox for `--correlate-prefix` when it has none yet (the gateway command
    /// makes its own, to print its counts at exit).
    private static func withMailbox(_ configuration: GatewayConfiguration) -> GatewayConfiguration {
        guard let prefix = configuration.correlatePrefix, configuration.correlator == nil else { return configuration }
        var c = configuration
        let mailbox = CorrelationMailbox(prefix: Array(prefix.utf8), loops: c.threads)
        c.mailbox = mailbox
        c.correlator = mailbox.correlator
        return c
    }

    private static func stopAll(_ handles: [EventLoopHandle], _ threads: some Collection<pthread_t>) {
        for h in handles { h.stop() }
        for t in threads { pthread_join(t, nil) }
    }

    func stats() -> GatewayStats { GatewayStats(summing: counters) }

    /// The signals that stop `pushbench gateway` gracefully: Ctrl-C, what Kubernetes and CI send, and a
    /// closed terminal.
    static let stopSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

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
            mailbox?.stop()
        }
        return finalStats.withLock { $0 } ?? stats()
    }

    static func runUntilSignalled(_ configuration: GatewayConfiguration, log: (@Sendable (String) -> Void)? = nil,
                                  tick: ((GatewayStats) -> Void)? = nil,
                                  onListening: (String, Int) -> Void) throws(GatewayStartError) -> GatewayStats {
        let signalled = DispatchSemaphore(value: 0)
        // A parent may have started us with these blocked (the mask survives exec); the loop threads
        // inherit this thread's mask, and libuv's handler must see the signals.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        for s in stopSignals { sigaddset(&unblock, s) }
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
        let server = try start(configuration, onSignal: { signalled.signal() }, log: log)
        let shownHost = server.host.contains(":") ? "[\(server.host)]" : server.host
        onListening("\(shownHost):\(server.port)", server.connectionCap.limit)
        if let tick {
            while signalled.wait(timeout: .now() + 1) == .timedOut { tick(server.stats()) }
        } else {
            signalled.wait()
        }
        return server.stop()
    }
}

/// The body of loop thread `index`: listen, report to `startup`, run until stopped, shut down gracefully.
private func runLoop(configuration: GatewayConfiguration, index: Int, port: Int, counters: [GatewayCounters],
                     own: GatewayCounters, clock: GatewayClock, cap: ConnectionCap, startup: GatewayServer.Startup,
                     onSignal: (@Sendable () -> Void)?, tls: TLSServerContext?, log: (@Sendable (String) -> Void)?) {
    nameCurrentThread("pb-gateway-\(index)")
    startup.result.withLock { $0.tid = currentThreadID() }
    if configuration.realtime, let refusal = moveCurrentThreadToRealtimePriority() {
        startup.refused.withLock { $0 = "cannot run real-time (SCHED_FIFO): \(refusal)" }
        startup.semaphore.signal()
        return
    }
    let loop: EventLoop
    do { loop = try EventLoop() } catch {
        startup.result.withLock { $0.error = "\(error)" }
        startup.semaphore.signal()
        return
    }
    let machine = GatewayStateMachine(configuration: configuration, loopIndex: index, counters: own, clock: clock)
    let gateway = GatewayLoop(loop: loop, machine: machine, allCounters: counters, loopIndex: index)
    gateway.log = log
    var serverConfiguration = GatewayLoop.serverConfiguration(configuration, reusePort: configuration.threads > 1, connectionCap: cap)
    serverConfiguration.tls = tls
    let server = HTTP2Server(loop: loop, configuration: serverConfiguration, delegate: gateway)
    gateway.server = server
    do {
        let bound = try server.listen(host: configuration.host, port: port)
        startup.result.withLock { $0.port = bound; $0.handle = loop.handle }
    } catch {
        // An address no interface of this host holds: said as such (the bind's own words follow).
        let text = error.code == -EADDRNOTAVAIL
            ? "no interface of this host has the address \(configuration.host) (\(error))" : "\(error)"
        startup.result.withLock { $0.error = text }
        startup.semaphore.signal()
        gateway.tearDown()
        loop.close()
        return
    }
    // Watched while the loop serves; during the graceful shutdown below a second signal gets its default
    // action again (it ends the process).
    let signals = onSignal.map { onSignal in SignalWatcher(loop: loop, signals: GatewayServer.stopSignals) { _ in onSignal() } }
    startup.semaphore.signal()

    withExtendedLifetime(signals) { loop.run() }
    gateway.shutdown()
    if !gateway.finished { loop.run() }
    gateway.tearDown()
    loop.close()
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
