#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PushPayload
import PushTransport
import Synchronization

/// A pipeline run's egress in another process (`--egress-url`): a `pushbench gateway --correlate-prefix`
/// that keeps the pushes it matched for `POST /pipeline/arrivals`. A thread fetches them every 100 ms,
/// turns their wall-clock arrival times into this process's monotonic clock (both processes on one
/// host, or hosts whose clocks agree), and keeps them until the run's main thread takes them.
public final class RemoteEgress: @unchecked Sendable {
    // @unchecked: `waiting` and `failures` are guarded by `lock`; the thread is joined by `stop()`.
    /// The ids' prefix the gateway matches, which the run's requests must carry.
    public let prefix: [UInt8]
    /// The gateway's URL, as given.
    let url: String
    private let endpoint: TokenEndpoint
    private let tls: TLSClientContext?
    private let lock = Mutex<Void>(())
    private var waiting: [PushArrival] = []
    private var failures = 0
    private var lastError: String?
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private var thread: Thread?

    /// Asks the gateway at `url` for its prefix (and drops what it kept before this run); throws when it
    /// cannot be reached or does not match pushes.
    public init(url: String, tls: TLSClientContext?) throws(LoadRunError) {
        self.url = url
        let base = url.hasSuffix("/") ? String(url.dropLast()) : url
        endpoint = try TokenEndpoint(url: base + "/pipeline/arrivals")
        self.tls = endpoint.secure ? tls : nil
        let text: String
        do throws(LoadRunError) { text = try Self.fetch(endpoint, self.tls) } catch {
            // Connected, but no HTTP/1.1 answer: an APNs-only server (HTTP/2 alone), not a matching gateway.
            guard error.description.contains("ended before an answer") else { throw error }
            throw LoadRunError(description: "--egress-url \(url): no answer to POST /pipeline/arrivals (\(error.description)); the egress must be a pushbench gateway started with --correlate-prefix pb-XXXX-",
                               unreachable: false, badInput: true)
        }
        guard let answer = PipelineArrivalsText.parse(text) else {
            throw LoadRunError(description: "--egress-url \(url): the gateway does not match pushes (start it with --correlate-prefix pb-XXXX-)",
                               unreachable: false, badInput: true)
        }
        prefix = Array(answer.prefix.utf8)
        guard prefix.count == PipelineID.prefixLength else {
            throw LoadRunError(description: "--egress-url \(url): '\(answer.prefix)' is not a correlation prefix", unreachable: false, badInput: true)
        }
    }

    private static func fetch(_ endpoint: TokenEndpoint, _ tls: TLSClientContext?) throws(LoadRunError) -> String {
        let exchange: ServiceAccountTokens.Exchange
        do {
            exchange = try ServiceAccountTokens.Exchange.run(endpoint: endpoint, tls: tls, body: [], timeoutMilliseconds: 3_000)
        } catch let e as LoadRunError {
            throw LoadRunError(description: "--egress-url \(endpoint.url): \(e.description)", unreachable: true)
        } catch {
            throw LoadRunError(description: "--egress-url \(endpoint.url): \(error)", unreachable: true)
        }
        guard exchange.status == 200 else {
            throw LoadRunError(description: "--egress-url \(endpoint.url): HTTP \(exchange.status) (start the gateway with --correlate-prefix pb-XXXX-)",
                               unreachable: false, badInput: true)
        }
        return String(decoding: exchange.body, as: UTF8.self)
    }

    /// Starts fetching every 100 ms.
    public func start() {
        let t = Thread { [self] in
            while !stopping.load(ordering: .relaxed) {
                fetchOnce()
                usleep(100_000)
            }
            fetchOnce()
            done.signal()
        }
        thread = t
        t.start()
    }

    private func fetchOnce() {
        do {
            let text = try Self.fetch(endpoint, tls)
            guard let answer = PipelineArrivalsText.parse(text) else {
                lock.withLock { _ in failures += 1; lastError = "an answer that is not a list of pushes" }
                return
            }
            let got = answer.lines.map {
                PushArrival(index: $0.index, arrivedAt: WallClock.monotonic(atUnixNanoseconds: $0.unixNs), route: $0.route, status: $0.status,
                        token: $0.token)
            }
            lock.withLock { _ in waiting += got }
        } catch {
            lock.withLock { _ in failures += 1; lastError = error.description }
        }
    }

    /// Hands every push fetched so far to `body` and forgets it (the run's main thread).
    public func drain(_ body: (PushArrival) -> Void) {
        let taken: [PushArrival] = lock.withLock { _ in
            defer { waiting.removeAll(keepingCapacity: true) }
            return waiting
        }
        for a in taken { body(a) }
    }

    /// Fetches that failed so far, and the last one's reason.
    public var fetchFailures: (count: Int, last: String?) { lock.withLock { _ in (failures, lastError) } }

    /// Fetches once more and stops.
    public func stop() {
        guard thread != nil, !stopping.exchange(true, ordering: .relaxed) else { return }
        done.wait()
    }
}
