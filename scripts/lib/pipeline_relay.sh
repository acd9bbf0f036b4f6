#!/usr/bin/env bash
# A pure pass-through relay for pipeline runs: nghttpx takes HTTP/2 on 127.0.0.1 and forwards every
# request, unchanged, over HTTP/2 and TLS to the egress gateway of a `pushbench pipeline` run. It is the
# simplest "service" there is (it adds no work, drops nothing, sends nothing twice), so a pipeline run
# through it measures what the pipeline machinery itself costs and must find 0 lost, 0 duplicated.
#
# Usage: scripts/lib/pipeline_relay.sh --egress PORT [--port PORT] [--h2c] [--workers N] [--cacert FILE]
#   --egress PORT  the egress gateway's port on 127.0.0.1 (pushbench pipeline --egress-listen)
#   --port PORT    the relay's port (default: a free one)
#   --h2c          the relay's front is HTTP/2 cleartext (prior knowledge) instead of TLS
#   --workers N    nghttpx worker threads (default 1)
#   --cacert FILE  check the egress's certificate against FILE (its --tls-cert-out); without it the
#                  relay does not check it (both ends are on loopback, and the egress makes a new CA
#                  each start, which may be after the relay's)
#
# Prints the relay's port on standard output, alone on one line, once it accepts connections, and on
# standard error the URL and, over TLS, the certificate file a client trusts (--cacert). Runs until
# SIGINT/SIGTERM, then stops nghttpx and removes its files. Everything listens on 127.0.0.1 only.
# A child inherits its parent's blocked signals, and bash cannot unblock them: started by a program that
# blocks SIGINT and SIGTERM in the thread that spawns it (Foundation's Process on Linux does), the relay
# cannot be stopped that way; start nghttpx directly there and end it with SIGKILL.
#
# A pipeline through it sends requests the egress understands, e.g. examples/pipeline/apns-relay.http:
#   pushbench pipeline --target https://127.0.0.1:$RELAY --cacert $CERT --request examples/pipeline/apns-relay.http \
#       --egress-listen 127.0.0.1:8443 --rps 1000 --duration 10s
set -euo pipefail

egress="" port="" h2c=0 workers=1 cacert=""
while [ $# -gt 0 ]; do
    case "$1" in
        --egress) egress="${2:-}"; shift 2 ;;
        --port) port="${2:-}"; shift 2 ;;
        --h2c) h2c=1; shift ;;
        --workers) workers="${2:-}"; shift 2 ;;
        --cacert) cacert="${2:-}"; shift 2 ;;
        *) echo "pipeline_relay: unknown argument '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
    esac
done
is_port() { [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65535 ]; }
is_port "$egress" || { echo "pipeline_relay: --egress: '$egress' is not a port (the egress's, on 127.0.0.1)" >&2; exit 2; }
[ -z "$port" ] || is_port "$port" || { echo "pipeline_relay: --port: '$port' is not a port" >&2; exit 2; }
[[ "$workers" =~ ^[1-9][0-9]*$ ]] || { echo "pipeline_relay: --workers: '$workers' is not a positive number" >&2; exit 2; }
[ -z "$cacert" ] || [ -r "$cacert" ] || { echo "pipeline_relay: --cacert: cannot read '$cacert'" >&2; exit 2; }
command -v nghttpx >/dev/null || { echo "pipeline_relay: nghttpx is not installed (scripts/setup installs nghttp2-proxy)" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/pipeline-relay.XXXXXX")
pid=""
cleanup() {
    [ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

if [ -z "$port" ]; then
    # The kernel's choice of a free port; nghttpx cannot report the one it got for port 0.
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi

front="127.0.0.1,$port"
tls_args=()
if [ "$h2c" = 1 ]; then
    front="$front;no-tls"
else
    # A self-signed certificate for this start only; clients trust the certificate itself.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=pushbench pipeline relay" \
        -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$dir/relay-key.pem" -out "$dir/relay-cert.pem" 2>/dev/null
    tls_args=(--no-ocsp "$dir/relay-key.pem" "$dir/relay-cert.pem")
fi
# nghttpx matches the egress's certificate against a DNS name only, never an IP address: with --cacert
# it asks for localhost, a name every generated egress certificate covers.
backend="127.0.0.1,$egress;;proto=h2;tls"
if [ -n "$cacert" ]; then backend="$backend;sni=localhost" backend_check=(--cacert="$cacert"); else backend_check=(--insecure); fi

# --conf=/dev/null: Debian's /etc/nghttpx/nghttpx.conf names a backend and syslog of its own.
# proto=h2: the APNs route refuses HTTP/1.1, as APNs does. --no-via and --no-add-x-forwarded-proto
# keep the requests as the client sent them. 1000 streams per client connection, as the gateway allows.
# --single-process: one process to stop, and no complaint from a worker that outlives its parent.
nghttpx --conf=/dev/null --single-process --frontend="$front" --backend="$backend" \
    "${backend_check[@]}" --workers="$workers" \
    --frontend-http2-max-concurrent-streams=1000 --no-via --no-add-x-forwarded-proto \
    --log-level=WARN --errorlog-file=/dev/stderr "${tls_args[@]+"${tls_args[@]}"}" &
pid=$!

for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        if [ "$h2c" = 1 ]; then
            echo "pipeline_relay: http://127.0.0.1:$port (h2c) -> https://127.0.0.1:$egress" >&2
        else
            echo "pipeline_relay: https://127.0.0.1:$port (clients trust $dir/relay-cert.pem) -> https://127.0.0.1:$egress" >&2
        fi
        echo "$port"
        wait "$pid"
        exit $?
    fi
    kill -0 "$pid" 2>/dev/null || { echo "pipeline_relay: nghttpx exited before listening on 127.0.0.1:$port" >&2; exit 1; }
    sleep 0.1
done
echo "pipeline_relay: nghttpx did not listen on 127.0.0.1:$port within 10 s" >&2
exit 1
