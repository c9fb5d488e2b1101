#!/usr/bin/env bash
# serve_wrk.sh -- benchmark `strata serve` with wrk on loopback.
#
# Starts the daemon on 127.0.0.1 (ephemeral port, 2 request threads, its
# request log written to /dev/null: each line is still formatted and
# written), warms it up, then runs wrk (Debian's package) posting a 32-layer
# job on a 64-node cluster to /v1/place (bench/wrk/place.lua) and prints
# requests per second, latency percentiles and the daemon's resident memory
# before and after. Every step is bounded in time.
#
#   bench/serve_wrk.sh [--policy FILE.h5] [--duration S] [--connections N]
#                      [--miss | --miss-job] [--million] [--cost] [--bin PATH]
#                      [--healthz] [--threads N] [--wrk-threads N]
#
#   --policy F     the policy plans and places (default: no policy; the
#                  requests name plan_method greedy and placement zone)
#   --duration S   seconds of the measured run (default 10)
#   --connections  concurrent connections (default 16)
#   --miss         every request a different body (no parse-cache hits):
#                  the same job under 1000 names (the plan memo answers)
#   --miss-job     every request a job of its own (one layer's flops differ):
#                  nothing cached can answer, every request is decoded
#   --million      then keep posting until a million requests were answered
#                  and report resident memory along the way
#   --cost         post the same job to /v1/cost with a given plan instead:
#                  no planner runs, so this is the daemon's own cost
#   --healthz      GET /healthz instead: no work at all, so its latencies
#                  are the floor set by loopback HTTP and the machine
#   --bin PATH     the strata program (default $STRATA_BIN or build/strata)
#   --threads N    the daemon's request threads (default 2)
#   --wrk-threads N  wrk's threads (default 2); on loopback they share the
#                  cores with the daemon, and one is enough to load it
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${STRATA_BIN:-build/strata}
POLICY=""
DURATION=10
CONN=16
MISS=""
MILLION=0
COST=0
HEALTHZ=0
THREADS=2
WRK_THREADS=2
while [ $# -gt 0 ]; do
  case "$1" in
    --policy) POLICY=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --connections) CONN=$2; shift 2 ;;
    --miss) MISS=miss; shift ;;
    --miss-job) MISS=miss-job; shift ;;
    --million) MILLION=1; shift ;;
    --cost) COST=1; shift ;;
    --healthz) HEALTHZ=1; shift ;;
    --bin) BIN=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --wrk-threads) WRK_THREADS=$2; shift 2 ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "serve_wrk.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "serve_wrk.sh: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "serve_wrk.sh: no strata program at $BIN (build first, or --bin)" >&2; exit 2; }

TMP=$(mktemp -d)
PID=""
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT

MODE=greedy
ARGS=(serve --listen 127.0.0.1:0 --threads "$THREADS")
if [ -n "$POLICY" ]; then MODE=policy; ARGS+=(--policy "$POLICY"); fi
"$BIN" "${ARGS[@]}" >"$TMP/out" 2>/dev/null &
PID=$!
PORT=""
for _ in $(seq 100); do
  PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$TMP/out")
  [ -n "$PORT" ] && break
  kill -0 "$PID" 2>/dev/null || { echo "serve_wrk.sh: the daemon did not start" >&2; exit 1; }
  sleep 0.1
done
[ -n "$PORT" ] || { echo "serve_wrk.sh: the daemon did not say its port" >&2; exit 1; }
URL="http://127.0.0.1:$PORT/v1/place"
if [ "$COST" = 1 ]; then MODE=cost; URL="http://127.0.0.1:$PORT/v1/cost"; fi
if [ "$HEALTHZ" = 1 ]; then MODE=healthz; URL="http://127.0.0.1:$PORT/healthz"; fi

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$PID/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }  # user + system
TCK=$(getconf CLK_TCK)

# wrk with a hard time limit; prints its RESULT line.
run_wrk() {
  local secs=$1
  timeout $((secs + 60)) wrk -t"$WRK_THREADS" -c"$CONN" -d"${secs}s" --timeout 10s \
    -s bench/wrk/place.lua "$URL" -- "$MODE" $MISS | grep '^RESULT'
}

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
WHAT=""
[ "$MISS" = miss ] && WHAT=", every body new (the job under another name)"
[ "$MISS" = miss-job ] && WHAT=", every body new (a job of its own)"
echo "daemon: $BIN serve --threads $THREADS on 127.0.0.1:$PORT, mode $MODE$WHAT"
echo "request: POST ${URL##*$PORT}, 32 layers, 64 nodes; wrk -t$WRK_THREADS -c$CONN"

WARM=$(run_wrk 2)
if [ "$(field non2xx "$WARM")" != 0 ] || [ "$(field socket_errors "$WARM")" != 0 ]; then
  echo "serve_wrk.sh: the warm-up got errors: $WARM" >&2
  exec 3<>"/dev/tcp/127.0.0.1/$PORT"
  printf 'POST /v1/place HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}' >&3
  cat <&3 >&2 || true
  exit 1
fi
RSS0=$(rss_kib)
T0=$(cpu_ticks)
MAIN=$(run_wrk "$DURATION")
T1=$(cpu_ticks)
RSS1=$(rss_kib)
echo "$MAIN"
printf 'requests/s %s   latency p50 %s ms  p90 %s ms  p99 %s ms  p99.9 %s ms  max %s ms   non-2xx %s, socket errors %s\n' \
  "$(field rps "$MAIN")" "$(field p50_ms "$MAIN")" "$(field p90_ms "$MAIN")" \
  "$(field p99_ms "$MAIN")" "$(field p999_ms "$MAIN")" "$(field max_ms "$MAIN")" \
  "$(field non2xx "$MAIN")" "$(field socket_errors "$MAIN")"
echo "resident memory: ${RSS0} KiB before, ${RSS1} KiB after $(field requests "$MAIN") requests"
awk -v t="$((T1 - T0))" -v hz="$TCK" -v n="$(field requests "$MAIN")" 'BEGIN {
  printf "daemon CPU: %.1f s over the run, %.0f us per request (user + system, all its threads)\n", t / hz, n ? 1e6 * t / hz / n : 0 }'

# What the daemon's caches did over the whole run (warm-up included).
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
METRICS=$(timeout 10 cat <&3 || true)
exec 3<&-
metric() { sed -n "s/^$1 \([0-9]*\).*/\1/p" <<<"$METRICS"; }
echo "plan memo: $(metric 'strata_decode_memo_total{result="hit"}') hits, $(metric 'strata_decode_memo_total{result="miss"}') decodes; parse cache: $(metric 'strata_parse_cache_total{result="hit"}') hits, $(metric 'strata_parse_cache_total{result="miss"}') misses"

if [ "$MILLION" = 1 ]; then
  TOTAL=$(( $(field requests "$WARM") + $(field requests "$MAIN") ))
  RUNS=0
  while [ "$TOTAL" -lt 1000000 ] && [ "$RUNS" -lt 60 ]; do
    R=$(run_wrk 30)
    TOTAL=$((TOTAL + $(field requests "$R")))
    RUNS=$((RUNS + 1))
    echo "after $TOTAL requests: $(rss_kib) KiB resident, rps $(field rps "$R"), p99 $(field p99_ms "$R") ms, non-2xx $(field non2xx "$R")"
  done
  echo "resident memory: ${RSS0} KiB after warm-up, $(rss_kib) KiB after $TOTAL requests"
fi
