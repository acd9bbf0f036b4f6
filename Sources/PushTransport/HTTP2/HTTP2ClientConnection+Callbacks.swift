import CNGHTTP2

extension HTTP2ClientConnection {
    /// Installs the client's nghttp2 receive and frame callbacks; each reaches its connection through
    /// the session's user data.
    static func installReceiveCallbacks(_ cbs: OpaquePointer) {
        // The buffers, not only their bytes: `judged` knows fields by them.
        nghttp2_session_callbacks_set_on_header_callback2(cbs) { _, frame, name, value, _, ud in
            HTTP2ClientConnection.withClient(ud) { $0.header(frame!, name!, value!) }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs) { _, _, streamID, data, len, ud in
            HTTP2ClientConnection.withClient(ud) { $0.dataChunk(streamID, data!, len) }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs) { _, frame, ud in
            HTTP2ClientConnection.withClient(ud) { $0.frameReceived(frame!) }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(cbs) { _, frame, ud in
            let type = pb_frame_type(frame!)
            if type == UInt8(NGHTTP2_HEADERS.rawValue) {
                HTTP2ClientConnection.withClient(ud) { $0.headersSent(pb_frame_stream_id(frame!)) }
            } else if type == UInt8(NGHTTP2_GOAWAY.rawValue) && pb_frame_goaway_error_code(frame!) != 0 {
                // nghttp2 answers a peer that broke the protocol with GOAWAY and ends the session: the
                // close that follows is the peer's doing, not ours.
                HTTP2ClientConnection.withClient(ud) { c in
                    c.goAwaySentForError = true
                    if c.lastProtocolError == nil {
                        c.lastProtocolError = TransportError(kind: .protocolError, code: NGHTTP2_ERR_PROTO.rawValue,
                                                             function: "nghttp2_session_mem_recv")
                    }
                }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs) { _, frame, code, ud in
            if pb_frame_type(frame!) == UInt8(NGHTTP2_HEADERS.rawValue) {
                HTTP2ClientConnection.withClient(ud) { $0.headersNotSent(pb_frame_stream_id(frame!), code) }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs) { _, streamID, code, ud in
            HTTP2ClientConnection.withClient(ud) { $0.streamClosed(streamID, code) }
            return 0
        }
    }
}
