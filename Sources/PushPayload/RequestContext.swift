// The per-request values an encoder substitutes into a template. The caller owns every byte the
// context points at; the encoders only read them, so the zerocopy path allocates nothing.

/// Values that change per request: `{{seq}}`, `{{badge}}`, `{{message_id}}` (and the `{{uuid}}`s
/// derived from it), `{{token}}`, `{{text}}`, `{{pipeline_id}}`, `{{tokens:N}}`.
///
///     tokens.withToken(k % tokens.count) { tok in
///         let ctx = RequestContext(seq: k, token: tok, messageID: rng.uuid())
///         let n = encoder.encode(ctx, into: slot)
///     }
public struct RequestContext {
    /// Request number (`{{seq}}`).
    public var seq: UInt64
    /// Badge number (`{{badge}}`).
    public var badge: Int64
    /// The request's message id (`{{message_id}}`); send the same value as `apns-id`.
    public var messageID: PushUUID
    /// The device token as text, e.g. 64 lowercase hex bytes (`{{token}}`); escaped when written.
    public var token: UnsafeRawBufferPointer
    /// Free UTF-8 text (`{{text}}`), e.g. a chat message; must be valid UTF-8; escaped when written.
    public var text: UnsafeRawBufferPointer
    /// The run's correlation prefix (`pb-7f3a-`), written before `seq` by `{{pipeline_id}}`.
    public var pipelinePrefix: UnsafeRawBufferPointer
    /// The tokens `{{tokens:N}}` draws from: request `seq` gets tokens `seq·N … seq·N+N-1` (mod count).
    public var tokens: DeviceTokens?

    /// A context; `token` and `text` must stay valid while the encoder runs.
    public init(seq: UInt64, token: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                messageID: PushUUID, badge: Int64 = 1,
                text: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                pipelinePrefix: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                tokens: DeviceTokens? = nil) {
        self.seq = seq
        self.badge = badge
        self.messageID = messageID
        self.token = token
        self.text = text
        self.pipelinePrefix = pipelinePrefix
        self.tokens = tokens
    }
}
