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
#   start_h2o [CERT KEY]     starts h2o (one thread, no access log) serving a 9-byte file at
#                            /3/device/$TOKEN, over h2c, or over TLS with CERT and KEY: H2O_PORT, H2O_PID
#   cpu_ticks_family PID     cpu_ticks of PID and of its child processes of the same name (h2o does the
#                            private-key operations of TLS in a forked child)
#   steal_ticks              the CPU time (clock ticks, all CPUs) the host has stolen from this machine
#                            so far (/proc/stat); ticks_ms TICKS turns ticks into ms
#   load_average             the 1-minute load average (/proc/loadavg)
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

# nghttpd may not exit on SIGTERM while it serves, and a parent can start the script with SIGTERM
# blocked: each server gets 5 s after SIGTERM, then SIGKILL, so the script always ends.
bench_cleanup() {
    local pid _
    for pid in "${PIDS[@]+"${PIDS[@]}"}"; do
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do bench_alive "$pid" || break; sleep 0.1; done
        if bench_alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}

# Whether process PID is a running child of this script (an exited child not yet waited for is not, nor
# a process that took the number of one already waited for).
bench_alive() {
    local stat
    stat=$(awk '{ print $3, $4 }' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$stat" ] && [ "${stat% *}" != Z ] && [ "${stat#* }" = "$$" ]
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

# A floor for any HTTP/2 server on this machine: h2o answering GET of a static file, no POST body to read
# and nothing to check.
start_h2o() {
    mkdir -p "$WORK/h2o-www/3/device"
    printf 'pushbench' > "$WORK/h2o-www/3/device/$TOKEN"
    chmod 755 "$WORK"
    chmod -R a+rX "$WORK/h2o-www"
    H2O_PORT=$(free_port)
    local tls=""
    if [ $# -ge 2 ]; then
        tls="
  ssl:
    certificate-file: $1
    key-file: $2
    ocsp-update-interval: 0"
    fi
    cat > "$WORK/h2o.conf" <<CONF
user: nobody
num-threads: 1
error-log: $WORK/h2o-error.log
listen:
  host: 127.0.0.1
  port: $H2O_PORT$tls
hosts:
  default:
    paths:
      /:
        file.dir: $WORK/h2o-www
CONF
    h2o -c "$WORK/h2o.conf" > "$WORK/h2o.log" 2>&1 &
    H2O_PID=$!
    PIDS+=("$H2O_PID")
    wait_port "$H2O_PORT"
}

steal_ticks() { awk '/^cpu / { print $9; exit }' /proc/stat; }
ticks_ms() { awk -v t="$1" -v us="$TICK_US" 'BEGIN { printf "%.0f", t * us / 1000 }'; }
load_average() { cut -d' ' -f1 /proc/loadavg; }

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
cpu_ticks_family() {
    local total child name
    total=$(cpu_ticks "$1")
    name=$(cat "/proc/$1/comm")
    for child in $(pgrep -P "$1" -x "$name" || true); do
        total=$((total + $(cpu_ticks "$child" 2>/dev/null || echo 0)))
    done
    echo "$total"
}
TICK_US=$((1000000 / $(getconf CLK_TCK)))
us_per_request() { awk -v t="$1" -v us="$TICK_US" -v n="$2" 'BEGIN { printf "%.2f", t * us / n }'; }
timed_h2load() { { TIMEFORMAT='h2load-cpu %R %U %S'; time h2load "$@"; } 2>&1; }
h2load_busy() { awk '/^h2load-cpu/ { printf "%.0f", 100 * ($3 + $4) / $2 }' <<<"$1"; }
