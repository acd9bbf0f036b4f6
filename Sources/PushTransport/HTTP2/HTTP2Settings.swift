import CNGHTTP2

/// The HTTP/2 settings a peer announced (the values in force, `initial` before any SETTINGS).
public struct HTTP2Settings: Sendable, Equatable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    public var maxConcurrentStreams: Int
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    public var initialWindowSize: Int
    /// SETTINGS_MAX_FRAME_SIZE.
    var maxFrameSize: Int
    /// SETTINGS_HEADER_TABLE_SIZE.
    var headerTableSize: Int
    /// SETTINGS_MAX_HEADER_LIST_SIZE (Int(UInt32.max) when unlimited).
    public var maxHeaderListSize: Int

    /// What both ends assume until the peer's first SETTINGS: the protocol's initial values, with
    /// 100 concurrent streams (what nghttp2 assumes) in place of unlimited.
    static let initial = HTTP2Settings(maxConcurrentStreams: 100, initialWindowSize: 65535, maxFrameSize: 16384,
                                       headerTableSize: 4096, maxHeaderListSize: Int(UInt32.max))
}

/// The SETTINGS a session announces: only the fields set here are sent.
struct LocalSettings {
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    var maxConcurrentStreams: Int?
    /// SETTINGS_INITIAL_WINDOW_SIZE (clamped to the protocol's 2^31-1).
    var initialWindowSize: Int?
    /// SETTINGS_ENABLE_PUSH.
    var enablePush: Bool?
    /// SETTINGS_MAX_HEADER_LIST_SIZE (the most header bytes of one request or response this side keeps).
    var maxHeaderListSize: Int?
}
