/// An h2c server (python h2) that answers every request 200 and records how each request header field
/// was HPACK-coded, kept as a Swift string so the test target has no unhandled resource file.
let hpackRecorderSource = #"""
#!/usr/bin/env python3
"""Records the HPACK representation of every request header field (python h2, h2c prior knowledge).

Usage: hpack_recorder.py
Prints the port it listens on, answers every request 200 until stdin closes, then prints one JSON list:
one entry per connection, each a list of requests in stream order, each a list of
[name, value, representation, name_indexed] where representation is "indexed", "incremental",
"without" (literal without indexing) or "never" (never-indexed literal), and name_indexed says whether a
literal referred to its name by table index.
"""
import json, socket, sys, threading
import h2.config, h2.connection, h2.events

connections, lock = [], threading.Lock()


def representations(block):
    """The kind of each field representation of a header block, in order (size updates skipped)."""
    i, out = 0, []

    def integer(prefix):
        nonlocal i
        mask = (1 << prefix) - 1
        v = block[i] & mask
        i += 1
        if v == mask:
            shift = 0
            while True:
                b = block[i]
                i += 1
                v += (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
        return v

    def string():
        nonlocal i
        n = integer(7)
        i += n

    while i < len(block):
        b = block[i]
        if b & 0x80:
            integer(7)
            out.append(("indexed", True))
        elif b & 0x40:
            idx = integer(6)
            if idx == 0:
                string()
            string()
            out.append(("incremental", idx != 0))
        elif b & 0x20:
            integer(5)
        else:
            kind = "never" if b & 0x10 else "without"
            idx = integer(4)
            if idx == 0:
                string()
            string()
            out.append((kind, idx != 0))
    return out


def receive(sock):
    """The next bytes from the client; b"" once it has gone."""
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def serve(sock):
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    decode = conn.decoder.decode
    requests = {}
    blocks = []

    def recording(data, raw=False):
        headers = decode(data, raw=raw)
        blocks.append([[h[0].decode() if isinstance(h[0], bytes) else h[0],
                        h[1].decode() if isinstance(h[1], bytes) else h[1], kind, named]
                       for h, (kind, named) in zip(headers, representations(bytes(data)))])
        return headers

    conn.decoder.decode = recording
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    with lock:
        connections.append(requests)
    for data in iter(lambda: receive(sock), b""):
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.RequestReceived):
                with lock:
                    requests[ev.stream_id] = blocks.pop(0)
            elif isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                conn.send_headers(ev.stream_id, [(":status", "200")], end_stream=True)
        sock.sendall(conn.data_to_send())


listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
print(listener.getsockname()[1], flush=True)


def accept():
    while True:
        s, _ = listener.accept()
        threading.Thread(target=serve, args=(s,), daemon=True).start()


threading.Thread(target=accept, daemon=True).start()
sys.stdin.read()
with lock:
    print(json.dumps([[c[k] for k in sorted(c)] for c in connections]), flush=True)
"""#
