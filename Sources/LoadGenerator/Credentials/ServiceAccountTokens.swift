import Foundation
import PushCredentials
import PushTransport
import PushVocabulary
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where a service account's `token_uri` points, resolved once before any traffic.
public struct TokenEndpoint: Sendable, Equatable {
    /// Numeric address to connect to.
    public var host: String
    /// Port.
    public var port: Int
    /// `Host` header value (`host[:port]` as written in the URL).
    var authority: String
    /// The path (with any query) to POST to.
    public var path: String
    /// Whether the URL is https.
    var secure: Bool
    /// The host as named in the URL (the TLS server name).
    public var serverName: String
    /// The URL as written.
    var url: String

    /// Parses and resolves `url`; errors name it.
    public init(url: String) throws(LoadRunError) {
        guard let u = URLComponents(string: url), let scheme = u.scheme, scheme == "http" || scheme == "https",
              let host = u.host, !host.isEmpty else {
            throw LoadRunError(description: "token_uri '\(url)' is not an http:// or https:// URL", unreachable: false)
        }
        secure = scheme == "https"
        serverName = host
        port = u.port ?? (secure ? 443 : 80)
        authority = u.port.map { "\(u.percentEncodedHost ?? host):\($0)" } ?? (u.percentEncodedHost ?? host)
        path = (u.percentEncodedPath.isEmpty ? "/" : u.percentEncodedPath) + (u.percentEncodedQuery.map { "?" + $0 } ?? "")
        self.url = url
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        guard rc == 0, let first = list else {
            throw LoadRunError(description: "token_uri \(url): cannot resolve '\(host)': \(String(cString: gai_strerror(rc)))",
                               unreachable: true)
        }
        defer { freeaddrinfo(list) }
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(first.pointee.ai_addr, first.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 else {
            throw LoadRunError(description: "token_uri \(url): cannot resolve '\(host)'", unreachable: true)
        }
        self.host = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}

/// An access token and how long it lives.
public struct AccessToken: Sendable, Equatable {
    /// The token (sent as `Bearer <token>`; never written to results or logs).
    public var token: String
    /// `expires_in`, seconds.
    var expiresIn: Int
}

/// Fetches access tokens for a service account the way google-auth does: an RS256 assertion (aud
/// `https://oauth2.googleapis.com/token`, scope firebase.messaging, an hour long) POSTed as the jwt-bearer
/// grant to `token_uri`, over pushbench's own HTTP/1.1 client. Blocking; run it off the driver threads.
public struct ServiceAccountTokens: Sendable {
    /// The account.
    let account: ServiceAccount
    /// Its token endpoint.
    let endpoint: TokenEndpoint

    /// How an https endpoint's certificate is checked (the system's CAs by default; `SSL_CERT_FILE`
    /// works as with any OpenSSL client).
    let trust: TLSTrust

    /// Tokens for `account` from `endpoint` (its `token_uri`, resolved).
    public init(account: ServiceAccount, endpoint: TokenEndpoint, trust: TLSTrust = .system) {
        self.account = account
        self.endpoint = endpoint
        self.trust = trust
    }

    /// One exchange: an unreachable endpoint is `unreachable`, a refusal names Google's error and description.
    public func fetch(timeoutMilliseconds: UInt64 = 10_000) throws(LoadRunError) -> AccessToken {
        let where_ = "token_uri \(endpoint.url)"
        let assertion: String
        do throws(CredentialError) {
            assertion = try account.assertion(issuedAt: Int64(Date().timeIntervalSince1970))
        } catch {
            throw LoadRunError(description: "\(where_): cannot sign the assertion: \(error.message)", unreachable: false)
        }
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion
        let exchange: Exchange
        do {
            let tls = endpoint.secure ? try TLSClientContext(trust: trust, alpn: ["http/1.1"]) : nil
            exchange = try Exchange.run(endpoint: endpoint, tls: tls, body: Array(form.utf8), timeoutMilliseconds: timeoutMilliseconds)
        } catch let e as LoadRunError {
            throw LoadRunError(description: "\(where_): \(e.description)", unreachable: e.unreachable)
        } catch {
            throw LoadRunError(description: "\(where_): \(error)", unreachable: true)
        }
        let object = (try? JSONValue.parse(exchange.body))?.object
        guard exchange.status == 200 else {
            let error = object?["error"]?.string ?? "HTTP \(exchange.status)"
            let description = object?["error_description"]?.string ?? String(decoding: exchange.body.prefix(200), as: UTF8.self)
            throw LoadRunError(description: "\(where_) refused the service account's assertion: \(error): \(description)",
                               unreachable: false)
        }
        guard let token = object?["access_token"]?.string, !token.isEmpty else {
            throw LoadRunError(description: "\(where_): the answer has no access_token", unreachable: false)
        }
        let expires = object?["expires_in"]?.integer.map { Int(clamping: $0) } ?? 3600
        return AccessToken(token: token, expiresIn: max(1, expires))
    }

    /// One request/response on a private loop (the caller's thread); also how a pipeline run fetches a
    /// remote egress's pushes (``RemoteEgress``).
    final class Exchange: HTTP1ClientDelegate {
        var status = 0
        var body: [UInt8] = []
        var error: LoadRunError?
        var done = false
        let payload: [UInt8]
        let head: HTTP1RequestHead

        init(_ endpoint: TokenEndpoint, _ payload: [UInt8]) throws {
            self.payload = payload
            head = try HTTP1RequestHead(path: endpoint.path, host: endpoint.authority,
                                        headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")])
        }

        static func run(endpoint: TokenEndpoint, tls: TLSClientContext?, body: [UInt8], timeoutMilliseconds: UInt64) throws -> Exchange {
            let loop = try EventLoop()
            let x = try Exchange(endpoint, body)
            var config = HTTP1ClientConfiguration()
            config.bodyCapacity = body.count
            config.connectTimeoutMilliseconds = timeoutMilliseconds
            let c = HTTP1ClientConnection(loop: loop, configuration: config, delegate: x)
            if let tls {
                c.connect(host: endpoint.host, port: endpoint.port, tls: tls, serverName: endpoint.serverName)
            } else {
                c.connect(host: endpoint.host, port: endpoint.port)
            }
            let finished = loop.run(until: { x.done }, timeoutNanoseconds: timeoutMilliseconds * 1_000_000)
            c.delegate = nil
            c.close()
            loop.run(until: { false }, timeoutNanoseconds: 5_000_000)
            loop.close()
            if let e = x.error { throw e }
            if !finished { throw LoadRunError(description: "no answer within \(timeoutMilliseconds) ms", unreachable: true) }
            return x
        }

        func connectionDidConnect(_ connection: HTTP1ClientConnection) {
            do {
                try connection.submit(head, context: 0) { out in
                    payload.withUnsafeBytes { out.copyMemory(from: $0) }
                    return payload.count
                }
            } catch {
                self.error = LoadRunError(description: "cannot send the request", unreachable: false)
                done = true
            }
        }

        func connection(_ connection: HTTP1ClientConnection, didFailToConnect error: TransportError) {
            self.error = LoadRunError(description: error.message, unreachable: true)
            done = true
        }

        func connection(_ connection: HTTP1ClientConnection, didReceive response: HTTP1Response) {
            status = response.status
            body = Array(response.body)
            done = true
        }

        func connection(_ connection: HTTP1ClientConnection, requestDidFail context: UInt64, error: TransportError) {
            self.error = LoadRunError(description: "the connection ended before an answer (\(error.message))", unreachable: true)
            done = true
        }

        func connectionDidClose(_ connection: HTTP1ClientConnection, error: TransportError) {}
    }
}

/// Keeps an ``AccessTokenSource`` fresh during a run: a thread that fetches a new token before the current
/// one expires (half its lifetime, or 5 minutes before the end when it lives longer than 10), and on a
/// failure keeps the old token and tries again a second later. The driver threads never wait for it.
public final class AccessTokenRefresher: Sendable {
    private let tokens: ServiceAccountTokens
    /// Where the fresh tokens go.
    public let source: AccessTokenSource
    private let stopFlag = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)
    private let done = Atomic<Bool>(false)
    private let dueNanos: Atomic<UInt64>
    /// Tokens fetched so far (the first, before the run, included) and failed attempts.
    let fetches = Atomic<Int>(1), failures = Atomic<Int>(0)

    /// A refresher for `source`, whose token (`first`) was fetched at `fetchedAt` (monotonic ns).
    public init(tokens: ServiceAccountTokens, source: AccessTokenSource, first: AccessToken, fetchedAt: UInt64) {
        self.tokens = tokens
        self.source = source
        dueNanos = Atomic(fetchedAt + Self.refreshAfter(first.expiresIn))
    }

    /// When to refresh a token that lives `expiresIn` seconds, in ns after it was fetched.
    static func refreshAfter(_ expiresIn: Int) -> UInt64 {
        let seconds = expiresIn > 600 ? expiresIn - 300 : max(1, expiresIn / 2)
        return UInt64(seconds) * 1_000_000_000
    }

    /// Starts the thread.
    public func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            nameCurrentThread("pb-token-refresh")
            while !stopFlag.load(ordering: .acquiring) {
                usleep(20_000)
                let now = MonotonicClock.nanoseconds()
                guard now >= dueNanos.load(ordering: .relaxed) else { continue }
                do throws(LoadRunError) {
                    let t = try tokens.fetch()
                    source.update(t.token)
                    fetches.add(1, ordering: .relaxed)
                    dueNanos.store(MonotonicClock.nanoseconds() + Self.refreshAfter(t.expiresIn), ordering: .relaxed)
                } catch {
                    failures.add(1, ordering: .relaxed)
                    dueNanos.store(MonotonicClock.nanoseconds() + 1_000_000_000, ordering: .relaxed)
                }
            }
            done.store(true, ordering: .releasing)
        }
        thread.start()
    }

    /// Stops the thread and waits for it (at most one fetch's time).
    public func stop() {
        stopFlag.store(true, ordering: .releasing)
        guard started.load(ordering: .acquiring) else { return }
        while !done.load(ordering: .acquiring) { usleep(5_000) }
    }
}
