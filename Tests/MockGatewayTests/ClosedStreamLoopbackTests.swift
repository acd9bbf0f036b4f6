import Foundation
import Testing
@testable import MockGateway

/// h2spec's "5.1. Stream States" cases against the gateway over a real socket, with a raw-frame client
/// (python hyperframe): DATA or HEADERS on a stream the client already closed, before or after the
/// gateway's answer, get STREAM_CLOSED (RFC 9113 §5.1), as nghttpd answers them, instead of silence.
@Suite(.serialized) struct ClosedStreamLoopbackTests {
    struct Outcome {
        var type: String?
        var errorCode: Int?
        var responded: Bool
    }

    static let script = temporaryScript("lateframe", lateFrameSource)

    func send(_ kind: String, port: Int) throws -> Outcome {
        let r = try runProcess(which("python3") ?? "/usr/bin/python3", [Self.script, String(port), kind, "/3/device/" + validToken],
                               timeout: 30)
        guard r.status == 0, let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] else {
            throw ProbeError(message: "lateframe.py \(kind) failed (\(r.status)): \(r.stderr)")
        }
        let answer = o["answer"] as? [String: Any]
        return Outcome(type: answer?["type"] as? String, errorCode: answer?["error_code"] as? Int, responded: o["responded"] as! Bool)
    }

    /// The gateway holds the answer back (--latency), so the stream is half-closed (remote) when the late frame arrives.
    @Test(arguments: ["half-closed-data", "half-closed-headers"])
    func lateFrameOnAHalfClosedStream(kind: String) throws {
        try withGateway(["--latency", "1s"]) { gateway in
            let o = try send(kind, port: gateway.port)
            #expect(!o.responded, "the answer was held back")
            #expect(o.type != nil && o.errorCode == 5, "STREAM_CLOSED, got \(o)")
        }
    }

    @Test(arguments: ["reset-data", "reset-headers", "closed-data", "closed-headers"])
    func lateFrameOnAClosedStream(kind: String) throws {
        try withGateway { gateway in
            let o = try send(kind, port: gateway.port)
            #expect(o.responded == kind.hasPrefix("closed"))
            #expect(o.type != nil && o.errorCode == 5, "STREAM_CLOSED, got \(o)")
        }
    }
}
