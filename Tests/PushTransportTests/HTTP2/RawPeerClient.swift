@testable import PushTransport

/// Records every outcome of one client's requests, by stream.
final class StreamOutcomes: HTTP2ClientDelegate {
    var connected = false
    var outcomes: [Int32: ResponseOutcome] = [:]
    func connectionDidConnect(_ connection: HTTP2ClientConnection, peerSettings: HTTP2Settings) { connected = true }
    func connection(_ connection: HTTP2ClientConnection, didReceive response: HTTP2Response) {
        var fields: [String] = []
        for i in 0..<response.headers.count {
            let (n, v) = response.headers[i]
            fields.append(String(decoding: n, as: UTF8.self) + ": " + String(decoding: v, as: UTF8.self))
        }
        outcomes[response.streamID] = .response(status: response.status, fields: fields, bodyLength: response.bodyLength,
                                                error: connection.lastProtocolError?.code)
    }
    func connection(_ connection: HTTP2ClientConnection, streamDidFail failure: HTTP2StreamFailure) {
        outcomes[failure.streamID] = .failed(failure.reason, error: connection.lastProtocolError?.code)
    }
}

/// Runs `body` with a fresh client connection (nghttp2's response checks on or off, `libraryChecks`)
/// over an in-memory pair whose other end the test writes raw, once the client has seen that end's
/// empty SETTINGS; closes the client after. `failed` when it did not connect within 2 s.
func withRawPeerClient<R>(loop: EventLoop, libraryChecks: Bool, failed: R,
                          _ body: (HTTP2ClientConnection, InMemoryTransport, StreamOutcomes) -> R) -> R {
    let recorder = StreamOutcomes()
    let client = HTTP2ClientConnection(loop: loop, delegate: recorder)
    client.libraryChecksResponses = libraryChecks
    defer {
        client.close()
        client.delegate = nil
    }
    let (mine, peer) = InMemoryTransport.pair(loop: loop)
    client.connect(over: mine)
    peer.send(RawPeer.frame(type: 0x4, flags: 0, stream: 0, []))
    guard loop.run(until: { recorder.connected }, timeoutNanoseconds: 2 * seconds) else { return failed }
    return body(client, peer, recorder)
}
