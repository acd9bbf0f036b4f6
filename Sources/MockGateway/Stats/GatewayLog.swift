#if canImport(Glibc)
import Glibc
#endif
import PushTransport
import Synchronization

/// The gateway's operator log on standard error: the first time each limit is enforced, one line naming
/// the bound and its flag (later ones are only counted, in `/stats` `limits`), and the warnings at start.
enum GatewayLog {
    /// One bit per ``ServerLimit`` already logged, shared by every loop.
    private static let logged = Atomic<UInt64>(0)

    /// Logs `limit` unless it was logged before in this process.
    static func once(_ limit: ServerLimit, configuration c: GatewayConfiguration) {
        let bit = UInt64(1) << UInt64(limit.rawValue)
        let before = logged.bitwiseOr(bit, ordering: .relaxed).oldValue
        if before & bit != 0 { return }
        line("pushbench gateway: \(message(limit, c)) (said once; /stats counts them under limits.\(limit.name))")
    }

    static func message(_ limit: ServerLimit, _ c: GatewayConfiguration) -> String {
        let l = c.limits
        func seconds(_ ns: UInt64) -> String { ns % 1_000_000_000 == 0 ? "\(ns / 1_000_000_000)s" : "\(ns / 1_000_000)ms" }
        switch limit {
        case .connections:
            return "\(c.maxConnections.map(String.init) ?? "the most") connections are open; new ones are closed at once (--max-connections)"
        case .descriptors:
            return "out of file descriptors; a new connection was closed at once (raise ulimit -n, or lower --max-connections)"
        case .headerListSize:
            return "a request's headers passed \(l.maxHeaderListSize) bytes; answered 431 (--max-header-size)"
        case .headerMemory:
            return "a connection's open requests held more than \(l.maxHeaderMemoryPerConnection) header bytes; stream refused (--max-header-memory)"
        case .requestBodySize:
            return "a request body passed \(l.maxRequestBodySize) bytes; stream reset, or over HTTP/1.1 answered 413 and closed (--max-body)"
        case .bodyMemoryPerConnection:
            return "a connection's open requests held more than \(l.maxBodyMemoryPerConnection) body bytes; stream reset (--max-body-memory)"
        case .bodyMemory:
            return "open requests held more than \(l.maxBodyMemory) body bytes in all; stream refused (--max-body-total)"
        case .outboundQueue:
            return "a client let \(l.maxOutboundFrames) frames pile up unread; reading from it paused (--max-outbound-frames)"
        case .controlFrames:
            return "a client sent more than \(l.maxControlFramesPerSecond) control frames in a second; GOAWAY ENHANCE_YOUR_CALM (--max-control-frames)"
        case .handshakeTimeout:
            return "a client sent no connection preface within \(seconds(l.handshakeTimeoutNanos)); closed (--handshake-timeout)"
        case .idleTimeout:
            return "a connection idle for \(seconds(l.idleTimeoutNanos)) got GOAWAY IdleTimeout (--idle-timeout)"
        case .requestTimeout:
            return "a request did not finish within \(seconds(l.requestTimeoutNanos)); reset (--request-timeout)"
        case .writeTimeout:
            return "a client read nothing for \(seconds(l.writeTimeoutNanos)); GOAWAY ENHANCE_YOUR_CALM, closed (--write-timeout)"
        }
    }

    /// One line on standard error.
    static func line(_ text: String) {
        var t = text + "\n"
        t.withUTF8 { b in
            var off = 0
            while off < b.count {
                let n = write(2, b.baseAddress! + off, b.count - off)
                if n <= 0 { break }
                off += n
            }
        }
    }
}
