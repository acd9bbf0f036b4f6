import CUV
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A small HTTP/1.1 server on its own thread for live viewers: `GET /events` is a stream of server-sent
/// events (`text/event-stream`), every other `GET` is answered once by a handler and the connection
/// closed (`HEAD /events` gets the stream's head alone). The thread that owns the data publishes events
/// (``publish(_:keeping:)``); the endpoint's thread copies them out to every viewer, so a publisher
/// never waits on a viewer.
///
/// A viewer that connects is first sent what was kept (a bounded history, and the latest of each
/// `.latest` event), then each event as it is published. At most ``Limits/viewers`` streams at once:
/// one more is answered 503 with ``Limits/refusal``. A viewer that does not read is closed once more
/// than ``Limits/viewerBufferBytes`` wait for it beyond what it is still owed of that first replay, so
/// memory stays bounded (the replay itself is bounded by ``Limits/keptEvents``) whatever viewers do.
/// A one-shot answer that is not taken within ``Limits/answerSeconds`` is closed unfinished, and while
/// more than ``Limits/answerBufferBytes`` of answers wait for their clients, a new request is answered
/// 503: a client that asks and never reads cannot hold memory or a connection for long.
///
/// ```swift
/// let endpoint = try EventStreamEndpoint.start(host: "127.0.0.1", port: 8088, limits: .init()) { path, query in
///     path == "/" ? .init(status: 200, contentType: "text/html; charset=utf-8", body: page) : nil
/// }
/// endpoint.publish(.init(name: "second", data: line, id: 3), keeping: .history)
/// ```
public final class EventStreamEndpoint: Sendable {
    /// One server-sent event.
    public struct Event: Sendable, Equatable {
        /// The `event:` name.
        public var name: String
        /// The `data:` text (a newline in it becomes a second `data:` line).
        public var data: String
        /// The `id:`, when the event has one.
        public var id: Int?

        /// An event.
        public init(name: String, data: String, id: Int? = nil) {
            self.name = name
            self.data = data
            self.id = id
        }

        /// The event as it goes on the wire, ending with its empty line.
        var wire: String {
            var text = "event: \(name)\n"
            if let id { text += "id: \(id)\n" }
            for line in data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
            return text + "\n"
        }
    }

    /// What a viewer that connects later is sent of an event.
    public enum Keeping: Sendable, Equatable {
        /// Nothing: only viewers connected now get it.
        case none
        /// Only the latest event of this name.
        case latest
        /// Every one, up to ``Limits/keptEvents`` of each name (the oldest of that name go first).
        case history
    }

    /// The endpoint's bounds.
    public struct Limits: Sendable {
        /// Event streams open at once.
        public var viewers: Int
        /// Bytes that may wait for one viewer, beyond what it is still owed of its first replay, before it
        /// is closed.
        var viewerBufferBytes: Int
        /// `.history` events of each name kept for viewers that connect later.
        var keptEvents: Int
        /// Seconds a one-shot answer may take to be sent before its connection is closed.
        var answerSeconds: Double
        /// Bytes of one-shot answers that may wait for their clients, all together; past it a new request
        /// is answered 503.
        var answerBufferBytes: Int
        /// The one line of the 503 answered to the viewer past ``viewers``.
        public var refusal: String

        /// Limits.
        public init(viewers: Int = 8, viewerBufferBytes: Int = 8 << 20, keptEvents: Int = 3600,
                    refusal: String = "too many viewers") {
            self.init(viewers: viewers, viewerBufferBytes: viewerBufferBytes, keptEvents: keptEvents, answerSeconds: 10,
                      answerBufferBytes: 64 << 20, refusal: refusal)
        }

        init(viewers: Int = 8, viewerBufferBytes: Int = 8 << 20, keptEvents: Int = 3600, answerSeconds: Double,
             answerBufferBytes: Int, refusal: String = "too many viewers") {
            self.viewers = viewers
            self.viewerBufferBytes = viewerBufferBytes
            self.keptEvents = keptEvents
            self.answerSeconds = answerSeconds
            self.answerBufferBytes = answerBufferBytes
            self.refusal = refusal
        }
    }

    /// What the handler gets: the path, and the query's `name=value` pairs.
    public typealias Handler = @Sendable (_ path: String, _ query: [String: String]) -> ScrapeEndpoint.Response?

    /// The port listened on (the one picked when 0 was asked).
    public let port: Int
    private let socket: Int32
    private let limits: Limits
    private let store: EventStreamStore
    private let stopping = Atomic<Bool>(false)
    private let thread = Mutex<pthread_t?>(nil)
    private let viewerCount = Atomic<Int>(0)
    private let droppedCount = Atomic<Int>(0)
    private let refusedCount = Atomic<Int>(0)

    private init(socket: Int32, port: Int, limits: Limits) {
        self.socket = socket
        self.port = port
        self.limits = limits
        store = EventStreamStore(historyLimit: limits.keptEvents)
    }

    /// Event streams open now.
    public var viewers: Int { viewerCount.load(ordering: .relaxed) }
    /// Viewers closed because they did not take their events.
    public var dropped: Int { droppedCount.load(ordering: .relaxed) }
    /// Viewers refused past ``Limits/viewers``.
    public var refused: Int { refusedCount.load(ordering: .relaxed) }

    /// Listens on `host:port` (numeric IPv4 or IPv6; port 0 picks one) and serves on a thread of its own:
    /// `/events` the stream, other paths `handler`'s answers (nil is 404). GET and HEAD only (else 405).
    public static func start(host: String, port: Int, limits: Limits = Limits(),
                             handler: @escaping Handler) throws(ScrapeEndpoint.Failure) -> EventStreamEndpoint {
        let (fd, actual) = try ListeningSocket.open(host: host, port: port, backlog: 64)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let endpoint = EventStreamEndpoint(socket: fd, port: actual, limits: limits)
        let t = try ListeningSocket.startThread(serving: fd, host: host, port: port) { endpoint.serve(handler) }
        endpoint.thread.withLock { $0 = t }
        return endpoint
    }

    /// Sends `event` to every viewer (within the endpoint's next poll, a few tens of ms) and keeps it as
    /// `keeping` says. Any thread; it only takes a lock and appends.
    public func publish(_ event: Event, keeping: Keeping) {
        store.publish(.init(event: event, keeping: keeping))
    }

    /// The kept events named `name`, oldest first (for a handler answering from them).
    public func kept(named name: String) -> [Event] { store.kept(named: name) }

    /// How many `.history` events named `name` are kept.
    public func keptCount(named name: String) -> Int { store.keptCount(named: name) }

    /// Sends what is still queued to the viewers (for at most a second), closes every connection and the
    /// socket. Idempotent.
    public func stop() {
        guard let t = thread.withLock({ t -> pthread_t? in defer { t = nil }; return t }) else { return }
        stopping.store(true, ordering: .releasing)
        pthread_join(t, nil)
        close(socket)
    }

    private static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    private func serve(_ handler: Handler) {
        var clients: [EventStreamClient] = []
        var stopAt: UInt64?
        while true {
            if stopAt == nil && stopping.load(ordering: .acquiring) { stopAt = Self.now() + 1_000_000_000 }
            var fds = [pollfd(fd: socket, events: stopAt == nil ? Int16(POLLIN) : 0, revents: 0)]
            for c in clients {
                var events: Int16 = 0
                if case .answering = c.phase {} else { events = Int16(POLLIN) }
                if c.unsent > 0 { events |= Int16(POLLOUT) }
                fds.append(pollfd(fd: c.fd, events: events, revents: 0))
            }
            _ = poll(&fds, nfds_t(fds.count), 50)
            if stopAt == nil && fds[0].revents & Int16(POLLIN) != 0 { accept(into: &clients) }
            var closing = Set<Int32>()
            for (k, c) in clients.enumerated() where fds.count > k + 1 && fds[k + 1].revents != 0 {
                switch c.phase {
                case .reading:
                    // A client may send its request and close its side at once: it is still answered.
                    let open = c.receive(into: true)
                    if c.headEnded || c.head.count > 8192 {
                        let waiting = clients.reduce(0) { sum, o in o.isAnswering ? sum + o.unsent : sum }
                        answer(c, handler, answersWaiting: waiting)
                    } else if !open { closing.insert(c.fd) }
                case .answering: break
                case .viewing:
                    // A viewer sends nothing more; reading tells when it went away.
                    if fds[k + 1].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 && !c.receive(into: false) { closing.insert(c.fd) }
                }
            }
            deliver(to: clients)
            let t = Self.now()
            for c in clients where !closing.contains(c.fd) {
                if !c.flush() { closing.insert(c.fd); continue }
                switch c.phase {
                case .reading: if t > c.deadline { closing.insert(c.fd) }
                case .answering: if c.unsent == 0 || t > c.deadline { closing.insert(c.fd) }
                case .viewing:
                    if c.unsent > limits.viewerBufferBytes + c.replayOwed {
                        closing.insert(c.fd)
                        droppedCount.add(1, ordering: .relaxed)
                    }
                }
            }
            if let stopAt, t >= stopAt || clients.allSatisfy({ $0.unsent == 0 }) {
                for c in clients { close(c.fd) }
                viewerCount.store(0, ordering: .relaxed)
                return
            }
            if !closing.isEmpty {
                for c in clients where closing.contains(c.fd) {
                    if c.isViewer { viewerCount.subtract(1, ordering: .relaxed) }
                    close(c.fd)
                }
                clients.removeAll { closing.contains($0.fd) }
            }
        }
    }

    private func accept(into clients: inout [EventStreamClient]) {
        // Connections beyond this many are closed at once: the endpoint serves a few people, not a crowd.
        let most = limits.viewers + 64
        for _ in 0..<64 {
            // Close-on-exec from the start, so a process forked meanwhile never inherits it; non-blocking
            // because the thread polls every connection and sends what each socket takes.
            let fd = pb_accept_cloexec_nonblocking(socket)
            guard fd >= 0 else { return }
            guard clients.count < most else {
                close(fd)
                continue
            }
            clients.append(EventStreamClient(fd: fd, deadline: Self.now() + 2_000_000_000))
        }
    }

    /// The events published since the last poll to the viewers already streaming; everything kept to
    /// those that just connected.
    private func deliver(to clients: [EventStreamClient]) {
        let fresh = clients.filter { if case .viewing(replayed: false) = $0.phase { return true } else { return false } }
        let (pending, kept) = store.take(replay: !fresh.isEmpty)
        if !pending.isEmpty {
            var bytes: [UInt8] = []
            for p in pending { bytes += Array(p.event.wire.utf8) }
            for c in clients { if case .viewing(replayed: true) = c.phase { c.queue(bytes) } }
        }
        guard !fresh.isEmpty else { return }
        var bytes: [UInt8] = []
        for k in kept { bytes += Array(k.event.wire.utf8) }
        for c in fresh {
            c.queue(bytes)
            c.replayOwed = c.unsent
            c.phase = .viewing(replayed: true)
        }
    }

    /// Parses the request head of `c` and queues its answer (or starts its stream); `answersWaiting`:
    /// the bytes of other answers not yet taken.
    private func answer(_ c: EventStreamClient, _ handler: Handler, answersWaiting: Int) {
        c.phase = .answering
        c.deadline = Self.now() + UInt64(limits.answerSeconds * 1e9)
        guard c.headEnded else { return respond(c, .init(status: 431, contentType: "text/plain", body: "request head too large\n"), head: false) }
        let line = c.head.prefix { $0 != 0x0D && $0 != 0x0A }
        let parts = line.split(separator: 0x20)
        guard parts.count == 3, parts[2].starts(with: Array("HTTP/1.".utf8)) else {
            return respond(c, .init(status: 400, contentType: "text/plain", body: "not an HTTP/1.x request\n"), head: false)
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        let target = String(decoding: parts[1], as: UTF8.self)
        guard method == "GET" || method == "HEAD" else {
            return respond(c, .init(status: 405, contentType: "text/plain", body: "only GET\n"), head: false)
        }
        let (path, query) = Self.split(target)
        if path == "/events" && method == "HEAD" {
            c.queue(Array("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n".utf8))
            return
        }
        if path == "/events" {
            guard viewerCount.load(ordering: .relaxed) < limits.viewers else {
                refusedCount.add(1, ordering: .relaxed)
                return respond(c, .init(status: 503, contentType: "text/plain; charset=utf-8", body: limits.refusal + "\n"), head: false)
            }
            viewerCount.add(1, ordering: .relaxed)
            c.phase = .viewing(replayed: false)
            c.queue(Array(("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
                           + "x-accel-buffering: no\r\nconnection: keep-alive\r\n\r\n").utf8))
            return
        }
        guard answersWaiting <= limits.answerBufferBytes else {
            return respond(c, .init(status: 503, contentType: "text/plain", body: "busy: other answers are still being sent\n"), head: false)
        }
        let response = handler(path, query) ?? .init(status: 404, contentType: "text/plain", body: "not found: \(path)\n")
        respond(c, response, head: method == "HEAD")
    }

    private func respond(_ c: EventStreamClient, _ r: ScrapeEndpoint.Response, head: Bool) {
        let reason = [200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
                      431: "Request Header Fields Too Large", 503: "Service Unavailable"][r.status] ?? "Status"
        let body = Array(r.body.utf8)
        var out = Array(("HTTP/1.1 \(r.status) \(reason)\r\ncontent-type: \(r.contentType)\r\ncontent-length: \(body.count)\r\n"
                         + "cache-control: no-cache\r\nconnection: close\r\n\r\n").utf8)
        if !head { out += body }
        c.phase = .answering
        c.queue(out)
    }

    /// `/seconds?after=3` as (`/seconds`, `["after": "3"]`).
    static func split(_ target: String) -> (path: String, query: [String: String]) {
        guard let q = target.firstIndex(of: "?") else { return (target, [:]) }
        var query: [String: String] = [:]
        for pair in target[target.index(after: q)...].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            query[String(kv[0])] = kv.count > 1 ? String(kv[1]) : ""
        }
        return (String(target[..<q]), query)
    }
}
