import CNGHTTP2

/// A GOAWAY frame received from the peer.
public struct HTTP2GoAway: Sendable {
    /// The last stream id the peer processed (streams above it were not and may be retried).
    var lastStreamID: Int32
    /// The HTTP/2 error code (0 = NO_ERROR: graceful shutdown).
    var errorCode: UInt32
    /// The opaque debug data (the mock gateway puts a JSON reason here).
    var debugData: [UInt8]

    /// The GOAWAY in a received frame (copies the debug data).
    init(frame: UnsafePointer<nghttp2_frame>) {
        let n = pb_frame_goaway_data_len(frame)
        var data: [UInt8] = []
        if n > 0, let p = pb_frame_goaway_data(frame) { data = Array(UnsafeBufferPointer(start: p, count: n)) }
        lastStreamID = pb_frame_goaway_last_stream_id(frame)
        errorCode = pb_frame_goaway_error_code(frame)
        debugData = data
    }
}
