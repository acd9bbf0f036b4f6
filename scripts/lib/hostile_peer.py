#!/usr/bin/env python3
"""A hostile HTTP/2 (h2c) server for the load generator's tests: each mode misbehaves one way.

Usage: hostile_peer.py MODE
Listens on a free loopback port, prints it on the first line of stdout, and serves every connection in
MODE until its stdin closes (or 120 s pass, so a forgotten peer never lingers). Modes:

  silent            accepts TCP and never writes (no SETTINGS)
  never-answers     completes the handshake, takes every request, never answers
  stall             answers the first 20 requests, then never again
  reset-CODE        resets every stream with RST_STREAM CODE (decimal: 2 INTERNAL_ERROR, 7 REFUSED_STREAM ...)
  goaway-CODE       answers 10 requests, then GOAWAY(last answered stream, CODE) and closes once the
                    client has gone; every new connection does the same
  goaway-abrupt     answers 10 requests, then GOAWAY(last stream 0, INTERNAL_ERROR) and closes at once
  malformed         answers 5 requests, then sends DATA on stream 0 (a connection error)
  mid-response-close  sends the headers and half a body of the 5th response, then closes the socket
  streams-1         announces SETTINGS_MAX_CONCURRENT_STREAMS 1 and answers every request
  garbage-body      answers 400 with a body that is not JSON, every other one a cut-off {"reason":"Shutdown"
  huge-body         answers 200 with a 1 MiB body
"""
import select
import socket
import sys
import threading
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

MODE = sys.argv[1]
LIFETIME = 120


def frame(ftype, flags, stream, payload=b""):
    n = len(payload)
    return bytes([n >> 16 & 0xFF, n >> 8 & 0xFF, n & 0xFF, ftype, flags]) + (stream & 0x7FFFFFFF).to_bytes(4, "big") + payload


def serve(sock):
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if MODE == "silent":
        while sock.recv(65536):
            pass
        return
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    settings = {h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1 if MODE == "streams-1" else 100,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 20}
    # In the first SETTINGS frame: update_settings() before initiate_connection() would send them
    # first and then h2's defaults (100 streams), which, being later, are the ones in force.
    conn.local_settings = h2.settings.Settings(client=False, initial_values=settings)
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    answered, last = 0, 0
    pending = []  # streams waiting for a window to finish their body: [stream, remaining bytes]
    while True:
        if pending:
            readable, _, _ = select.select([sock], [], [], 0.01)
            if not readable:
                flush_pending(conn, pending)
                sock.sendall(conn.data_to_send())
                continue
        try:
            data = sock.recv(65536)
        except OSError:
            return
        if not data:
            return
        try:
            events = conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            sock.sendall(conn.data_to_send())
            return
        for ev in events:
            if isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            if not isinstance(ev, h2.events.StreamEnded):
                continue
            sid = ev.stream_id
            if MODE == "never-answers" or (MODE == "stall" and answered >= 20):
                continue
            if MODE.startswith("reset-"):
                conn.reset_stream(sid, error_code=int(MODE[6:]))
                continue
            if MODE == "malformed" and answered >= 5:
                sock.sendall(conn.data_to_send() + frame(0x0, 0, 0, b"xyz"))
                drain_and_close(sock)
                return
            if MODE == "mid-response-close" and answered >= 4:
                conn.send_headers(sid, [(":status", "200"), ("content-length", "100")])
                conn.send_data(sid, b"x" * 50)
                sock.sendall(conn.data_to_send())
                sock.close()
                return
            if MODE == "garbage-body":
                body = b"\x00\xffnot json at all\x1b[31m" if answered % 2 == 0 else b'{"reason":"Shutdown"'
                conn.send_headers(sid, [(":status", "400"), ("content-length", str(len(body)))])
                conn.send_data(sid, body, end_stream=True)
            elif MODE == "huge-body":
                conn.send_headers(sid, [(":status", "200")])
                pending.append([sid, 1 << 20])
                flush_pending(conn, pending)
            else:
                conn.send_headers(sid, [(":status", "200")], end_stream=True)
            answered += 1
            last = sid
            if MODE.startswith("goaway-") and answered == 10:
                if MODE == "goaway-abrupt":
                    conn.close_connection(error_code=h2.errors.ErrorCodes.INTERNAL_ERROR, last_stream_id=0)
                    sock.sendall(conn.data_to_send())
                    sock.close()
                    return
                conn.close_connection(error_code=int(MODE[7:]), last_stream_id=last)
        sock.sendall(conn.data_to_send())


def flush_pending(conn, pending):
    for entry in list(pending):
        sid, remaining = entry
        try:
            window = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size, remaining)
        except h2.exceptions.StreamClosedError:
            pending.remove(entry)
            continue
        while window > 0:
            conn.send_data(sid, b"y" * window, end_stream=window == remaining)
            remaining -= window
            window = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size, remaining)
        entry[1] = remaining
        if remaining == 0:
            pending.remove(entry)


def drain_and_close(sock):
    sock.settimeout(2)
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass
    sock.close()


def handle(sock):
    try:
        serve(sock)
    except (OSError, h2.exceptions.H2Error):
        pass
    finally:
        try:
            sock.close()
        except OSError:
            pass


def main():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    print(listener.getsockname()[1], flush=True)
    deadline = time.time() + LIFETIME
    while time.time() < deadline:
        readable, _, _ = select.select([listener, sys.stdin], [], [], 1)
        if sys.stdin in readable and not sys.stdin.buffer.read1(1):
            break
        if listener in readable:
            sock, _ = listener.accept()
            threading.Thread(target=handle, args=(sock,), daemon=True).start()


if __name__ == "__main__":
    main()
