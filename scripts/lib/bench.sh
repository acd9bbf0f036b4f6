# Shared by the scripts/bench-* scripts; source it from the repository root after setting BENCH to the
# script's name (used in messages).
#
#   bench_work               WORK=a fresh temporary folder; on exit every server in PIDS is stopped
#                            and the folder removed
#   free_port                prints a loopback port nobody listens on
#   wait_port PORT [SECONDS] waits up to SECONDS (10) for a listener on 127.0.0.1:PORT, else exits 1
#   apns_fixture             TOKEN (64 hex digits), PAYLOAD (the seeds' example APNs payload, a file)
#                            and $WORK/www, a docroot where nghttpd answers 200 at /3/device/$TOKEN
#   start_nghttpd            starts nghttpd --no-tls on $WORK/www: NG_PORT, NG_PID and NG, its
#                            http://127.0.0.1:PORT URL
#   cpu_ticks PID            the CPU time (user + system, clock ticks) process PID has used so far;
#                            TICK_US is one tick in microseconds
#   us_per_request TICKS N   TICKS of CPU time spread over N requests, in µs (two decimals)
#   timed_h2load ARGS...     runs h2load ARGS, its output followed by a line "h2load-cpu REAL USER SYS"
#   h2load_busy OUT          from timed_h2load's OUT: h2load's CPU share of its wall time, in %

bench_work() {
    WORK=$(mktemp -d)
    PIDS=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    for pid in "${PIDS[@]+"${PIDS[@]}"}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

wait_port() {
    for _ in $(seq $((${2:-10} * 10))); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "$BENCH: nothing listens on port $1 after ${2:-10} s" >&2
    exit 1
}

apns_fixture() {
    TOKEN=$(printf 'ab%.0s' $(seq 32))
    PAYLOAD="$WORK/payload.json"
    printf '%s' '{"aps":{"alert":{"title":"Portugal vs. Denmark","body":"great match!"},"badge":1},"customKey":"customValue"}' > "$PAYLOAD"
    mkdir -p "$WORK/www/3/device"
    : > "$WORK/www/3/device/$TOKEN"
}

start_nghttpd() {
    NG_PORT=$(free_port)
    nghttpd --no-tls --address=127.0.0.1 -d "$WORK/www" "$NG_PORT" > "$WORK/nghttpd.log" 2>&1 &
    NG_PID=$!
    PIDS+=("$NG_PID")
    wait_port "$NG_PORT"
    NG="http://127.0.0.1:$NG_PORT"
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))
us_per_request() { awk -v t="$1" -v us="$TICK_US" -v n="$2" 'BEGIN { printf "%.2f", t * us / n }'; }
timed_h2load() { { TIMEFORMAT='h2load-cpu %R %U %S'; time h2load "$@"; } 2>&1; }
h2load_busy() { awk '/^h2load-cpu/ { printf "%.0f", 100 * ($3 + $4) / $2 }' <<<"$1"; }
