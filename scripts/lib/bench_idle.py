#!/usr/bin/env python3
"""Memory of idle HTTP/2 connections on `pushbench gateway` against nghttpd (scripts/bench-idle).

Usage: bench_idle.py PUSHBENCH N [--rounds R] [--budget-ratio X] [--returned-percent P] [--seconds S]

For the gateway and then for nghttpd (--no-tls), each on a free loopback port, ROUNDS times: opens N
connections that each send the connection preface and an empty SETTINGS frame and then stay idle (they
read nothing), waits until the server holds all of them (its descriptors, /proc/PID/fd), reads its
resident memory (VmRSS, /proc/PID/status), closes them all, waits until the server has let go of their
descriptors, and reads its memory again. Prints, per round, the RSS before, with N open and after they
closed; then the bytes each idle connection cost and how much of it came back after close (first
round); later rounds show whether what stayed is reused or grows. Budget: the gateway's bytes per idle
connection at most X times nghttpd's, measured in the same run, and at least P% back after close.
Exits 1 when a figure is over its budget, 2 on bad input, 3 when the connections could not all be
opened or the run overran its time limit.
"""
import argparse
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"   # an empty SETTINGS frame on stream 0


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {key}")


def descriptors(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def wait_for(predicate, deadline, poll=0.05):
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll)
    return predicate()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pushbench")
    p.add_argument("n", type=int)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--budget-ratio", type=float, default=1.25, help="bytes per idle connection, as a multiple of nghttpd's")
    p.add_argument("--returned-percent", type=float, default=75.0, help="share of their memory back after close")
    p.add_argument("--seconds", type=float, default=60.0, help="time limit of the whole run")
    args = p.parse_args()
    if args.n < 1 or args.rounds < 1:
        print("bench-idle: N and ROUNDS must be at least 1", file=sys.stderr)
        return 2
    started = time.monotonic()
    deadline = started + args.seconds

    # The client holds N sockets; the gateway (another process) raises its own limit to its hard limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if args.n + 64 > hard:
        print(f"bench-idle: {args.n} connections need {args.n + 64} descriptors; the hard limit is {hard} "
              f"(raise it, e.g. ulimit -Hn, or ask for fewer)", file=sys.stderr)
        return 2
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    try:
        ours = measure("gateway", [args.pushbench, "gateway", "--listen", "127.0.0.1:0", "--max-connections", str(args.n + 64)],
                       None, args, deadline)
        port = free_port()
        peer = measure("nghttpd", ["nghttpd", "--no-tls", "--address=127.0.0.1", "-d", tempfile.gettempdir(), str(port)],
                       port, args, deadline)
    except Measurement as e:
        print(f"bench-idle: {e}", file=sys.stderr)
        return 3
    print(f"took {time.monotonic() - started:.1f} s")
    ratio = ours[0] / peer[0] if peer[0] > 0 else float("inf")
    print(f"gateway / nghttpd per idle connection: {ours[0]:,.0f} / {peer[0]:,.0f} bytes = {ratio:.2f}x "
          f"(budget {args.budget_ratio:.2f}x); back after close: gateway {ours[1]:.0f}%, nghttpd {peer[1]:.0f}% "
          f"(budget {args.returned_percent:.0f}%)")
    over = []
    if ratio > args.budget_ratio:
        over.append(f"an idle connection costs {ratio:.2f}x what it costs nghttpd (budget {args.budget_ratio:.2f}x)")
    if ours[1] < args.returned_percent:
        over.append(f"only {ours[1]:.0f}% of the connections' memory came back after close")
    for why in over:
        print(f"bench-idle: OVER BUDGET: {why}", file=sys.stderr)
    return 1 if over else 0


class Measurement(Exception):
    pass


def fail(message):
    raise Measurement(message)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def measure(name, command, port, args, deadline):
    """Opens N idle connections to `command`'s server ROUNDS times; returns (bytes per connection, % back)."""
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    held = []
    try:
        if port is None:
            line = server.stdout.readline()
            m = re.search(r"127\.0\.0\.1:(\d+)", line)
            if not m:
                fail(f"the {name} did not say where it listens: {line!r} {server.stderr.read()!r}")
            port = int(m.group(1))
        else:
            def listening():
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    return True
                except OSError:
                    return False
            if not wait_for(listening, deadline):
                fail(f"{name} does not listen on port {port}")
        pid = server.pid
        time.sleep(0.5)
        base_fds = descriptors(pid)
        rounds = []
        for r in range(args.rounds):
            before = status_kib(pid, "VmRSS")
            for k in range(args.n):
                if time.monotonic() > deadline:
                    fail(f"out of time after opening {k} connections to {name}")
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(PREFACE + SETTINGS)
                held.append(s)
            if not wait_for(lambda: descriptors(pid) >= base_fds + args.n, deadline):
                fail(f"{name} holds {descriptors(pid) - base_fds} of the {args.n} connections")
            time.sleep(1.0)   # every connection has read the preface and answered
            if server.poll() is not None:
                fail(f"{name} exited ({server.returncode}) with {args.n} connections")
            peak = status_kib(pid, "VmRSS")
            for s in held:
                s.close()
            held = []
            if not wait_for(lambda: descriptors(pid) <= base_fds, deadline):
                fail(f"{name} still holds {descriptors(pid) - base_fds} closed connections")
            time.sleep(1.0)
            after = status_kib(pid, "VmRSS")
            rounds.append((before, peak, after))
            print(f"{name} round {r + 1}: RSS {before / 1024:.1f} MiB before, {peak / 1024:.1f} MiB with {args.n} idle "
                  f"connections, {after / 1024:.1f} MiB after they closed", flush=True)
        first_before, first_peak, first_after = rounds[0]
        took = max(0, first_peak - first_before)
        per = took * 1024 / args.n
        returned = 100.0 if took < 64 else 100.0 * max(0, first_peak - first_after) / took
        print(f"{name}: {per:,.0f} bytes per idle connection; after close {returned:.0f}% of it came back")
        if len(rounds) > 1:
            grew = (rounds[-1][1] - first_peak) * 1024 / args.n / (len(rounds) - 1)
            print(f"{name}: later rounds moved the peak {grew:+,.0f} bytes per connection per round "
                  f"(about 0: what the first round left was reused, not leaked)")
        return per, returned
    finally:
        for s in held:
            s.close()
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


if __name__ == "__main__":
    sys.exit(main())
