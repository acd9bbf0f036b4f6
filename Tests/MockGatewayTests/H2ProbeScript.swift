/// The frame-level HTTP/2 probe (python h2), kept as a Swift string so the test target has no
/// unhandled resource file; written to a temporary file on first use.
let probeSource = #"""
#!/usr/bin/env python3
"""Frame-level HTTP/2 probe for the mock gateway tests (python h2, h2c prior knowledge).

Usage: h2probe.py PORT SPEC_JSON
SPEC: {"requests": [{"headers": [[name, value], ...], "body": "text"}, ...],
       "sequential": false, "timeout": 10}
Prints one JSON object: {"streams": {id: {...}}, "goaway": {...} | null, "settings": [...], "closed": bool}.
Each stream: status, headers (list), data_frames, body, ended_on_headers, reset (error code or null),
never_indexed (names the server sent as never-indexed HPACK literals).
"""
import json, socket, sys, time
import h2.config, h2.connection, h2.events

port = int(sys.argv[1])
spec = json.loads(sys.argv[2])
deadline = time.time() + spec.get("timeout", 10)

sock = socket.create_connection(("127.0.0.1", port), timeout=2)
conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                                                   validate_outbound_headers=False,
                                                                   normalize_outbound_headers=False))
conn.initiate_connection()
sock.sendall(conn.data_to_send())

streams, settings, goaway, closed, pending, error = {}, [], None, False, set(), None


def send(req):
    sid = conn.get_next_available_stream_id()
    body = req.get("body", "").encode()
    if "body_size" in req:
        body = b'{"a":"' + b"x" * (req["body_size"] - 8) + b'"}'

    end = len(body) == 0
    streams[sid] = {"status": None, "headers": [], "data_frames": 0, "body": "", "ended_on_headers": False, "reset": None,
                    "never_indexed": []}
    pending.add(sid)
    conn.send_headers(sid, [tuple(h) for h in req["headers"]], end_stream=end)
    if not end:
        offset = 0
        while offset < len(body):
            window = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size)
            if window <= 0:
                sock.sendall(conn.data_to_send())
                pump()
                if closed or sid not in pending:
                    return
                continue
            chunk = body[offset:offset + window]
            offset += len(chunk)
            conn.send_data(sid, chunk, end_stream=offset >= len(body))
    sock.sendall(conn.data_to_send())


def pump():
    global goaway, closed
    try:
        data = sock.recv(65536)
    except socket.timeout:
        return
    if not data:
        closed = True
        return
    for ev in conn.receive_data(data):
        if isinstance(ev, h2.events.ResponseReceived):
            s = streams[ev.stream_id]
            s["headers"] = [[k, v] for k, v in ev.headers]
            s["never_indexed"] = [h[0] for h in ev.headers if type(h).__name__ == "NeverIndexedHeaderTuple"]
            s["status"] = int(dict(ev.headers)[":status"])
            if ev.stream_ended is not None:
                s["ended_on_headers"] = True
        elif isinstance(ev, h2.events.DataReceived):
            s = streams[ev.stream_id]
            s["data_frames"] += 1
            s["body"] += ev.data.decode()
            conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, h2.events.StreamEnded):
            pending.discard(ev.stream_id)
        elif isinstance(ev, h2.events.StreamReset):
            streams[ev.stream_id]["reset"] = int(ev.error_code)
            pending.discard(ev.stream_id)
        elif isinstance(ev, h2.events.RemoteSettingsChanged):
            for k, v in ev.changed_settings.items():
                settings.append([int(k), v.new_value])
        elif isinstance(ev, h2.events.ConnectionTerminated):
            goaway = {"error_code": int(ev.error_code), "last_stream_id": ev.last_stream_id,
                      "debug": (ev.additional_data or b"").decode()}
            if int(ev.error_code) == 0:
                # python h2 treats every GOAWAY as the end; a graceful one (NO_ERROR) still lets the
                # streams up to last_stream_id finish, which is what the tests check.
                conn.state_machine.state = h2.connection.ConnectionState.CLIENT_OPEN
                for sid in list(pending):
                    if sid > ev.last_stream_id:
                        pending.discard(sid)
    out = conn.data_to_send()
    if out:
        try:
            sock.sendall(out)
        except OSError:
            closed = True


try:
    if spec.get("sequential"):
        for req in spec["requests"]:
            send(req)
            while pending and not closed and time.time() < deadline:
                pump()
            if closed:
                break
    else:
        for req in spec["requests"]:
            send(req)
    while pending and not closed and time.time() < deadline:
        pump()
    # Collect a GOAWAY or a close that follows the last response.
    linger = time.time() + spec.get("linger", 0.3)
    while not closed and time.time() < linger:
        pump()
except (ConnectionError, OSError, h2.exceptions.ProtocolError) as e:
    closed = True
    error = repr(e)

print(json.dumps({"streams": streams, "goaway": goaway, "settings": settings, "closed": closed,
                  "pending": sorted(pending), "error": error}))
"""#
