import Foundation
import PushVocabulary
import Testing
@testable import MockGateway

/// curl with `--http1.1` against a gateway on loopback: (exit status, status code, body).
func curlHTTP1(_ port: Int, path: String = fcmPath, method: String = "POST", body: String? = nil,
               headers: [String] = ["authorization: Bearer test"], extra: [String] = []) throws -> (Int32, Int, String) {
    var args = ["-s", "--http1.1", "--max-time", "30", "-X", method, "-w", "\n%{http_code}"] + extra
    for h in headers { args += ["-H", h] }
    if let body { args += ["-H", "content-type: application/json", "--data-binary", body] }
    args.append("http://127.0.0.1:\(port)\(path)")
    let r = try runProcess(which("curl") ?? "/usr/bin/curl", args)
    guard let nl = r.stdout.lastIndex(of: "\n"), let status = Int(r.stdout[r.stdout.index(after: nl)...]) else {
        return (r.status, 0, r.stdout)
    }
    return (r.status, status, String(r.stdout[..<nl]))
}

/// A raw HTTP/1.1 exchange done by Python's socket module (what a misbehaving client sends): the answer's
/// bytes, and how the connection ended ("eof" when the gateway closed it cleanly, "reset", "open").
func rawHTTP1(_ port: Int, _ request: String, bodyBytes: Int = 0, timeout: Double = 10) throws -> (answer: String, end: String) {
    let script = """
    import socket, sys, threading, json
    port, req, body, timeout = int(sys.argv[1]), sys.argv[2].encode('latin-1'), int(sys.argv[3]), float(sys.argv[4])
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(req)
    def pump():
        chunk = b'x' * 65536
        left = body
        try:
            while left > 0:
                n = min(left, len(chunk)); s.sendall(chunk[:n]); left -= n
        except OSError:
            pass
    if body: threading.Thread(target=pump, daemon=True).start()
    s.settimeout(timeout)
    out, end = b'', 'open'
    try:
        while True:
            d = s.recv(65536)
            if not d: end = 'eof'; break
            out += d
    except socket.timeout: end = 'open'
    except ConnectionResetError: end = 'reset'
    print(json.dumps({'answer': out.decode('latin-1'), 'end': end}))
    """
    let r = try runProcess(which("python3") ?? "/usr/bin/python3",
                           ["-c", script, String(port), request, String(bodyBytes), String(timeout)], timeout: timeout + 30)
    guard r.status == 0, let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: String] else {
        throw ProbeError(message: "raw HTTP/1.1 client failed (\(r.status)): \(r.stderr)")
    }
    return (o["answer"] ?? "", o["end"] ?? "")
}

@Suite(.serialized) struct HTTP1LoopbackTests {
    let message = fcmSeedMessage.replacingOccurrences(of: "TOKEN", with: "abc:123")

    @Test func curlHTTP1AndHTTP2OnTheSamePort() throws {
        try withGateway { g in
            let (rc, status, body) = try curlHTTP1(g.port, body: message)
            #expect(rc == 0 && status == 200)
            #expect(body.hasPrefix("{\"name\":\"projects/pushbench/messages/0:"))
            let (s2, body2) = try curl(g.port, body: message)
            #expect(s2 == 200 && body2.hasPrefix("{\"name\":\"projects/pushbench/messages/0:") && body2 != body)
            let (_, ss, stats) = try curlHTTP1(g.port, path: "/stats", method: "GET", headers: [])
            #expect(ss == 200)
            let o = try #require(try JSONSerialization.jsonObject(with: Data(stats.utf8)) as? [String: Any])
            #expect((o["fcm"] as? [String: Any])?["messages_accepted"] as? Int == 2)
            #expect((o["http1"] as? [String: Any])?["requests"] as? Int == 2)
            #expect(g.stats().http1Requests == 2)
            let (_, sm, metrics) = try curlHTTP1(g.port, path: "/metrics", method: "GET", headers: [])
            #expect(sm == 200 && metrics.contains("pushbench_gateway_"), "\(metrics.prefix(300))")
        }
    }

    @Test func fcmErrorsOverHTTP1CarryTheGoogleRPCBody() throws {
        try withGateway(["--fcm-fail", "UNREGISTERED=1"]) { g in
            let (_, status, body) = try curlHTTP1(g.port, body: message)
            #expect(status == 404 && parseError(body)?.errorCode == "UNREGISTERED")
            let (_, s401, b401) = try curlHTTP1(g.port, body: message, headers: [])
            #expect(s401 == 401 && parseError(b401)?.status == "UNAUTHENTICATED")
        }
    }

    @Test func keepAliveAndExpectContinueWithCurl() throws {
        try withGateway { g in
            // Two requests on one connection (curl reuses it), the second with a 100-continue handshake.
            let r = try runProcess(which("curl") ?? "/usr/bin/curl", [
                "-sv", "--http1.1", "-H", "authorization: Bearer t", "-H", "Expect: 100-continue", "--data-binary", message,
                "http://127.0.0.1:\(g.port)\(fcmPath)", "--next", "-s", "--http1.1", "-H", "authorization: Bearer t",
                "--data-binary", message, "http://127.0.0.1:\(g.port)\(fcmPath)"])
            #expect(r.status == 0)
            #expect(r.stderr.contains("HTTP/1.1 100 Continue"))
            #expect(r.stderr.contains("Re-using existing connection"))
            #expect(r.stdout.components(separatedBy: "projects/pushbench/messages/").count == 3)
            #expect(g.stats().connectionsTotal == 1)
        }
    }

    @Test func curlHTTP2OnCleartextIsAnsweredOverHTTP1() throws {
        // `curl --http2` on http:// sends HTTP/1.1 with `Upgrade: h2c`; the gateway does not switch (RFC 9113
        // deprecates the upgrade) and answers over HTTP/1.1, keeping the connection for the next request.
        try withGateway { g in
            let url = "http://127.0.0.1:\(g.port)"
            let r = try runProcess(which("curl") ?? "/usr/bin/curl", [
                "-sv", "--http2", "--max-time", "30", "-H", "authorization: Bearer t", "-H", "content-type: application/json",
                "--data-binary", message, "-w", "\n%{http_version} %{http_code}\n", url + fcmPath,
                "--next", "-s", "--http2", "--max-time", "30", "-w", "\n%{http_version} %{http_code}\n", url + "/stats"])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.contains("Upgrade: h2c"), "curl asked to upgrade: \(r.stderr)")
            #expect(!r.stderr.contains("101 Switching Protocols"))
            #expect(r.stdout.contains("{\"name\":\"projects/pushbench/messages/0:"), "\(r.stdout)")
            #expect(r.stdout.components(separatedBy: "\n1.1 200\n").count == 3, "both answered over HTTP/1.1: \(r.stdout)")
            #expect(r.stderr.contains("Re-using existing connection"))
            let stats = g.stats()
            #expect(stats.http1Requests == 2 && stats.fcm.messagesAccepted == 1 && stats.connectionsTotal == 1)
            // The APNs route stays HTTP/2-only: the upgrade request is refused as any HTTP/1.1 one is.
            let (rc, _, _) = try curlHTTP1(g.port, path: "/3/device/\(validToken)", body: #"{"aps":{}}"#,
                                           headers: ["apns-topic: a.b"], extra: ["--http2"])
            #expect(rc == 1)
            #expect(g.stats().http1Refused == 1)
        }
    }

    @Test func apnsOverHTTP1IsRefusedAsAPNsDoes() throws {
        try withGateway { g in
            // curl reads binary frames where it expected a status line.
            let (rc, _, _) = try curlHTTP1(g.port, path: "/3/device/\(validToken)", body: #"{"aps":{}}"#, headers: ["apns-topic: a.b"])
            #expect(rc == 1)
            let raw = try rawHTTP1(g.port, "POST /3/device/\(validToken) HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            let latin = raw.answer.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
            // SETTINGS (type 4, stream 0) then GOAWAY (type 7) with PROTOCOL_ERROR and the request line.
            #expect(latin.count > 9 && latin[3] == 4)
            let settingsLength = Int(latin[0]) << 16 | Int(latin[1]) << 8 | Int(latin[2])
            let g0 = 9 + settingsLength
            #expect(latin[g0 + 3] == 7 && latin[g0 + 16] == 1)
            #expect(raw.answer.hasSuffix("Unexpected HTTP/1.x request: POST /3/device/\(validToken) "))
            #expect(raw.end == "eof")
            #expect(g.stats().http1Refused == 2)
            #expect(g.stats().requests == 0)
        }
    }

    @Test(arguments: [
        ("bad request line", "GARBAGE / HTTP/1.1\r\nHost: x\r\n\r\n", 0, 400),
        ("header without a colon", "POST \(fcmPath) HTTP/1.1\r\nHost: x\r\nthis has no colon\r\n\r\n", 0, 400),
        ("Content-Length that lies", "POST \(fcmPath) HTTP/1.1\r\nHost: x\r\nauthorization: Bearer t\r\nContent-Length: 4\r\n\r\n{\"message\":{}}", 0, 400),
        ("100 MB body", "POST \(fcmPath) HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n", 104_857_600, 413),
    ])
    func malformedRequestGetsAClean4xxAndTheGatewayKeepsServing(name: String, request: String, body: Int, status: Int) throws {
        try withGateway { g in
            let raw = try rawHTTP1(g.port, request, bodyBytes: body)
            let lastAnswer = try #require(raw.answer.components(separatedBy: "HTTP/1.1 ").last, "\(name)")
            #expect(lastAnswer.hasPrefix("\(status) "), "\(name): \(raw.answer.prefix(300))")
            #expect(lastAnswer.contains("Connection: close\r\n"), "\(name)")
            #expect(raw.end == "eof", "\(name): the connection ended \(raw.end)")
            let (_, s, _) = try curlHTTP1(g.port, body: message)
            #expect(s == 200, "\(name): the gateway stopped serving")
        }
    }

    /// An FCM send of exactly `size` body bytes (the message, then spaces), by `Content-Length` or in
    /// two chunks; the gateway closes the connection after answering.
    func sizedSend(_ size: Int, chunked: Bool) -> String {
        let body = message + String(repeating: " ", count: size - message.utf8.count)
        let head = "POST \(fcmPath) HTTP/1.1\r\nHost: x\r\nauthorization: Bearer t\r\nConnection: close\r\n"
        if !chunked { return head + "Content-Length: \(size)\r\n\r\n" + body }
        let first = size / 2
        return head + "Transfer-Encoding: chunked\r\n\r\n"
            + String(first, radix: 16) + "\r\n" + body.prefix(first) + "\r\n"
            + String(size - first, radix: 16) + "\r\n" + body.dropFirst(first) + "\r\n0\r\n\r\n"
    }

    @Test(arguments: [false, true])
    func bodiesOverHTTP1FollowMaxBody(chunked: Bool) throws {
        try withGateway(["--max-body", "16KiB"]) { g in
            // At the bound the FCM route reads the body and answers it.
            let at = try rawHTTP1(g.port, sizedSend(16 * 1024, chunked: chunked))
            #expect(at.answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(at.answer.prefix(300))")
            #expect(at.answer.contains("projects/pushbench/messages/"))
            #expect(g.stats().limits["request_body_size"] == nil)
            // One byte over: 413 from the transport, the connection closed, the bound counted.
            let over = try rawHTTP1(g.port, sizedSend(16 * 1024 + 1, chunked: chunked))
            #expect(over.answer.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n"), "\(over.answer.prefix(300))")
            #expect(over.answer.contains("Connection: close\r\n"))
            #expect(over.answer.hasSuffix("the request body is over 16384 bytes\n"))
            #expect(over.end == "eof")
            #expect(g.stats().limits["request_body_size"] == 1)
            #expect(g.stats().fcm.messagesAccepted == 1)
        }
    }
}
