#!/usr/bin/env python3
"""The gateway abuse battery: hostile and careless clients against `pushbench gateway` (h2c, and HTTP/1.1
in cleartext and over TLS).

Usage: abuse.py PUSHBENCH [--fuzz N] [--seed S] [--probe-ms MS] [--rss-budget-mb MB] [--only NAME,...]
                [--http1-seconds S]

Starts `PUSHBENCH gateway` on a free loopback port with short timeouts, then runs each case: the abuse
(malformed and truncated frames of every type, invalid HPACK, HPACK bombs, CONTINUATION floods, rapid
reset, SETTINGS/PING/WINDOW_UPDATE floods, never-reading and zero-window clients, slowloris, held
bodies, oversized paths and headers, hostile JSON, thousands of idle connections, a seeded random frame
fuzzer). While the abuse holds its sockets open and again after it let go, a normal request on a fresh
connection must be answered within --probe-ms (best of 5 tries; default 100), the gateway must still
run, and its peak RSS (VmHWM, /proc) must stay under --rss-budget-mb (default 200). After the idle
connections close, their memory must go back (RSS within a quarter of what they took, plus 8 MiB).

The HTTP/1.1 cases each start a gateway of their own (cleartext, then --tls with ALPN http/1.1) and watch
its RSS: pipelining clients that never read their answers, on /stats, the FCM route and the token
endpoint, for --http1-seconds (default 20) must keep it under 64 MiB and be closed within the write
timeout; 2,000 connections holding unfinished 64 KiB bodies must stay within --max-body-total.
Prints one line per case ("ok NAME ..." or "FAIL NAME: why") and exits 1 when any failed.
"""
import argparse
import os
import random
import resource
import select
import re
import socket
import ssl
import subprocess
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
TOKEN = "ab" * 32
BODY = b'{"aps":{"alert":"hi"}}'
END_STREAM, END_HEADERS, PADDED, ACK = 0x1, 0x4, 0x8, 0x1

args = None
gateway = None
port = 0


def frame(ftype, flags, stream, payload=b"", length=None):
    n = len(payload) if length is None else length
    return bytes([n >> 16 & 0xFF, n >> 8 & 0xFF, n & 0xFF, ftype, flags]) + (stream & 0xFFFFFFFF).to_bytes(4, "big") + payload


def settings(*pairs):
    return frame(0x4, 0, 0, b"".join(k.to_bytes(2, "big") + v.to_bytes(4, "big") for k, v in pairs))


def request_headers(path="/3/device/" + TOKEN, extra=()):
    return [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "localhost"),
            ("apns-topic", "com.example.app")] + list(extra)


def connect(hello=True):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if hello:
        s.sendall(PREFACE + settings())
    return s


def send_quietly(s, data):
    """Sends what the gateway takes; it may close the connection part way (that is its right)."""
    try:
        s.settimeout(5)
        s.sendall(data)
        return True
    except OSError:
        return False


def drain(s, seconds=0.5):
    """Reads what the gateway wrote for a while; returns (bytes, closed)."""
    out, deadline = b"", time.time() + seconds
    s.setblocking(False)
    while time.time() < deadline:
        r, _, _ = select.select([s], [], [], max(0, deadline - time.time()))
        if not r:
            break
        try:
            chunk = s.recv(65536)
        except BlockingIOError:
            continue
        except OSError:
            return out, True
        if not chunk:
            return out, True
        out += chunk
    return out, False


def goaway_code(data):
    i = 0
    while i + 9 <= len(data):
        n = int.from_bytes(data[i:i + 3], "big")
        if data[i + 3] == 0x7 and i + 9 + 8 <= len(data):
            return int.from_bytes(data[i + 13:i + 17], "big")
        i += 9 + n
    return None


def probe_once():
    """One normal request on a fresh connection; returns milliseconds to the answer, or None."""
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
    except OSError:
        return None
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        c.initiate_connection()
        c.send_headers(1, request_headers())
        c.send_data(1, BODY, end_stream=True)
        s.sendall(c.data_to_send())
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            data = s.recv(65536)
            if not data:
                return None
            for ev in c.receive_data(data):
                if isinstance(ev, h2.events.ResponseReceived):
                    status = dict(ev.headers).get(":status")
                    return (time.monotonic() - t0) * 1000 if status == "200" else None
            s.sendall(c.data_to_send())
        return None
    except (OSError, h2.exceptions.H2Error):
        return None
    finally:
        s.close()


def probe():
    """The best of five probes (the machine is shared: one slow turn is not the gateway's doing)."""
    best = None
    for _ in range(5):
        ms = probe_once()
        if ms is not None and (best is None or ms < best):
            best = ms
        if best is not None and best <= args.probe_ms:
            break
        time.sleep(0.05)
    return best


def status_kb(field):
    with open(f"/proc/{gateway.pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak():
    # Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+).
    try:
        with open(f"/proc/{gateway.pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


# ---- the cases: each does its abuse and returns the sockets it still holds -------------------------

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


MALFORMED = {
    "data-on-stream-0": frame(0x0, 0, 0, b"xyz"),
    "headers-on-stream-0": frame(0x1, END_HEADERS, 0, b"\x82"),
    "headers-even-stream": frame(0x1, END_HEADERS | END_STREAM, 2, b"\x83\x86\x84"),
    "headers-bad-padding": frame(0x1, END_HEADERS | PADDED, 1, b"\xff\x83"),
    "priority-length-4": frame(0x2, 0, 1, b"\0\0\0\0"),
    "priority-on-stream-0": frame(0x2, 0, 0, b"\0\0\0\1\x10"),
    "rst-on-stream-0": frame(0x3, 0, 0, b"\0\0\0\1"),
    "rst-length-3": frame(0x3, 0, 1, b"\0\0\0"),
    "rst-idle-stream": frame(0x3, 0, 99, b"\0\0\0\1"),
    "settings-length-5": frame(0x4, 0, 0, b"\0\1\0\0\0"),
    "settings-ack-with-payload": frame(0x4, ACK, 0, b"\0\1\0\0\0\0"),
    "settings-on-stream-1": frame(0x4, 0, 1, b""),
    "settings-enable-push-2": settings((0x2, 2)),
    "settings-window-too-big": settings((0x4, 1 << 31)),
    "settings-frame-size-too-small": settings((0x5, 100)),
    "push-promise-from-client": frame(0x5, END_HEADERS, 1, b"\0\0\0\2\x82"),
    "ping-length-7": frame(0x6, 0, 0, b"\0" * 7),
    "ping-on-stream-1": frame(0x6, 0, 1, b"\0" * 8),
    "goaway-length-4": frame(0x7, 0, 0, b"\0\0\0\0"),
    "goaway-on-stream-1": frame(0x7, 0, 1, b"\0" * 8),
    "window-update-length-3": frame(0x8, 0, 0, b"\0\0\1"),
    "window-update-zero": frame(0x8, 0, 0, b"\0\0\0\0"),
    "window-update-overflow": frame(0x8, 0, 0, (0x7FFFFFFF).to_bytes(4, "big")) * 2,
    "continuation-without-headers": frame(0x9, END_HEADERS, 1, b"\x82"),
    "unknown-type": frame(0xFA, 0xFF, 7, b"whatever"),
    "oversized-frame": frame(0x0, 0, 1, b"\0" * 20000),
    "length-beyond-max": frame(0x1, END_HEADERS, 1, b"", length=0xFFFFFF),
}


@case
def malformed_frames():
    """A malformed frame of every type, each on its own connection."""
    held, notes = [], []
    for name, bad in MALFORMED.items():
        s = connect()
        send_quietly(s, bad)
        data, closed = drain(s, 0.2)
        code = goaway_code(data)
        if code is not None or closed:
            notes.append(name)
        held.append(s)
    return held, f"{len(notes)} of {len(MALFORMED)} answered GOAWAY or closed"


@case
def truncated_frames():
    """Frames cut off mid-header and mid-payload, of every type, then a truncated preface; closed."""
    for ftype in list(range(10)) + [0xFA]:
        for cut in (4, 12):
            s = connect()
            send_quietly(s, frame(ftype, 0, 1, b"\0" * 100)[:cut])
            s.close()
    for cut in (3, 10, 23):
        s = connect(hello=False)
        send_quietly(s, PREFACE[:cut])
        s.close()
    return [], ""


@case
def invalid_hpack():
    """Header blocks HPACK cannot decode: an index past both tables, an integer overflow, a bad Huffman."""
    held = []
    for block in (b"\xff\x49", b"\x82\xff\xff\xff\xff\xff\xff\x0f", b"\x40\x81\xff\x01a", b"\x3f\xe1\xff\xff\x0f"):
        s = connect()
        send_quietly(s, frame(0x1, END_HEADERS | END_STREAM, 1, block))
        held.append(s)
    return held, ""


def hpack_bomb(entry_bytes, references):
    e = hpack.Encoder()
    block = e.encode(request_headers())
    name = b"x-bomb"
    literal = b"\x40" + bytes([len(name)]) + name + hpack_int(entry_bytes, 7, 0) + b"a" * entry_bytes
    return block + literal + bytes([0x80 | 62]) * references


def hpack_int(value, prefix, high):
    limit = (1 << prefix) - 1
    if value < limit:
        return bytes([high | value])
    out, value = [high | limit], value - limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


@case
def hpack_bombs():
    """Header blocks of ~14 KB decoding to 40 MB each (a 4 KB entry referenced 10,000 times), held open."""
    held = []
    for _ in range(4):
        s = connect()
        data = b""
        for k in range(10):
            block = hpack_bomb(4000, 10000)
            sid = 1 + 2 * k
            data += frame(0x1, 0, sid, block[:16000]) + frame(0x9, END_HEADERS, sid, block[16000:])
        send_quietly(s, data)
        held.append(s)
    return held, ""


@case
def continuation_flood():
    """One HEADERS then CONTINUATION frames without end, each adding a header field."""
    s = connect()
    e = hpack.Encoder()
    data = frame(0x1, 0, 1, e.encode(request_headers()))
    chunk = b"".join(frame(0x9, 0, 1, b"\x40\x01x\x08yyyyyyyy") for _ in range(1000))
    sent = 0
    for _ in range(100):
        if not send_quietly(s, data + chunk if sent == 0 else chunk):
            break
        sent += 1000
    return [s], f"{sent} CONTINUATION frames taken before the gateway stopped reading or closed"


@case
def rapid_reset():
    """20,000 requests each reset at once by the client (CVE-2023-44487)."""
    s = connect()
    e = hpack.Encoder()
    batch, sid = b"", 1
    for _ in range(20000):
        batch += frame(0x1, END_HEADERS, sid, e.encode(request_headers())) + frame(0x3, 0, sid, b"\0\0\0\x08")
        sid += 2
        if len(batch) > 64000:
            if not send_quietly(s, batch):
                break
            batch = b""
    send_quietly(s, batch)
    data, closed = drain(s, 0.5)
    return [s], f"goaway {goaway_code(data)}" if goaway_code(data) is not None else ("closed" if closed else "")


def flood(one, count, name):
    s = connect()
    chunk = one * 1000
    for _ in range(count // 1000):
        if not send_quietly(s, chunk):
            break
    data, closed = drain(s, 0.3)
    code = goaway_code(data)
    return [s], f"{name}: goaway {code}" if code is not None else (f"{name}: closed" if closed else name)


@case
def settings_flood():
    return flood(settings((0x3, 100)), 50000, "settings")


@case
def ping_flood():
    return flood(frame(0x6, 0, 0, b"12345678"), 50000, "ping")


@case
def window_update_flood():
    return flood(frame(0x8, 0, 0, b"\0\0\0\1"), 50000, "window_update")


@case
def never_reading():
    """Clients that send thousands of requests and never read an answer (small receive buffer)."""
    held = []
    for _ in range(8):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        e = hpack.Encoder()
        data = PREFACE + settings()
        for k in range(5000):
            data += frame(0x1, END_HEADERS, 1 + 2 * k, e.encode(request_headers("/3/device/zz"))) + frame(0x0, END_STREAM, 1 + 2 * k, BODY)
        s.setblocking(False)
        try:
            s.send(data)
        except OSError:
            pass
        held.append(s)
    return held, ""


@case
def zero_window():
    """A client whose stream window is 0: answers with bodies can never be sent."""
    s = connect(hello=False)
    e = hpack.Encoder()
    data = PREFACE + settings((0x4, 0))
    for k in range(900):
        data += frame(0x1, END_HEADERS, 1 + 2 * k, e.encode(request_headers("/3/device/zz"))) + frame(0x0, END_STREAM, 1 + 2 * k, BODY)
    send_quietly(s, data)
    return [s], ""


@case
def slowloris():
    """500 connections that send part of the preface and stop; 100 whose request body trickles."""
    held = []
    for k in range(500):
        s = connect(hello=False)
        send_quietly(s, PREFACE[:5 + k % 15])
        held.append(s)
    for k in range(100):
        s = connect()
        e = hpack.Encoder()
        send_quietly(s, frame(0x1, END_HEADERS, 1, e.encode(request_headers())) + frame(0x0, 0, 1, b"{"))
        held.append(s)
    return held, ""


@case
def held_bodies():
    """8 connections each holding 100 streams with 60 KiB bodies and no END_STREAM."""
    held = []
    for _ in range(8):
        s = connect(hello=False)
        e = hpack.Encoder()
        data = PREFACE + settings()
        # Connection and stream windows wide enough for the bodies.
        data += frame(0x8, 0, 0, (100 << 20).to_bytes(4, "big"))
        for k in range(100):
            sid = 1 + 2 * k
            data += frame(0x1, END_HEADERS, sid, e.encode(request_headers()))
            for off in range(0, 60 * 1024, 16384):
                data += frame(0x0, 0, sid, b"x" * min(16384, 60 * 1024 - off))
        send_quietly(s, data)
        held.append(s)
    return held, ""


@case
def oversized_headers():
    """A 100 KB path, 200 headers of 1 KB, one 64 KB header value."""
    held = []
    for headers in (request_headers("/3/device/" + "a" * 100000), request_headers(extra=[(f"x-h{k}", "v" * 1000) for k in range(200)]),
                    request_headers(extra=[("x-big", "v" * 65536)])):
        s = connect()
        block = hpack.Encoder().encode(headers)
        data = frame(0x1, END_STREAM if len(block) <= 16384 else 0, 1, block[:16384])
        rest = block[16384:]
        while rest:
            piece, rest = rest[:16384], rest[16384:]
            data += frame(0x9, END_HEADERS if not rest else 0, 1, piece)
        if len(block) <= 16384:
            data = frame(0x1, END_HEADERS | END_STREAM, 1, block)
        send_quietly(s, data)
        held.append(s)
    return held, ""


@case
def hostile_json():
    """Payloads no sender should send: deep nesting, invalid UTF-8, NULs, huge numbers, 5 KB + 1."""
    # Each within the gateway's windows; over 5 KB is answered 413 before any parsing.
    bodies = [b"[" * 4000, b'{"aps":' * 600, b'{"aps":{"alert":"\xff\xfe\xc0\x80"}}', b'{"aps":{"alert":"a\x00b"}}',
              b'{"aps":{"badge":' + b"9" * 4000 + b"}}", b'{"aps":{"alert":"' + b"x" * 5000 + b'"}}', b"", b"\xef\xbb\xbf{}",
              b'{"aps":{},"aps":{}}', b'{"aps":{"alert":"\\ud800"}}', b"null", b"{" + b'"k":1,' * 600, b'{"aps":{"alert":"\x1b[31mred\x1b]0;title\x07"}}']
    answered = 0
    for body in bodies:
        c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        s = connect(hello=False)
        c.initiate_connection()
        c.update_settings({0x4: 1 << 20})
        c.increment_flow_control_window(1 << 24)
        c.send_headers(1, request_headers())
        for off in range(0, max(1, len(body)), 16384):
            c.send_data(1, body[off:off + 16384], end_stream=off + 16384 >= len(body))
        send_quietly(s, c.data_to_send())
        data, _ = drain(s, 1)
        try:
            if any(isinstance(ev, h2.events.ResponseReceived) for ev in c.receive_data(data)):
                answered += 1
        except h2.exceptions.H2Error:
            pass
        s.close()
    if answered != len(bodies):
        raise AssertionError(f"only {answered} of {len(bodies)} hostile payloads were answered")
    return [], f"{answered} answered"


@case
def idle_connections_return_their_memory():
    """2,000 connections that finish the handshake and idle; their memory must come back after close."""
    before = status_kb("VmRSS")
    held = []
    for _ in range(2000):
        s = connect()
        held.append(s)
    time.sleep(0.5)
    peak = status_kb("VmRSS")
    for s in held:
        s.close()
    time.sleep(3)
    after = status_kb("VmRSS")
    took = max(0, peak - before)
    if after > before + took / 4 + 8 * 1024:
        raise AssertionError(f"RSS {before} KiB before, {peak} with 2000 connections, {after} after they closed")
    return [], f"RSS {before // 1024} -> {peak // 1024} -> {after // 1024} MiB"


# ---- HTTP/1.1: each case runs against a gateway of its own, cleartext and over TLS ----------------------

FCM_BODY = b'{"message":{"token":"' + b"t" * 140 + b'","notification":{"title":"hi"}}}'
HTTP1_REQUESTS = (
    b"GET /stats HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"POST /v1/projects/pushbench/messages:send HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    b"Content-Length: " + str(len(FCM_BODY)).encode() + b"\r\n\r\n" + FCM_BODY,
    b"POST /token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    b"Content-Length: 10\r\n\r\ngrant_type",
)
HTTP1_BUDGET_MB = 64


def start_own_gateway(extra):
    """A gateway of the case's own; returns (process, port)."""
    g = subprocess.Popen([args.pushbench, "gateway", "--listen", "127.0.0.1:0", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = ""
    for _ in range(4):
        line = g.stdout.readline()
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            return g, int(m.group(1))
    g.kill()
    raise AssertionError(f"the case's gateway printed no listening line: {line!r}")


def stop_own_gateway(g):
    if g.poll() is None:
        g.terminate()
        try:
            g.wait(10)
        except subprocess.TimeoutExpired:
            g.kill()


def pid_status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def http1_connect(gport, tls, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(5)
    s.connect(("127.0.0.1", gport))
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["http/1.1"])
        s = ctx.wrap_socket(s)
    return s


def http1_stats(gport, tls):
    """GET /stats over HTTP/1.1 on a fresh connection; the JSON as a dict."""
    import json
    s = http1_connect(gport, tls)
    try:
        s.sendall(b"GET /stats HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return json.loads(data.split(b"\r\n\r\n", 1)[1])
    finally:
        s.close()


def http1_never_reading(tls):
    """Pipelining clients that never read: the gateway must stop reading them, stay under the budget
    and close each within the write timeout; it counts the limits in /stats."""
    write_timeout = 2
    extra = ["--write-timeout", f"{write_timeout}s"]
    if tls:
        extra += ["--tls", "--tls-cert-out", f"/tmp/pushbench-abuse-{os.getpid()}.pem"]
    g, gport = start_own_gateway(extra)
    try:
        chunk = b"".join(HTTP1_REQUESTS) * 300
        conns, closes, slowest, peak = [], 0, 0.0, 0
        deadline = time.monotonic() + args.http1_seconds
        while time.monotonic() < deadline and g.poll() is None:
            while len(conns) < 4:
                s = http1_connect(gport, tls, rcvbuf=4096)
                s.setblocking(False)
                conns.append({"s": s, "off": 0, "stalled": None})
            for c in list(conns):
                try:
                    n = c["s"].send(chunk[c["off"]:])
                    c["off"] = (c["off"] + n) % len(chunk)
                    c["stalled"] = None
                except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                    if c["stalled"] is None:
                        c["stalled"] = time.monotonic()
                except OSError:
                    # The gateway closed it: how long after it stopped taking requests.
                    if c["stalled"] is not None:
                        slowest = max(slowest, time.monotonic() - c["stalled"])
                    closes += 1
                    c["s"].close()
                    conns.remove(c)
                    continue
                if c["stalled"] is not None and time.monotonic() - c["stalled"] > write_timeout + 5:
                    raise AssertionError(f"a client that reads nothing was still open {write_timeout + 5} s after it"
                                         f" stalled (--write-timeout {write_timeout}s)")
            peak = max(peak, pid_status_kb(g.pid, "VmHWM"))
            time.sleep(0.005)
        for c in conns:
            c["s"].close()
        if g.poll() is not None:
            raise AssertionError(f"the gateway exited with {g.returncode}")
        peak = max(peak, pid_status_kb(g.pid, "VmHWM")) // 1024
        limits = http1_stats(gport, tls).get("limits", {})
        why = []
        if peak > HTTP1_BUDGET_MB:
            why.append(f"peak RSS {peak} MiB over {HTTP1_BUDGET_MB} MiB")
        if closes == 0:
            why.append(f"no connection was closed in {args.http1_seconds} s")
        if limits.get("write_timeout", 0) == 0 or limits.get("outbound_queue", 0) == 0:
            why.append(f"/stats limits {limits} count no write_timeout or outbound_queue")
        if why:
            raise AssertionError("; ".join(why))
        return [], f"gateway peak RSS {peak} MiB; {closes} closed, the slowest {slowest:.1f} s after it stalled"
    finally:
        stop_own_gateway(g)


@case
def http1_pipelining_never_reads():
    """HTTP/1.1 clients that pipeline requests to every route and never read an answer (cleartext)."""
    return http1_never_reading(tls=False)


@case
def http1_pipelining_never_reads_tls():
    """The same over TLS (ALPN http/1.1)."""
    return http1_never_reading(tls=True)


@case
def http1_held_bodies():
    """2,000 HTTP/1.1 connections each holding an unfinished 64 KiB body: within --max-body-total."""
    total_mb = 16
    g, gport = start_own_gateway(["--max-body-total", f"{total_mb}MiB", "--request-timeout", "30s"])
    held = []
    try:
        base = pid_status_kb(g.pid, "VmRSS")
        head = (b"POST /v1/projects/pushbench/messages:send HTTP/1.1\r\nHost: localhost\r\n"
                b"Content-Type: application/json\r\nContent-Length: 65536\r\n\r\n")
        body = b"x" * 65535
        for _ in range(2000):
            s = http1_connect(gport, False)
            s.setblocking(False)
            try:
                s.send(head + body)
            except OSError:
                pass
            held.append(s)
        time.sleep(1)
        peak = pid_status_kb(g.pid, "VmHWM")
        refused = 0
        for s in held:
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1.1 503") and b"Retry-After:" in data:
                refused += 1
        limits = http1_stats(gport, False).get("limits", {})
        took = (peak - base) // 1024
        # Each connection costs some memory of its own beside its body; the bodies may take the total.
        allowed = total_mb + 2000 * 16 // 1024
        why = []
        if took > allowed:
            why.append(f"RSS grew {took} MiB with 2000 held bodies, over {allowed} MiB ({total_mb} MiB --max-body-total)")
        if refused == 0 or limits.get("body_memory", 0) == 0:
            why.append(f"no body was refused with 503 and Retry-After ({refused}; /stats limits {limits})")
        if why:
            raise AssertionError("; ".join(why))
        return [], f"RSS {base // 1024} -> {peak // 1024} MiB; {refused} answered 503"
    finally:
        for s in held:
            s.close()
        stop_own_gateway(g)


@case
def fuzz():
    """Seeded random frames after a valid preface, each burst on its own connection."""
    rng = random.Random(args.seed)
    for k in range(args.fuzz):
        s = connect()
        data = b""
        for _ in range(rng.randint(1, 8)):
            ftype = rng.choice(list(range(10)) + [rng.randint(10, 255)])
            stream = rng.choice([0, 1, 3, 2, rng.randint(0, 0x7FFFFFFF)])
            payload = bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 4, 5, 8, 9, rng.randint(0, 300)])))
            if ftype == 0x1 and rng.random() < 0.5:
                payload = hpack.Encoder().encode(request_headers()) + payload[:8]
            data += frame(ftype, rng.getrandbits(8), stream, payload)
        send_quietly(s, data)
        drain(s, 0.01)
        s.close()
        if k % 100 == 99 and gateway.poll() is not None:
            raise AssertionError(f"the gateway exited at fuzz iteration {k + 1} (seed {args.seed})")
    return [], f"{args.fuzz} iterations, seed {args.seed}"


def main():
    global args, gateway, port
    p = argparse.ArgumentParser()
    p.add_argument("pushbench")
    p.add_argument("--fuzz", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--probe-ms", type=float, default=100)
    p.add_argument("--rss-budget-mb", type=int, default=200)
    p.add_argument("--only", default="")
    p.add_argument("--http1-seconds", type=float, default=20)
    args = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    gateway = subprocess.Popen([args.pushbench, "gateway", "--listen", "127.0.0.1:0", "--handshake-timeout", "2s",
                                "--request-timeout", "2s", "--write-timeout", "2s", "--idle-timeout", "5s"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = gateway.stdout.readline()
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if not m:
            print(f"FAIL gateway: no listening line: {line!r}")
            return 1
        port = int(m.group(1))
        failed = 0
        only = set(filter(None, args.only.split(",")))
        for fn in CASES:
            name = fn.__name__
            if only and name not in only:
                continue
            reset_peak()
            try:
                held, note = fn()
                during = probe()
                for s in held:
                    s.close()
                time.sleep(0.2)
                after = probe()
                peak = status_kb("VmHWM") // 1024
                why = []
                if gateway.poll() is not None:
                    why.append(f"the gateway exited with {gateway.returncode}")
                if during is None or during > args.probe_ms:
                    why.append(f"a normal request during the abuse took {'over 2000' if during is None else f'{during:.0f}'} ms")
                if after is None or after > args.probe_ms:
                    why.append(f"a normal request after the abuse took {'over 2000' if after is None else f'{after:.0f}'} ms")
                if peak > args.rss_budget_mb:
                    why.append(f"peak RSS {peak} MiB over the {args.rss_budget_mb} MiB budget")
            except AssertionError as e:
                why = [str(e)]
            if gateway.poll() is not None and not any("exited" in w for w in why):
                why.append(f"the gateway exited with {gateway.returncode}")
            if why:
                failed += 1
                print(f"FAIL {name}: {'; '.join(why)}", flush=True)
                if gateway.poll() is not None:
                    return 1
            else:
                print(f"ok {name}: answered in {during:.0f} ms during, {after:.0f} ms after; peak RSS {peak} MiB"
                      + (f"; {note}" if note else ""), flush=True)
        return 1 if failed else 0
    finally:
        if gateway.poll() is None:
            gateway.terminate()
            try:
                gateway.wait(10)
            except subprocess.TimeoutExpired:
                gateway.kill()


if __name__ == "__main__":
    sys.exit(main())
