#if canImport(Glibc)
import Glibc
#endif

/// One connection to an ``EventStreamEndpoint``, on the endpoint's thread only: the request head being
/// read, then either one answer to write before closing, or a viewer's stream of events, with the bytes
/// the viewer has not taken yet.
final class EventStreamClient {
    /// What the connection is doing.
    enum Phase {
        /// Reading the request head.
        case reading
        /// Writing one answer, then closing.
        case answering
        /// An event stream; `replayed` once it got what was kept when it connected.
        case viewing(replayed: Bool)
    }

    let fd: Int32
    var phase = Phase.reading
    var head: [UInt8] = []
    /// Until when (monotonic ns) the request head may take to arrive, then the answer to be sent.
    var deadline: UInt64
    private var out: [UInt8] = []
    private var written = 0
    /// Bytes of the replay (what was kept when the viewer connected) not yet taken: they do not count
    /// against the viewer's bound, which is for what it falls behind since.
    var replayOwed = 0

    init(fd: Int32, deadline: UInt64) {
        self.fd = fd
        self.deadline = deadline
    }

    /// Bytes queued and not yet taken by the peer.
    var unsent: Int { out.count - written }

    var isAnswering: Bool {
        if case .answering = phase { return true }
        return false
    }

    var isViewer: Bool {
        if case .viewing = phase { return true }
        return false
    }

    /// Queues `bytes` to send.
    func queue(_ bytes: [UInt8]) {
        if written > 0 && written == out.count {
            out.removeAll(keepingCapacity: true)
            written = 0
        }
        out += bytes
    }

    /// Sends what the socket takes now without waiting; false when the peer is gone.
    func flush() -> Bool {
        while written < out.count {
            let n = out.withUnsafeBytes { send(fd, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n > 0 {
                written += n
                replayOwed = max(0, replayOwed - n)
                continue
            }
            return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        }
        // Keep the buffer from growing with what was sent long ago.
        if written > 1 << 16 {
            out.removeFirst(written)
            written = 0
        }
        return true
    }

    /// Reads what arrived without waiting: false when the peer closed or failed.
    func receive(into keep: Bool) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                if keep { head += chunk[0..<n] }
                if keep && head.count > 8192 { return true }
                continue
            }
            if n == 0 { return false }
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
        }
    }

    /// Whether the request head is complete (an empty line ends it).
    var headEnded: Bool {
        guard head.count >= 4 else { return false }
        for i in 0...(head.count - 4) where head[i] == 0x0D && head[i + 1] == 0x0A && head[i + 2] == 0x0D && head[i + 3] == 0x0A {
            return true
        }
        return false
    }
}
