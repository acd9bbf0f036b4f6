import PushPayload
import PushVocabulary

/// Why an FCM request was refused, which selects the `message` text of the error body.
enum FCMProblem: UInt8, Sendable {
    case none
    // 400 INVALID_ARGUMENT
    case invalidJSON, unknownField, wrongType, missingMessage, noTarget, twoTargets, badToken, badTopic, badCondition
    case dataNotString, reservedDataKey, badAnalyticsLabel, apnsRejected, payloadTooBig, dataOnlyPriority
    // other FcmError codes
    case unregistered, churned, senderIdMismatch, quotaExceeded, injected
    // plain google.rpc errors (no FcmError detail)
    case missingCredentials, invalidCredentials, notFound
}

/// Up to 60 bytes of ASCII text stored inline, so a response carries its details without allocating.
struct FCMInlineText: Equatable, Sendable {
    private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt32) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var length: UInt8 = 0
    /// The capacity in bytes.
    static let capacity = 60

    /// Empty text.
    init() {}

    /// `bytes`, cut to 60 bytes; bytes that would need JSON escaping (and non-ASCII) become `?`.
    init(_ bytes: UnsafeRawBufferPointer) {
        let n = min(bytes.count, Self.capacity)
        guard n > 0 else { return }
        withUnsafeMutableBytes(of: &storage) { out in
            let o = out.baseAddress!, src = bytes.baseAddress!
            // The common text (a project id, a field name) is short and needs no cleaning: copy and check
            // 8 bytes at a time (no call to memmove), then the tail byte by byte.
            var i = 0
            while i + 8 <= n {
                let word = src.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                if Self.wordNeedsCleaning(word) { break }
                o.storeBytes(of: word, toByteOffset: i, as: UInt64.self)
                i += 8
            }
            while i < n {
                let c = src.load(fromByteOffset: i, as: UInt8.self)
                let clean = (c < 0x20 || c >= 0x7F || c == 0x22 || c == 0x5C) ? UInt8(ascii: "?") : c
                o.storeBytes(of: clean, toByteOffset: i, as: UInt8.self)
                i += 1
            }
        }
        length = UInt8(n)
    }

    /// Whether a word holds a byte below 0x20, from 0x7F up, `"` or `\` (no false negatives).
    @inline(__always) static func wordNeedsCleaning(_ x: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        let d = x ^ (ones &* 0x7F)
        let del = (d &- ones) & ~d & high
        return (del | (x & high)) != 0 || JSONBytes.wordNeedsEscape(x)
    }

    /// `text`, cut and cleaned the same way.
    init(_ text: String) {
        var t = text
        self = t.withUTF8 { FCMInlineText(UnsafeRawBufferPointer($0)) }
    }

    /// A static text.
    init(static text: StaticString) {
        self.init(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Calls `body` with the bytes.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: storage) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<Int(length)])) }
    }

    static func == (l: Self, r: Self) -> Bool {
        l.withBytes { a in r.withBytes { b in a.elementsEqual(b) } }
    }

    /// The text.
    var string: String { withBytes { String(decoding: $0, as: UTF8.self) } }
}

/// What the gateway answers to one FCM request: small and inline (no allocation); the JSON body is
/// rendered when the answer is sent (``render(into:)``), so a delayed answer needs no stored body.
struct FCMResponse: Equatable, Sendable {
    /// HTTP status.
    var status: UInt16
    /// The FcmError code of an error, nil on success and for plain google.rpc errors (401, 404).
    var code: FCMErrorCode?
    /// What was wrong (selects the error message), `.none` on success.
    var problem: FCMProblem
    /// On success, the project; on error, the field, key or APNs reason the message names.
    var text: FCMInlineText
    /// On success, the message id (`validateOnly` answers `fake_message_id`); on error, a number the
    /// message quotes (payload size, JSON line).
    var number: UInt64
    /// A second number (size limit, JSON column).
    var number2: UInt64
    /// A dry run (`validate_only`) that passed.
    var validateOnly: Bool

    /// A response.
    init(status: UInt16, code: FCMErrorCode?, problem: FCMProblem, text: FCMInlineText = FCMInlineText(),
                number: UInt64 = 0, number2: UInt64 = 0, validateOnly: Bool = false) {
        self.status = status
        self.code = code
        self.problem = problem
        self.text = text
        self.number = number
        self.number2 = number2
        self.validateOnly = validateOnly
    }

    /// An FCM error with its FcmError detail.
    static func error(_ code: FCMErrorCode, _ problem: FCMProblem, _ text: FCMInlineText = FCMInlineText(),
                      _ number: UInt64 = 0, _ number2: UInt64 = 0) -> FCMResponse {
        FCMResponse(status: code.status, code: code, problem: problem, text: text, number: number, number2: number2)
    }

    /// Bytes a rendered body can take at most.
    static let maxBodySize = 1024

    /// Writes the JSON body into `out` (at least ``maxBodySize`` bytes); returns its length. Allocates nothing.
    func render(into out: UnsafeMutableRawBufferPointer) -> Int {
        var w = ByteWriter(out)
        if problem == .none {
            w.literal("{\"name\":\"projects/")
            text.withBytes { w.bytes($0) }
            w.literal("/messages/")
            if validateOnly { w.literal("fake_message_id") } else { FCMMessageID.write(number, to: &w) }
            w.literal("\"}")
            return w.count
        }
        w.literal("{\"error\":{\"code\":")
        w.decimal(UInt64(status))
        w.literal(",\"message\":\"")
        writeMessage(&w)
        w.literal("\",\"status\":\"")
        switch problem {
        case .missingCredentials, .invalidCredentials: w.literal("UNAUTHENTICATED")
        case .notFound: w.literal("NOT_FOUND")
        default: w.string(code!.rpcStatus)
        }
        w.byte(UInt8(ascii: "\""))
        if let code {
            w.literal(",\"details\":[{\"@type\":\"type.googleapis.com/google.firebase.fcm.v1.FcmError\",\"errorCode\":\"")
            w.string(code.rawValue)
            w.literal("\"}]")
        }
        w.literal("}}")
        return w.count
    }

    /// The error body as a String (tests, logs).
    var body: String {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.maxBodySize, alignment: 1)
        defer { buffer.deallocate() }
        let n = render(into: buffer)
        return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[0..<n]), as: UTF8.self)
    }

    private func writeMessage(_ w: inout ByteWriter) {
        func t() { text.withBytes { w.bytes($0) } }
        switch problem {
        case .none: break
        case .invalidJSON:
            w.literal("Invalid JSON payload received. ")
            t()
            w.literal(" at line "); w.decimal(number); w.literal(" column "); w.decimal(number2)
        case .unknownField:
            w.literal("Invalid JSON payload received. Unknown name \\\""); t(); w.literal("\\\": Cannot find field.")
        case .wrongType: w.literal("Invalid value at '"); t(); w.literal("': wrong JSON type")
        case .missingMessage: w.literal("Request contains an invalid argument: 'message' is required.")
        case .noTarget: w.literal("Recipient of the message is not set.")
        case .twoTargets:
            w.literal("Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot overwrite with '")
            t(); w.literal("'")
        case .badToken: w.literal("The registration token is not a valid FCM registration token")
        case .badTopic: w.literal("Invalid topic name '"); t(); w.literal("': it must match [a-zA-Z0-9-_.~%]+")
        case .badCondition: w.literal("Invalid condition expression provided.")
        case .dataNotString:
            w.literal("Invalid value at 'message.data[\\\""); t(); w.literal("\\\"]' (TYPE_STRING): data values must be strings")
        case .reservedDataKey: w.literal("Invalid data payload key: '"); t(); w.literal("' is reserved")
        case .badAnalyticsLabel: w.literal("Invalid analytics_label: it must match ^[a-zA-Z0-9-_.~%]{1,50}$")
        case .apnsRejected: w.literal("Invalid APNs request: APNs would answer "); t()
        case .payloadTooBig:
            w.literal("Message is too big: the APNs payload is "); w.decimal(number)
            w.literal(" bytes, the limit is "); w.decimal(number2); w.literal(" bytes")
        case .dataOnlyPriority: w.literal("Data-only (background) messages to Apple devices allow only apns-priority 5")
        case .unregistered, .churned: w.literal("Requested entity was not found.")
        case .senderIdMismatch: w.literal("SenderId mismatch")
        case .quotaExceeded:
            w.literal("Quota exceeded: the project may send "); w.decimal(number)
            w.literal(" messages per "); w.decimal(number2); w.literal(" s (rolling window)")
        case .injected:
            switch code {
            case .internal: w.literal("Internal error encountered.")
            case .unavailable: w.literal("The service is currently unavailable.")
            case .thirdPartyAuthError: w.literal("Auth error from APNS or Web Push Service")
            case .quotaExceeded: w.literal("Quota exceeded (injected).")
            case .unregistered: w.literal("Requested entity was not found.")
            case .senderIdMismatch: w.literal("SenderId mismatch")
            default: w.literal("Request contains an invalid argument.")
            }
        case .missingCredentials:
            w.literal("Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
        case .invalidCredentials:
            w.literal("Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
        case .notFound: w.literal("Requested entity was not found: expected POST /v1/projects/<project>/messages:send")
        }
    }
}

/// FCM message ids: `0:<decimal>%<16 hex>`, unique per gateway run; the numbers start at a random point unless
/// `--seed` is given (``FCMEngine/messageBase(idSeed:)``).
enum FCMMessageID {
    /// Bytes an id takes at most: `0:`, 20 digits, `%`, 16 hex digits.
    static let maxLength = 39

    @inline(__always)
    static func write(_ id: UInt64, to w: inout ByteWriter) {
        let digits = JSONWriting.decimalLength(id)
        let n = 2 + digits + 1 + 16
        guard w.count + n <= w.capacity else {
            // Already full (or only counting): nothing of it would be stored, so just count it.
            if w.count >= w.capacity { w.count += n; return }
            return writeSlowly(id, to: &w)
        }
        let p = w.base + w.count
        p.storeBytes(of: 0x3A30, as: UInt16.self)  // "0:"
        _ = JSONWriting.writeDecimal(id, to: p + 2)
        p.storeBytes(of: UInt8(ascii: "%"), toByteOffset: 2 + digits, as: UInt8.self)
        let h = mix(id)
        // hex8 gives the digits of a 32-bit half as the bytes of a little-endian word, most significant first.
        p.storeBytes(of: hex8(UInt32(truncatingIfNeeded: h >> 32)), toByteOffset: 3 + digits, as: UInt64.self)
        p.storeBytes(of: hex8(UInt32(truncatingIfNeeded: h)), toByteOffset: 11 + digits, as: UInt64.self)
        w.count += n
    }

    /// Byte by byte, for a writer about to overflow (it keeps counting what does not fit).
    static func writeSlowly(_ id: UInt64, to w: inout ByteWriter) {
        w.literal("0:")
        w.decimal(id)
        w.byte(UInt8(ascii: "%"))
        let h = mix(id)
        let digits: StaticString = "0123456789abcdef"
        for k in 0..<16 { w.byte(digits.utf8Start[Int((h >> UInt64(60 - 4 * k)) & 0xF)]) }
    }
}

/// Writes bytes into a fixed buffer; past its end it keeps counting but stores nothing, so the caller
/// learns the size a too-big output would have had.
struct ByteWriter {
    let base: UnsafeMutableRawPointer
    let capacity: Int
    var count = 0

    init(_ buffer: UnsafeMutableRawBufferPointer) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    /// A writer that stores nothing and only counts (`buffer` is never written).
    init(countingOnly buffer: UnsafeMutableRawBufferPointer) {
        base = buffer.baseAddress!
        capacity = 0
    }

    /// Whether everything written fitted.
    var fits: Bool { count <= capacity }

    @inline(__always) mutating func byte(_ b: UInt8) {
        if count < capacity { base.storeBytes(of: b, toByteOffset: count, as: UInt8.self) }
        count += 1
    }

    @inline(__always) mutating func bytes(_ p: UnsafeRawBufferPointer) {
        let n = p.count
        if n > 0, count + n <= capacity {
            let d = base + count, s = p.baseAddress!
            // Most pieces (keys, short values, literals) are short: two overlapping word copies beat a
            // call to memmove.
            if n >= 8 && n <= 16 {
                d.storeBytes(of: s.loadUnaligned(as: UInt64.self), as: UInt64.self)
                d.storeBytes(of: s.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self), toByteOffset: n - 8, as: UInt64.self)
            } else if n >= 4 && n < 8 {
                d.storeBytes(of: s.loadUnaligned(as: UInt32.self), as: UInt32.self)
                d.storeBytes(of: s.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self), toByteOffset: n - 4, as: UInt32.self)
            } else if n < 4 {
                var i = 0
                while i < n { d.storeBytes(of: s.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self); i += 1 }
            } else {
                d.copyMemory(from: s, byteCount: n)
            }
        }
        count += n
    }

    @inline(__always) mutating func literal(_ s: StaticString) {
        bytes(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
    }

    @inline(__always) mutating func decimal(_ v: UInt64) {
        let n = JSONWriting.decimalLength(v)
        if count + n <= capacity { _ = JSONWriting.writeDecimal(v, to: base + count) }
        count += n
    }

    /// A JSON string value `"…"` from raw (already escaped) JSON string bytes.
    @inline(__always) mutating func quoted(_ raw: UnsafeRawBufferPointer) {
        byte(0x22); bytes(raw); byte(0x22)
    }
}
