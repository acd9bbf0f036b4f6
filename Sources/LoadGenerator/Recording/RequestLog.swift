import Foundation
import PushPayload
import PushTransport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One request's record in the `--log` file, as the driver thread hands it over: plain numbers, no
/// reference, so queuing it copies a few words and allocates nothing.
struct RequestLogRecord: Sendable, Equatable {
    /// Global sequence number.
    var sequence: Int64
    /// Intended, actual send and answer (or failure) times, monotonic ns.
    var intended: UInt64, sent: UInt64, answered: UInt64
    /// The token's index in the run's token list.
    var tokenIndex: Int32
    /// The connection (numbered per driver thread from 1 in the order opened; 0 when unknown) and the
    /// HTTP/2 stream id (0 over HTTP/1.1 or when unknown).
    var connection: Int32, stream: Int32
    /// Body bytes sent and received.
    var requestBytes: Int32, responseBytes: Int32
    /// HTTP status, 0 for a transport error.
    var status: UInt16
    /// The reason's index in ``Reasons/names`` for a response, or the ``TransportErrorCause`` raw value
    /// for a transport error.
    var reason: UInt16
    /// The driver thread.
    var thread: UInt8
    /// Resends before this attempt.
    var attempt: UInt8
    /// ``Phase`` raw value.
    var phase: UInt8
    /// The FCM message id the answer named (empty for APNs, whose apns-id the writer makes from `sequence`).
    var pushID: LoggedPushID

    /// A record; see the properties.
    init(sequence: Int64, intended: UInt64, sent: UInt64, answered: UInt64, tokenIndex: Int32 = 0, connection: Int32 = 0,
                stream: Int32 = 0, requestBytes: Int32 = 0, responseBytes: Int32 = 0, status: UInt16, reason: UInt16 = 0,
                thread: UInt8 = 0, attempt: UInt8 = 0, phase: UInt8 = 1, pushID: LoggedPushID = LoggedPushID()) {
        self.sequence = sequence
        self.intended = intended
        self.sent = sent
        self.answered = answered
        self.tokenIndex = tokenIndex
        self.connection = connection
        self.stream = stream
        self.requestBytes = requestBytes
        self.responseBytes = responseBytes
        self.status = status
        self.reason = reason
        self.thread = thread
        self.attempt = attempt
        self.phase = phase
        self.pushID = pushID
    }
}

/// What the transport knows of an answered request that the driver core does not: where it went and
/// its sizes. Handed to ``DriverCore/responded(slot:status:reason:at:detail:)`` when a log is kept.
struct ResponseDetail: Sendable {
    /// See ``RequestLogRecord``.
    var connection: Int32 = 0, stream: Int32 = 0, tokenIndex: Int32 = 0, requestBytes: Int32 = 0, responseBytes: Int32 = 0
    /// See ``RequestLogRecord/pushID``.
    var pushID = LoggedPushID()

    /// A detail; see the properties.
    init(connection: Int32 = 0, stream: Int32 = 0, tokenIndex: Int32 = 0, requestBytes: Int32 = 0, responseBytes: Int32 = 0,
                pushID: LoggedPushID = LoggedPushID()) {
        self.connection = connection
        self.stream = stream
        self.tokenIndex = tokenIndex
        self.requestBytes = requestBytes
        self.responseBytes = responseBytes
        self.pushID = pushID
    }
}

/// Which requests go to the log: a deterministic sample by sequence number (`--log-sample`) and a floor
/// on the corrected latency (`--log-slower-than`).
public struct RequestLogFilter: Sendable, Equatable {
    /// Sequence numbers whose hash is below this are kept (UInt64.max: all).
    var sampleBelow: UInt64
    /// Requests answered faster than this (ns from the intended time) are left out.
    var slowerThanNs: UInt64

    /// A filter keeping `fraction` of the requests (0...1) that took `slowerThanNs` or more.
    public init(fraction: Double = 1, slowerThanNs: UInt64 = 0) {
        sampleBelow = fraction >= 1 ? .max : UInt64(max(0, fraction) * 18_446_744_073_709_551_615.0)
        self.slowerThanNs = slowerThanNs
    }

    /// Whether request `sequence` with corrected latency `latencyNs` is logged.
    @inline(__always)
    func keeps(sequence: Int64, latencyNs: UInt64) -> Bool {
        if latencyNs < slowerThanNs { return false }
        if sampleBelow == .max { return true }
        // splitmix64: a sample spread evenly over the sequence, the same for every run and agent.
        var z = UInt64(bitPattern: sequence) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return (z ^ (z >> 31)) < sampleBelow
    }
}

/// The `--log FILE` writer: one ``SPSCRing`` per driver thread, which the thread fills with a
/// ``RequestLogRecord`` per logged request, for a pipeline run one more that its main thread fills with
/// an ``ArrivalLogRecord`` per push, and a writer thread that drains them to the file as CSV
/// (docs/results.md has the columns). A full ring drops the record and counts it; a write that fails
/// (the disk full, a file size limit) stops the log, says why, and the run goes on.
public final class RequestLog: @unchecked Sendable {
    // @unchecked: the rings are single-producer single-consumer; `state` is behind a mutex; `fd` and
    // `buffer` belong to the writer thread until `finish()` has joined it.
    /// The file as given.
    public let path: String
    /// One ring per driver thread.
    let rings: [SPSCRing<RequestLogRecord>]
    /// Which requests are logged.
    public let filter: RequestLogFilter
    /// A pipeline run's pushes (nil outside a pipeline run).
    public let arrivals: SPSCRing<ArrivalLogRecord>?
    private let pipelinePrefix: [UInt8]
    private let seed: UInt64
    private let apnsIDs: Bool
    private var fd: Int32
    private var buffer: [UInt8] = []
    private let t0 = Atomic<UInt64>(0)
    private let stopping = Atomic<Bool>(false)
    private let done = Atomic<Bool>(false)
    private let state = Mutex<(written: Int, arrivals: Int, failure: String?)>((0, 0, nil))
    private var thread: Thread?
    // The writer's own view of the state (its thread only); `state` publishes it.
    private var stopped = false

    private static let warmup = Array("warmup".utf8), measured = Array("measured".utf8)
    private static let request = Array("request,".utf8), arrival = Array("arrival,".utf8)
    private static let routes = [Array("apns".utf8), Array("fcm".utf8)]
    private static let verdicts = PipelineLedger.Verdict.allCases.map { Array($0.name.utf8) }

    /// The CSV header line.
    public static let header = "kind,seq,phase,thread,connection,stream,token,intended_us,sent_us,answered_us,latency_us,service_us,late_us,status,reason,attempt,request_bytes,response_bytes,push_id,pipeline_id,route,arrival\n"

    /// Opens (creates or truncates) `path` and writes the header; throws a one-line reason when it
    /// cannot. `seed` and `apnsIDs` give each APNs request's apns-id (made from its sequence number) for
    /// `push_id`; without `apnsIDs` the column holds the record's ``RequestLogRecord/pushID``. With
    /// `pipelinePrefix` (a pipeline run's id prefix) the log takes ``arrivals`` too, and each line has
    /// its request's pipeline id.
    public init(path: String, threads: Int, filter: RequestLogFilter, seed: UInt64, apnsIDs: Bool, pipelinePrefix: [UInt8]? = nil,
                capacity: Int = 1 << 16) throws(LoadRunError) {
        self.path = path
        self.filter = filter
        self.pipelinePrefix = pipelinePrefix ?? []
        arrivals = pipelinePrefix == nil ? nil : SPSCRing(capacity: capacity)
        self.seed = seed
        self.apnsIDs = apnsIDs
        rings = (0..<max(1, threads)).map { _ in SPSCRing(capacity: capacity) }
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw LoadRunError(description: "--log: \(path): \(String(cString: strerror(errno)))", unreachable: false, badInput: true)
        }
        // A file size limit (ulimit -f) must fail the write, not kill the run.
        signal(SIGXFSZ, SIG_IGN)
        buffer.reserveCapacity(1 << 17)
        buffer += Array(Self.header.utf8)
        flush()
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Records written so far.
    public var written: Int { state.withLock { $0.written } }
    /// Why the log stopped early, or nil.
    public var failure: String? { state.withLock { $0.failure } }
    /// Of ``written``, the pushes.
    public var arrivalsWritten: Int { state.withLock { $0.arrivals } }
    /// Records dropped because a ring was full (the writer fell behind).
    public var dropped: Int { rings.reduce(0) { $0 + $1.refused } + (arrivals?.refused ?? 0) }

    /// Starts the writer thread; times in the file are counted from `t0` (monotonic ns, the run's start).
    public func start(t0: UInt64) {
        self.t0.store(t0, ordering: .releasing)
        let thread = Thread { [self] in
            nameCurrentThread("pb-log")
            // Formatting runs in the CPU time the driver and the gateway leave; a ring that fills
            // meanwhile drops records and counts them.
            moveCurrentThreadToIdlePriority()
            while !stopping.load(ordering: .acquiring) {
                if drainAll() == 0 { usleep(5_000) }
            }
            drainAll()
            flush()
            done.store(true, ordering: .releasing)
        }
        thread.stackSize = 1 << 20
        self.thread = thread
        thread.start()
    }

    /// Stops the writer after it has written everything queued, and closes the file.
    public func finish() {
        if thread != nil {
            stopping.store(true, ordering: .releasing)
            while !done.load(ordering: .acquiring) { usleep(1_000) }
            thread = nil
        } else {
            drainAll()
            flush()
        }
        if fd >= 0 { close(fd) }
        fd = -1
    }

    @discardableResult
    private func drainAll() -> Int {
        var n = 0
        for ring in rings { n += ring.drain { append($0) } }
        let pushes = arrivals?.drain { append($0) } ?? 0
        n += pushes
        if n > 0 && !stopped {
            state.withLock {
                $0.written += n
                $0.arrivals += pushes
            }
        }
        if buffer.count >= 1 << 16 { flush() }
        return n
    }

    private func flush() {
        defer { buffer.removeAll(keepingCapacity: true) }
        guard fd >= 0, !buffer.isEmpty, !stopped else { return }
        var off = 0
        let failure: String? = buffer.withUnsafeBytes { raw in
            while off < raw.count {
                let n = write(fd, raw.baseAddress! + off, raw.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    return String(cString: strerror(errno))
                }
                off += n
            }
            return nil
        }
        if let failure {
            // What was formatted but not written is not counted.
            stopped = true
            let lines = buffer[off...].reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            state.withLock {
                $0.failure = failure
                $0.written = max(0, $0.written - lines)
            }
        }
    }

    private func appendInt(_ v: Int64) {
        if v < 0 { buffer.append(UInt8(ascii: "-")) }
        var m = v.magnitude
        let start = buffer.count
        repeat {
            buffer.append(UInt8(ascii: "0") + UInt8(m % 10))
            m /= 10
        } while m > 0
        buffer[start...].reverse()
    }

    private func comma() { buffer.append(UInt8(ascii: ",")) }

    private func commas(_ n: Int) { for _ in 0..<n { buffer.append(UInt8(ascii: ",")) } }

    private func append(_ r: RequestLogRecord) {
        if stopped { return }
        let base = t0.load(ordering: .acquiring)
        func us(_ t: UInt64) -> Int64 { Int64(bitPattern: t &- base) / 1000 }
        buffer += Self.request
        appendInt(r.sequence); comma()
        buffer += r.phase == 0 ? Self.warmup : Self.measured; comma()
        appendInt(Int64(r.thread)); comma()
        appendInt(Int64(r.connection)); comma()
        appendInt(Int64(r.stream)); comma()
        appendInt(Int64(r.tokenIndex)); comma()
        appendInt(us(r.intended)); comma()
        appendInt(us(r.sent)); comma()
        appendInt(us(r.answered)); comma()
        appendInt(Int64((r.answered > r.intended ? r.answered - r.intended : 0) / 1000)); comma()
        appendInt(Int64((r.answered > r.sent ? r.answered - r.sent : 0) / 1000)); comma()
        appendInt(Int64((r.sent > r.intended ? r.sent - r.intended : 0) / 1000)); comma()
        appendInt(Int64(r.status)); comma()
        if r.status == 0 {
            buffer += Array((TransportErrorCause(rawValue: Int(r.reason))?.name ?? "transport_error").utf8)
        } else if r.reason > 0 && Int(r.reason) < Reasons.count {
            buffer += Array(Reasons.names[Int(r.reason)].utf8)
        }
        comma()
        appendInt(Int64(r.attempt)); comma()
        appendInt(Int64(r.requestBytes)); comma()
        appendInt(Int64(r.responseBytes)); comma()
        if apnsIDs {
            let uuid = PushRandom.uuid(seed: seed, index: UInt64(bitPattern: r.sequence))
            let at = buffer.count
            buffer += repeatElement(0, count: 36)
            buffer.withUnsafeMutableBytes { uuid.write(to: $0.baseAddress! + at) }
        } else if !r.pushID.isEmpty {
            r.pushID.withBytes { buffer += $0 }
        }
        comma()
        appendPipelineID(r.sequence)
        commas(2)
        buffer.append(UInt8(ascii: "\n"))
    }

    private func appendPipelineID(_ index: Int64) {
        guard !pipelinePrefix.isEmpty, index >= 0 else { return }
        let at = buffer.count
        buffer += repeatElement(0, count: PipelineID.maxLength)
        let n = pipelinePrefix.withUnsafeBytes { p in
            buffer.withUnsafeMutableBytes { PipelineID.write(prefix: p, index: UInt64(index), to: $0.baseAddress! + at) }
        }
        buffer.removeLast(PipelineID.maxLength - n)
    }

    /// A push: `seq` is the request it belongs to (empty when it names none), `answered_us` its arrival,
    /// `latency_us` end to end (arrival − the request's intended time), `status` the egress's answer.
    private func append(_ a: ArrivalLogRecord) {
        if stopped { return }
        let base = t0.load(ordering: .acquiring)
        func us(_ t: UInt64) -> Int64 { Int64(bitPattern: t &- base) / 1000 }
        let matched = a.index >= 0
        buffer += Self.arrival
        if matched { appendInt(a.index) }
        comma()
        if matched { buffer += a.phase == 0 ? Self.warmup : Self.measured }
        commas(4)   // and thread, connection, stream
        if a.tokenIndex >= 0 { appendInt(Int64(a.tokenIndex)) }
        comma()
        if matched { appendInt(us(a.intended)) }
        commas(2)   // and sent_us
        appendInt(us(a.arrived)); comma()
        if matched { appendInt(Int64((a.arrived > a.intended ? a.arrived - a.intended : 0) / 1000)) }
        commas(3)   // and service_us, late_us
        appendInt(Int64(a.status))
        commas(6)   // and reason, attempt, request_bytes, response_bytes, push_id
        if matched { appendPipelineID(a.index) }
        comma()
        buffer += Self.routes[Int(a.route & 1)]; comma()
        if Int(a.verdict) < Self.verdicts.count { buffer += Self.verdicts[Int(a.verdict)] }
        buffer.append(UInt8(ascii: "\n"))
    }
}
