import Foundation
import Testing
@testable import MockGateway

/// How the gateway's cleartext port chooses between HTTP/2 and HTTP/1.1 by the first bytes, against real
/// sockets (Python): an invalid connection preface gets GOAWAY(PROTOCOL_ERROR) and the connection ends,
/// while HTTP/1.1 clients keep working, also when their request line arrives in small pieces.
@Suite(.serialized) struct FirstBytesLoopbackTests {
    static let script = """
    import json, socket, struct, sys, time
    port, mode = int(sys.argv[1]), sys.argv[2]

    def connect():
        s = socket.create_connection(('127.0.0.1', port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def read_all(s, bound):
        # What arrives until the gateway ends the connection, or `bound` seconds pass.
        s.settimeout(bound)
        out, end = b'', 'open'
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    end = 'eof'
                    break
                out += d
        except socket.timeout:
            end = 'open'
        except ConnectionResetError:
            end = 'reset'
        return out, end

    if mode == 'invalid-preface':
        s = connect()
        s.sendall(b'INVALID CONNECTION PREFACE\\r\\n\\r\\n')
        out, end = read_all(s, float(sys.argv[3]))
        frames = []
        while len(out) >= 9:
            length = int.from_bytes(out[0:3], 'big')
            ftype, stream = out[3], struct.unpack('>I', out[5:9])[0] & 0x7fffffff
            payload = out[9:9 + length]
            frame = {'type': ftype, 'stream': stream, 'length': length}
            if ftype == 7 and len(payload) >= 8:
                frame['last_stream'], frame['error'] = struct.unpack('>II', payload[:8])
            frames.append(frame)
            out = out[9 + length:]
        print(json.dumps({'frames': frames, 'left': len(out), 'end': end}))
    elif mode == 'split-http1':
        body = sys.argv[3].encode()
        head = ('POST /v1/projects/pushbench/messages:send HTTP/1.1\\r\\nHost: x\\r\\nauthorization: Bearer t\\r\\n'
                'content-type: application/json\\r\\ncontent-length: %d\\r\\n\\r\\n' % len(body)).encode()
        request = head + body
        s = connect()
        # The request line in pieces of a few bytes, each its own segment.
        for i in range(0, 60, 4):
            s.sendall(request[i:i + 4])
            time.sleep(0.02)
        s.sendall(request[60:])
        s.settimeout(10)
        answer = b''
        while b'\\r\\n\\r\\n' not in answer:
            d = s.recv(65536)
            if not d:
                break
            answer += d
        print(json.dumps({'status_line': answer.split(b'\\r\\n')[0].decode('latin-1')}))
    elif mode == 'requests':
        import requests
        r = requests.post('http://127.0.0.1:%d/v1/projects/pushbench/messages:send' % port,
                          data=sys.argv[3], headers={'authorization': 'Bearer t', 'content-type': 'application/json'}, timeout=10)
        print(json.dumps({'status': r.status_code, 'version': r.raw.version}))
    """

    static func run(_ port: Int, _ mode: String, _ argument: String) throws -> [String: Any] {
        let r = try runProcess(which("python3") ?? "/usr/bin/python3",
                               [temporaryScript("first-bytes.py", script), String(port), mode, argument], timeout: 60)
        guard r.status == 0, let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] else {
            throw ProbeError(message: "first-bytes probe \(mode) failed (\(r.status)): \(r.stderr)")
        }
        return o
    }

    let message = fcmSeedMessage.replacingOccurrences(of: "TOKEN", with: "abc:123")

    @Test func anInvalidPrefaceGetsGoAwayProtocolErrorAndTheConnectionEnds() throws {
        try withGateway { g in
            // 1.5 s: well short of the 2 s an HTTP/1.1 error answer lingers, so an answer that took that
            // path (400, then the gateway's close) would not pass.
            let o = try Self.run(g.port, "invalid-preface", "1.5")
            let frames = try #require(o["frames"] as? [[String: Int]])
            #expect(frames.count == 2, "\(o)")
            #expect(frames.first?["type"] == 4 && frames.first?["stream"] == 0, "SETTINGS first: \(o)")
            #expect(frames.last?["type"] == 7 && frames.last?["stream"] == 0, "then GOAWAY: \(o)")
            #expect(frames.last?["error"] == 1 && frames.last?["last_stream"] == 0, "PROTOCOL_ERROR: \(o)")
            #expect(o["left"] as? Int == 0)
            #expect(o["end"] as? String == "eof")
            // Nothing of it reached a session or the request counts; the gateway goes on serving.
            #expect(g.stats().http1Requests == 0 && g.stats().requests == 0)
            let (_, status, _) = try curlHTTP1(g.port, body: message)
            #expect(status == 200)
        }
    }

    @Test func http1ClientsStillWorkOnTheSamePort() throws {
        try withGateway { g in
            let split = try Self.run(g.port, "split-http1", message)
            #expect(split["status_line"] as? String == "HTTP/1.1 200 OK", "\(split)")
            let viaRequests = try Self.run(g.port, "requests", message)
            #expect(viaRequests["status"] as? Int == 200 && viaRequests["version"] as? Int == 11, "\(viaRequests)")
            #expect(g.stats().http1Requests == 2)
        }
    }
}
