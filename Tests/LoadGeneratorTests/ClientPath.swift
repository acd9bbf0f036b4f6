import CAllocCounter
@testable import MockGateway
@testable import PushTransport
import Testing
@testable import LoadGenerator

/// One driver's client path (driver core, connection pool, APNs request builder) on a loop the test
/// runs, closed loop against a gateway: for the tests that count what a request allocates.
typealias ClientPath = BuilderClientPath<APNsRequestBuilder>

/// ``ClientPath`` with another request builder (a pipeline run's front door).
final class BuilderClientPath<Builder: RequestBuilder> {
    let loop: EventLoop
    let core: DriverCore
    private(set) var pool: ConnectionPool<Builder>!

    /// Connects `config.connections` connections and starts sending (64 requests in flight).
    init(_ config: LoadConfiguration) throws {
        loop = try EventLoop()
        let core = DriverCore(plan: DriverPlan(rate: nil, durationNs: 600_000_000_000, capacity: 64),
                              clock: MonotonicClock.shared, recorder: Recorder())
        self.core = core
        pool = try ConnectionPool(loop: loop, config: config, core: core, thread: 0) { core.pump() }
        core.attach(pool)
        pool.connectAll()
        let pool = self.pool!
        #expect(loop.run(until: { pool.connectedCount == config.connections }, timeoutNanoseconds: 10_000_000_000))
        core.begin(at: MonotonicClock.nanoseconds())
        core.pump()
    }

    /// Runs the loop until `n` more requests completed; false on timeout.
    func serve(_ n: Int) -> Bool {
        let target = core.recorder.measured.completed + n
        return loop.run(until: { self.core.recorder.measured.completed >= target }, timeoutNanoseconds: 30_000_000_000)
    }

    /// OpenSSL's allocations and the `SSL_write` calls in the window ``allocationsOutsideNghttp2`` chose
    /// (0 over h2c).
    private(set) var openSSLAllocations = 0, sslWrites = 0

    /// The fewest allocations on this thread outside nghttp2's own (its stream objects, counted by the
    /// loop's nghttp2_mem) and OpenSSL's (counted apart by the interposer) in `windows` windows of
    /// `requests` requests; `check` runs after each window.
    func allocationsOutsideNghttp2(windows: Int = 3, requests: Int = 2_000, check: () -> Void = {}) -> Int {
        var best = Int.max
        for _ in 0..<windows {
            let n0 = loop.nghttp2Memory.allocations
            let ssl0 = pb_openssl_alloc_count()
            let w0 = loop.tlsBuffers.sslWrites
            pb_alloc_reset()
            let ok = serve(requests)
            let total = Int(pb_alloc_count())
            let nghttp2 = Int(loop.nghttp2Memory.allocations - n0)
            let openSSL = Int(pb_openssl_alloc_count() - ssl0)
            #expect(ok)
            check()
            if total - nghttp2 - openSSL < best {
                best = total - nghttp2 - openSSL
                (openSSLAllocations, sslWrites) = (openSSL, loop.tlsBuffers.sslWrites - w0)
            }
        }
        return best
    }

    /// Closes the connections and the loop.
    func close() {
        pool.release()
        pool = nil
        loop.run(until: { false }, timeoutNanoseconds: 20_000_000)
        loop.close()
    }
}
