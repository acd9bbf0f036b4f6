#!/usr/bin/env python3
"""Memory of idle HTTP/2 connections on `pushbench gateway` (scripts/bench-idle).

Usage: bench_idle.py PUSHBENCH N [--rounds R] [--budget-kib K] [--returned-percent P] [--seconds S]

Starts `PUSHBENCH gateway` on a free loopback port, then ROUNDS times: opens N connections that each
send the connection preface and an empty SETTINGS frame and then stay idle (they read nothing), waits
until the gateway holds all of them (its descriptors, /proc/PID/fd), reads its resident memory (VmRSS,
/proc/PID/status), closes them all, waits until the gateway has let go of their descriptors, and reads
its memory again. Prints, per round, the gateway's RSS before, with N open and after they closed; then
the bytes each idle connection cost and how much of it came back after close (first round), against
the budget; later rounds show whether what stayed is reused or grows. Exits 1 when a figure is over its budget, 2 on bad input, 3 when the
connections could not all be opened or the run overran its time limit.
"""
import argparse
import os
import re
import resource
import socket
import subprocess
import sys
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
    p.add_argument("--budget-kib", type=float, default=16.0, help="bytes per idle connection, KiB")
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

    gateway = subprocess.Popen([args.pushbench, "gateway", "--listen", "127.0.0.1:0", "--max-connections", str(args.n + 64)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    held = []
    try:
        line = gateway.stdout.readline()
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if not m:
            print(f"bench-idle: the gateway did not say where it listens: {line!r} {gateway.stderr.read()!r}", file=sys.stderr)
            return 3
        port = int(m.group(1))
        pid = gateway.pid
        time.sleep(0.5)
        base_fds = descriptors(pid)
        rounds = []
        for r in range(args.rounds):
            before = status_kib(pid, "VmRSS")
            for k in range(args.n):
                if time.monotonic() > deadline:
                    print(f"bench-idle: out of time after opening {k} connections", file=sys.stderr)
                    return 3
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(PREFACE + SETTINGS)
                held.append(s)
            if not wait_for(lambda: descriptors(pid) >= base_fds + args.n, deadline):
                print(f"bench-idle: the gateway holds {descriptors(pid) - base_fds} of the {args.n} connections", file=sys.stderr)
                return 3
            time.sleep(1.0)   # every connection has read the preface and answered
            if gateway.poll() is not None:
                print(f"bench-idle: the gateway exited ({gateway.returncode}) with {args.n} connections", file=sys.stderr)
                return 3
            peak = status_kib(pid, "VmRSS")
            for s in held:
                s.close()
            held = []
            if not wait_for(lambda: descriptors(pid) <= base_fds, deadline):
                print(f"bench-idle: the gateway still holds {descriptors(pid) - base_fds} closed connections", file=sys.stderr)
                return 3
            time.sleep(1.0)
            after = status_kib(pid, "VmRSS")
            rounds.append((before, peak, after))
            print(f"round {r + 1}: gateway RSS {before / 1024:.1f} MiB before, {peak / 1024:.1f} MiB with {args.n} idle "
                  f"connections, {after / 1024:.1f} MiB after they closed", flush=True)

        first_before, first_peak, first_after = rounds[0]
        took = max(0, first_peak - first_before)
        per = took * 1024 / args.n
        returned = 100.0 if took < 64 else 100.0 * max(0, first_peak - first_after) / took
        print(f"idle connection: {per:,.0f} bytes each (budget {args.budget_kib * 1024:,.0f}); after close "
              f"{returned:.0f}% of it came back (budget {args.returned_percent:.0f}%)")
        if len(rounds) > 1:
            grew = (rounds[-1][1] - first_peak) * 1024 / args.n / (len(rounds) - 1)
            print(f"later rounds: the peak moved {grew:+,.0f} bytes per connection per round "
                  f"(about 0: what the first round left was reused, not leaked)")
        print(f"took {time.monotonic() - started:.1f} s")
        over = []
        if per > args.budget_kib * 1024:
            over.append(f"{per:,.0f} bytes per idle connection is over the {args.budget_kib * 1024:,.0f}-byte budget")
        if returned < args.returned_percent:
            over.append(f"only {returned:.0f}% of the connections' memory came back after close")
        for why in over:
            print(f"bench-idle: OVER BUDGET: {why}", file=sys.stderr)
        return 1 if over else 0
    finally:
        for s in held:
            s.close()
        if gateway.poll() is None:
            gateway.terminate()
            try:
                gateway.wait(timeout=5)
            except subprocess.TimeoutExpired:
                gateway.kill()
                gateway.wait()


if __name__ == "__main__":
    sys.exit(main())
