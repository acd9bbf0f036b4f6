import CNGHTTP2
import CUV

/// The timeouts and idle-time housekeeping every connection gets from its server's sweep.
extension HTTP2ServerConnection {
    /// The timeouts, checked by the server's sweep: the handshake, a write the client does not read,
    /// requests that do not finish, and an idle connection.
    func sweep(now: UInt64) {
        if isClosed || session == nil { return }
        if lingeringSince != 0 {
            if now &- lingeringSince >= Self.lingerNanoseconds { fail(TransportError(kind: .closedLocally, code: 0, function: "GOAWAY")) }
            return
        }
        if !peerSettingsSeen {
            if limits.handshakeTimeoutNanos > 0 && now &- openedAt > limits.handshakeTimeoutNanos {
                report(.handshakeTimeout)
                close()
            }
            return
        }
        if writePending && limits.writeTimeoutNanos > 0 && now &- writePendingSince > limits.writeTimeoutNanos {
            calm(.writeTimeout, closeNow: true)
            return
        }
        if incompleteRequests > 0 && limits.requestTimeoutNanos > 0 {
            var i = 0
            while i < slots.count {
                let s = slots[i]
                i += 1
                guard s.pointee.active, !s.pointee.settled, now &- s.pointee.startedAt > limits.requestTimeoutNanos else { continue }
                if !s.pointee.headersDone {
                    // A header block that never ends holds the whole connection (nothing else may be sent
                    // on it until its CONTINUATION arrives): close it.
                    calm(.requestTimeout)
                    return
                }
                reset(s, NGHTTP2_CANCEL.rawValue, .requestTimeout)
            }
        }
        if openStreams == 0 && !tlsBuffersReleased && !writePending && now &- lastStreamActivity >= Self.idleBufferNanoseconds,
           let secure = transport as? TLSTransport {
            // An idle TLS connection holds record buffers it is not using (OpenSSL's two and the
            // transport's two, about 66 KiB); its next request makes them again.
            tlsBuffersReleased = true
            secure.releaseIdleBuffers()
            withOwner { $0.idleBuffersReleased += 1 }
        }
        if openStreams == 0 && !idleGoAwaySent && limits.idleTimeoutNanos > 0 && now &- lastStreamActivity > limits.idleTimeoutNanos {
            idleGoAwaySent = true
            report(.idleTimeout)
            limits.idleGoAwayDebugData.withUnsafeBytes { goAway(errorCode: 0, debugData: $0) }
        }
    }
}
