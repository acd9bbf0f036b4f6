import PushPayload
import PushTransport

/// What every request of a pipeline run sends to the service's front door apart from its body: the
/// method, the path and the header fields of the request file (`--request`).
public struct FrontDoorRequest: Sendable {
    /// The method, e.g. `POST`.
    var method: String
    /// The path and query.
    public var path: String
    /// Header fields sent as written (HTTP/2 sends the names in lower case).
    var headers: [(name: String, value: String)]

    /// A front-door request.
    public init(method: String, path: String, headers: [(name: String, value: String)]) {
        self.method = method
        self.path = path
        self.headers = headers
    }

    /// The request of a `.http` file.
    public init(_ file: RequestFile) {
        self.init(method: file.method, path: file.path, headers: file.headers)
    }
}

/// A pipeline run's front door over HTTP/2: the request file's method, path and headers, all fixed in
/// the block (HPACK-indexed after the first request), and the body from the template.
struct FrontDoorRequestBuilder: RequestBuilder {
    let block: HTTP2HeaderBlock

    init(config: LoadConfiguration) throws(HTTP2HeaderBlock.InvalidBlock) {
        let door = config.frontDoor ?? FrontDoorRequest(method: "POST", path: "/", headers: [])
        block = try HTTP2HeaderBlock.request(method: door.method, scheme: config.tls == nil ? "http" : "https",
                                             authority: config.authority, path: door.path,
                                             headers: door.headers.map { ($0.name.lowercased(), $0.value) })
    }

    @inline(__always)
    func writeHeaders(_ request: inout HTTP2RequestWriter, tokenIndex: Int, context: RequestContext) {}
}

/// One front-door answer, as a driver thread reports it to a pipeline run: the request's global index,
/// the status and when the answer arrived.
struct FrontDoorAnswer: Sendable, Equatable {
    /// Global request index.
    var index: Int64
    /// HTTP status.
    var status: UInt16
    /// When the answer arrived (monotonic ns).
    var answeredAt: UInt64

    /// An answer; see the properties.
    init(index: Int64, status: UInt16, answeredAt: UInt64) {
        self.index = index
        self.status = status
        self.answeredAt = answeredAt
    }
}

/// A pipeline run's taps into the load generator: the correlation prefix written by `{{pipeline_id}}`
/// (kept at one address for the run, so request contexts borrow it) and one ring per driver thread on
/// which the thread reports every front-door answer (nothing allocated per request).
public final class PipelineTap: @unchecked Sendable {
    // @unchecked: `storage` is written in init only; the rings are single-producer, single-consumer.
    /// The prefix, e.g. `pb-7f3a-`.
    public let prefix: [UInt8]
    private let storage: UnsafeMutableRawBufferPointer
    /// One ring per driver thread.
    let answers: [SPSCRing<FrontDoorAnswer>]

    /// A tap for `threads` driver threads writing ids with `prefix`; each ring holds `capacity` answers
    /// between two drains.
    public init(prefix: [UInt8], threads: Int, capacity: Int = 1 << 16) {
        self.prefix = prefix
        storage = .allocate(byteCount: max(1, prefix.count), alignment: 1)
        storage.copyBytes(from: prefix)
        answers = (0..<max(1, threads)).map { _ in SPSCRing(capacity: capacity) }
    }

    deinit { storage.deallocate() }

    /// The prefix's bytes, valid while the tap lives.
    var prefixBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(storage)[0..<prefix.count]) }

    /// Answers refused because a ring was full.
    public var refused: Int { answers.reduce(0) { $0 + $1.refused } }

    /// Hands every answer reported so far to `body` (one consumer thread); returns how many.
    @discardableResult
    func drain(_ body: (FrontDoorAnswer) -> Void) -> Int {
        answers.reduce(0) { $0 + $1.drain(body) }
    }
}
