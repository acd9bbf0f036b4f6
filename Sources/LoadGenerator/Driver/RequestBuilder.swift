import PushPayload
import PushTransport

/// Builds one push protocol's requests for a ``ConnectionPool``: the header block every request shares
/// and each request's own header values. The pool is generic over its builder, so every call is direct
/// and specialized, with nothing boxed or allocated per request.
protocol RequestBuilder {
    /// A builder for `config`'s requests; throws when a header cannot be encoded.
    init(config: LoadConfiguration) throws(HTTP2HeaderBlock.InvalidBlock)
    /// The header block shared by every request.
    var block: HTTP2HeaderBlock { get }
    /// Writes the per-request fields of ``block`` for the request to token `tokenIndex`.
    func writeHeaders(_ request: inout HTTP2RequestWriter, tokenIndex: Int, context: RequestContext)
    /// Called before each request is built, with the time it is sent (monotonic ns): a builder whose
    /// credentials expire renews them here, when due.
    func willBuild(at now: UInt64)
    /// Provider tokens signed during the run after the first (0 without provider tokens).
    var providerTokenRefreshes: Int { get }
}

extension RequestBuilder {
    @inline(__always) func willBuild(at now: UInt64) {}
    var providerTokenRefreshes: Int { 0 }
}

extension RequestBuilder {
    /// Fills `request`: its header values, then the payload `encoder` writes for `context`, in the stream's
    /// slot (`inPlace`, sent without a copy) or copied by nghttp2. When the encoder cannot write the
    /// payload, the body is given a length past the slot, so `submit` throws `.bodyTooLarge` and nothing
    /// is sent.
    @inline(__always)
    func fill(_ request: inout HTTP2RequestWriter, tokenIndex: Int, context: RequestContext,
              encoder: any PayloadEncoder, inPlace: Bool) {
        writeHeaders(&request, tokenIndex: tokenIndex, context: context)
        guard let n = encoder.encode(context, into: request.body) else {
            request.setBodyLength(request.body.count + 1)
            return
        }
        if inPlace {
            request.setBodyLength(n)
        } else {
            request.copyBody(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(request.body)[0..<n]))
        }
    }
}

/// APNs: `POST /3/device/<token>` with `apns-topic`, `apns-push-type` and the optional headers fixed, a
/// fresh `apns-id` per request unless `--no-apns-id` (its name HPACK-indexed once per connection, its values
/// never-indexed literals), and with provider tokens the driver's current
/// `authorization` (copied into the stream's slot, so a refreshed token is simply the next one copied).
/// When the token file gives topics (`token topic` lines), `apns-topic` is per request: the token's first
/// topic, or `--topic` for a line without one.
struct APNsRequestBuilder: RequestBuilder {
    let block: HTTP2HeaderBlock
    private let tokens: DeviceTokens
    private let sendsApnsID: Bool
    /// The per-request field numbers of `apns-topic` (0: fixed in the block), `apns-id` and `authorization`.
    private let topicField: Int
    private let idField: Int
    private let defaultTopic: String
    private let authorization: ProviderTokenHeader?
    private let authorizationField: Int

    init(config: LoadConfiguration) throws(HTTP2HeaderBlock.InvalidBlock) {
        let topicPerRequest = config.tokens.hasTopics
        var headers: [(String, String)] = topicPerRequest ? [] : [("apns-topic", config.topic)]
        headers.append(("apns-push-type", config.pushType))
        if let p = config.priority { headers.append(("apns-priority", String(p))) }
        if let e = config.expiration { headers.append(("apns-expiration", String(e))) }
        if let c = config.collapseID { headers.append(("apns-collapse-id", c)) }
        let pathLength = DeviceTokens.apnsPathPrefix.utf8CodeUnitCount + config.tokens.maxLength
        // :path is field 0; then apns-topic when it varies, then apns-id, then authorization.
        var perRequest = (topicPerRequest ? ["apns-topic"] : []) + (config.sendsApnsID ? ["apns-id"] : [])
        authorizationField = perRequest.count + 1
        if config.providerTokens != nil { perRequest.append("authorization") }
        block = try HTTP2HeaderBlock.request(
            authority: config.authority, path: nil,
            indexPath: Self.indexesPath(tokens: config.tokens.count, pathLength: pathLength),
            headers: headers, perRequestHeaders: perRequest, uniqueHeaders: ["apns-id"])
        tokens = config.tokens
        sendsApnsID = config.sendsApnsID
        topicField = topicPerRequest ? 1 : 0
        idField = topicPerRequest ? 2 : 1
        defaultTopic = config.topic
        authorization = config.providerTokens.map { ProviderTokenHeader(settings: $0) }
    }

    @inline(__always)
    func willBuild(at now: UInt64) { authorization?.refreshIfDue(now: now) }

    var providerTokenRefreshes: Int { authorization?.refreshes ?? 0 }

    /// Whether `:path` (one per token, `pathLength` bytes at most) is worth HPACK indexing: only when every
    /// token's entry (32 bytes of HPACK overhead + name + value) fits in half the peer's default 4 KiB
    /// table, so the paths stay there and each costs one byte after its first use. With more tokens an
    /// indexed path is evicted before it recurs, and indexing only costs an insert and an eviction per
    /// request on both ends.
    static func indexesPath(tokens: Int, pathLength: Int) -> Bool {
        tokens * (32 + ":path".utf8.count + pathLength) <= 2048
    }

    @inline(__always)
    func writeHeaders(_ request: inout HTTP2RequestWriter, tokenIndex: Int, context: RequestContext) {
        request.setValue(0, tokens.apnsPath(tokenIndex))
        if topicField > 0 {
            let topic = tokens.topic(tokenIndex)
            if topic.isEmpty { request.setValue(topicField, defaultTopic) } else { request.setValue(topicField, topic) }
        }
        if sendsApnsID {
            request.setValue(idField, capacity: PushUUID.textLength) { out in
                context.messageID.write(to: out.baseAddress!)
                return PushUUID.textLength
            }
        }
        if let authorization { request.setValue(authorizationField, authorization.value) }
    }
}

/// FCM HTTP v1: `POST /v1/projects/<project>/messages:send`; the device token is in the body. The bearer
/// token is fixed, or with `--credentials` the run's access token, written per request from a copy
/// taken when it changes (nghttp2 never indexes `authorization`: it is Huffman-coded into every request).
struct FCMRequestBuilder: RequestBuilder {
    let block: HTTP2HeaderBlock
    private let bearer: BearerCopy?

    init(config: LoadConfiguration) throws(HTTP2HeaderBlock.InvalidBlock) {
        let path = "/v1/projects/\(config.project)/messages:send"
        if let source = config.accessTokens {
            bearer = BearerCopy(source)
            block = try HTTP2HeaderBlock([
                .fixed(name: ":method", value: "POST"), .fixed(name: ":scheme", value: "http"),
                .fixed(name: ":authority", value: config.authority), .fixed(name: ":path", value: path),
                .fixed(name: "content-type", value: "application/json"), .perRequest(name: "authorization", indexed: true),
            ])
        } else {
            bearer = nil
            block = try HTTP2HeaderBlock.request(authority: config.authority, path: path,
                                                 headers: [("content-type", "application/json"), ("authorization", "Bearer pushbench")])
        }
    }

    @inline(__always)
    func writeHeaders(_ request: inout HTTP2RequestWriter, tokenIndex: Int, context: RequestContext) {
        if let bearer { request.setValue(0, bearer.current()) }
    }
}

/// One driver thread's copy of `Bearer <access token>`, taken again only when the source's generation
/// changes (a refresh), so a request copies bytes and allocates nothing.
final class BearerCopy {
    private let source: AccessTokenSource
    private var generation: UInt64 = 0
    private var bytes = UnsafeMutableRawBufferPointer(start: nil, count: 0)

    init(_ source: AccessTokenSource) { self.source = source }

    deinit { bytes.deallocate() }

    @inline(__always) func current() -> UnsafeRawBufferPointer {
        if source.generation != generation { take() }
        return UnsafeRawBufferPointer(bytes)
    }

    private func take() {
        let (token, g) = source.current()
        let text = Array(("Bearer " + token).utf8)
        bytes.deallocate()
        bytes = .allocate(byteCount: text.count, alignment: 1)
        bytes.copyBytes(from: text)
        generation = g
    }
}
