#!/usr/bin/env python3
"""What a TLS connection that sent one push costs `pushbench gateway` (docs/gateway.md, "Limits and timeouts").

Usage: tls_connection_memory.py PUSHBENCH N [token|off] [--idle S]

Starts `PUSHBENCH gateway --tls` on a free loopback port (with `token`: provider-token authentication,
a key made by `PUSHBENCH credentials apns`), opens N TLS connections (ALPN h2, python h2) one after
another, each sending one push (with a signed provider token under `token`) and reading its answer,
then leaves them all open and idle for --idle seconds (default 4) and prints the gateway's VmRSS before,
with all N open, and its VmHWM (/proc/PID/status), each also per connection. Bounded: at most 120 s of
connecting. Exits 1 when a push was not answered 200. Needs python h2 and cryptography (scripts/setup
installs both; cryptography comes with aioapns).
"""
import argparse
import base64
import json
import re
import resource
import socket
import ssl
import subprocess
import sys
import tempfile
import time

import h2.config
import h2.connection
import h2.events
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils


def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pushbench")
    p.add_argument("n", type=int)
    p.add_argument("mode", choices=["token", "off"], default="token", nargs="?")
    p.add_argument("--idle", type=float, default=4)
    a = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([a.pushbench, "credentials", "apns", "--out", d + "/creds"], check=True, capture_output=True)
        kid = open(d + "/creds/key_id").read().strip()
        team = open(d + "/creds/team_id").read().strip()
        keyfile = f"{d}/creds/AuthKey_{kid}.p8"
        args = [a.pushbench, "gateway", "--listen", "127.0.0.1:0", "--tls", "--tls-cert-out", d + "/ca.pem"]
        if a.mode == "token":
            args += ["--apns-auth", "token", "--apns-key", f"{kid}={keyfile}", "--apns-team", team]
        g = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            port = None
            for _ in range(5):
                m = re.search(r"listening on 127\.0\.0\.1:(\d+)", g.stdout.readline())
                if m:
                    port = int(m.group(1))
                    break
            if port is None:
                print("the gateway printed no listening line", file=sys.stderr)
                return 1
            key = serialization.load_pem_private_key(open(keyfile, "rb").read(), None)
            signing = b64(json.dumps({"alg": "ES256", "kid": kid}).encode()) + "." + b64(
                json.dumps({"iss": team, "iat": int(time.time())}).encode())
            r, s = utils.decode_dss_signature(key.sign(signing.encode(), ec.ECDSA(hashes.SHA256())))
            token = signing + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

            def status(field):
                with open(f"/proc/{g.pid}/status") as f:
                    for line in f:
                        if line.startswith(field + ":"):
                            return int(line.split()[1])
                return 0

            time.sleep(0.5)
            base = status("VmRSS")
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            held, ok, deadline = [], 0, time.monotonic() + 120
            headers = [(":method", "POST"), (":scheme", "https"), (":path", "/3/device/" + "ab" * 32),
                       (":authority", "localhost"), ("apns-topic", "com.example.app")]
            if a.mode == "token":
                headers.append(("authorization", "bearer " + token))
            for _ in range(a.n):
                if time.monotonic() > deadline:
                    break
                sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5))
                c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
                c.initiate_connection()
                c.send_headers(1, headers)
                c.send_data(1, b'{"aps":{"alert":"hi"}}', end_stream=True)
                sock.sendall(c.data_to_send())
                done = False
                while not done:
                    data = sock.recv(65536)
                    if not data:
                        break
                    for ev in c.receive_data(data):
                        if isinstance(ev, h2.events.ResponseReceived) and dict(ev.headers).get(":status") == "200":
                            ok += 1
                        if isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                            done = True
                    sock.sendall(c.data_to_send())
                held.append(sock)
            time.sleep(a.idle)
            now, hwm = status("VmRSS"), status("VmHWM")
            n = max(1, len(held))
            print(f"{a.mode}: {len(held)} TLS connections, {ok} answered 200; gateway VmRSS {base} KiB before, {now} KiB"
                  f" with all open after {a.idle:g} s idle ({(now - base) / n:.1f} KiB a connection); VmHWM {hwm} KiB"
                  f" ({(hwm - base) / n:.1f} KiB a connection)")
            for sock in held:
                sock.close()
            return 0 if ok == len(held) == a.n else 1
        finally:
            g.terminate()
            try:
                g.wait(10)
            except subprocess.TimeoutExpired:
                g.kill()


if __name__ == "__main__":
    sys.exit(main())
