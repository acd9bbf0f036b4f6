/// A raw-frame HTTP/2 client (python hyperframe and hpack, h2c prior knowledge) that sends a frame on a
/// stream it has already closed, the way h2spec's "5.1. Stream States" cases do, and reports how the
/// server answered. Kept as a Swift string, as the probe is; written to a temporary file on first use.
let lateFrameSource = #"""
#!/usr/bin/env python3
"""Late frames on closed streams, for the mock gateway tests.

Usage: lateframe.py PORT CASE PATH
CASE: half-closed-data, half-closed-headers  (the request ended, the response has not left yet)
      reset-data, reset-headers              (the client reset the stream)
      closed-data, closed-headers            (the response ended the stream)
Prints one JSON object: {"answer": {"type": "RST_STREAM" | "GOAWAY", "stream": n, "error_code": n} | null,
"responded": bool (a frame on stream 1 came before the late one was sent)}.
"""
import json, socket, sys, time
import hpack
from hyperframe.frame import (DataFrame, Frame, GoAwayFrame, HeadersFrame, RstStreamFrame, SettingsFrame)

port, case, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
sock = socket.create_connection(("127.0.0.1", port), timeout=0.2)
encoder = hpack.Encoder()
buf = b""


def frames(seconds):
    """Frames the server sends within `seconds`."""
    global buf
    deadline = time.time() + seconds
    while time.time() < deadline:
        while len(buf) >= 9:
            frame, length = Frame.parse_frame_header(memoryview(buf[:9]))
            if len(buf) < 9 + length:
                break
            frame.parse_body(memoryview(buf[9:9 + length]))
            buf = buf[9 + length:]
            yield frame
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            return
        if not chunk:
            return
        buf += chunk


def headers(end_stream):
    block = encoder.encode([(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "localhost"),
                            ("apns-topic", "com.example.app")])
    f = HeadersFrame(1, block)
    f.flags.add("END_HEADERS")
    if end_stream:
        f.flags.add("END_STREAM")
    sock.sendall(f.serialize())


def data(end_stream):
    f = DataFrame(1, b'{"aps":{"alert":"hi"}}')
    if end_stream:
        f.flags.add("END_STREAM")
    sock.sendall(f.serialize())


sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SettingsFrame(0).serialize())
for f in frames(5):
    if isinstance(f, SettingsFrame) and "ACK" not in f.flags:
        ack = SettingsFrame(0)
        ack.flags.add("ACK")
        sock.sendall(ack.serialize())
        break

responded = False
kind, late = case.rsplit("-", 1)
if kind == "reset":
    headers(False)
    sock.sendall(RstStreamFrame(1, error_code=8).serialize())
    time.sleep(0.1)
else:
    headers(False)
    data(True)
    if kind == "closed":
        for f in frames(5):
            if f.stream_id == 1 and "END_STREAM" in f.flags:
                responded = True
                break
    else:
        responded = any(f.stream_id == 1 for f in frames(0.1))
if late == "data":
    data(True)
else:
    headers(True)

answer = None
for f in frames(5):
    if isinstance(f, RstStreamFrame) and f.stream_id == 1:
        answer = {"type": "RST_STREAM", "stream": 1, "error_code": f.error_code}
        break
    if isinstance(f, GoAwayFrame):
        answer = {"type": "GOAWAY", "stream": 0, "error_code": f.error_code}
        break
print(json.dumps({"answer": answer, "responded": responded}))
"""#
