#!/usr/bin/env bash
# soak.sh -- a soak test of `strata serve`: minutes of mixed valid and
# invalid requests on loopback, checking that nothing degrades.
#
# Starts the daemon on 127.0.0.1 (ephemeral port, 2 request threads, no
# policy, its log to a file), warms it up for 10 s, records its resident
# memory (VmRSS) and open file descriptors (/proc/PID/fd), then runs wrk
# (-t2 -c16) with bench/soak/mixed.lua, which cycles through 28 requests to
# every endpoint, 11 valid and 17 invalid (malformed JSON, NaN and 1e400
# figures, bad units, unknown keys, absurd options, 404, 405, truncated and
# empty bodies), in slices of 30 s so that memory and descriptors are
# sampled along the way. At the end it checks, and exits 1 unless:
#   - no answer was a 5xx, except the 503 of /v1/place without a policy
#     (counted by wrk and by the daemon's own /metrics);
#   - no socket error (connect, read, write, timeout) in wrk;
#   - resident memory after the run is within 2 MiB (SOAK_RSS_SLACK_KIB)
#     of what it was after the warm-up;
#   - the daemon holds exactly as many file descriptors as after warm-up,
#     once wrk's connections are closed;
#   - the daemon still answers /healthz and exits 0 on SIGTERM.
#
#   bench/soak.sh [--minutes M] [--bin PATH]      (default 5 minutes)
#
# Every wait is bounded; the daemon is killed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${STRATA_BIN:-build/strata}
MINUTES=5
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) MINUTES=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "soak.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "soak.sh: wrk is not installed" >&2; exit 2; }
[ -x "$BIN" ] || { echo "soak.sh: no strata program at $BIN (build first, or --bin)" >&2; exit 2; }
SLACK=${SOAK_RSS_SLACK_KIB:-2048}

TMP=$(mktemp -d)
PID=""
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

"$BIN" serve --listen 127.0.0.1:0 --threads 2 >"$TMP/out" 2>"$TMP/log" </dev/null &
PID=$!
for _ in $(seq 100); do grep -q "listening on" "$TMP/out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/out")
[ -n "$PORT" ] || { echo "soak.sh: the daemon did not start" >&2; cat "$TMP/log" >&2; exit 1; }
URL=http://127.0.0.1:$PORT

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$PID/status"; }
fds() { ls "/proc/$PID/fd" | wc -l; }
field() { echo "$2" | sed -n "s/.* $1 \([0-9.]*\).*/\1/p"; }

echo "soak: daemon pid $PID on port $PORT; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
timeout 30 wrk -t2 -c16 -d10s -s bench/soak/mixed.lua "$URL" >"$TMP/warm" 2>&1
sleep 1
RSS0=$(rss_kib); FD0=$(fds)
echo "soak: after warm-up: $RSS0 KiB resident, $FD0 descriptors ($(grep '^soak:' "$TMP/warm"))"

TOTAL=0; S5=0; ERRS=0; S2=0; S4=0; S503=0
SLICES=$(( MINUTES * 2 ))
for k in $(seq "$SLICES"); do
  timeout 60 wrk -t2 -c16 -d30s --timeout 10s -s bench/soak/mixed.lua "$URL" >"$TMP/slice" 2>&1 ||
    { echo "soak.sh: wrk failed" >&2; cat "$TMP/slice" >&2; exit 1; }
  L=$(grep '^soak:' "$TMP/slice")
  TOTAL=$(( TOTAL + $(field requests "$L") )); S2=$(( S2 + $(field 2xx "$L") ))
  S4=$(( S4 + $(field 4xx "$L") )); S5=$(( S5 + $(field 5xx "$L") ))
  S503=$(( S503 + $(field 503 "$L") )); ERRS=$(( ERRS + $(field errors "$L") ))
  echo "soak: $(( k * 30 )) s: $TOTAL requests, $(rss_kib) KiB resident, $(fds) descriptors, 5xx $S5, socket errors $ERRS, p99 $(field p99_ms "$L") ms"
done
sleep 1
RSS1=$(rss_kib); FD1=$(fds)
METRICS=$(curl -s --max-time 10 "$URL/metrics")
M5=$(echo "$METRICS" | awk '/^strata_requests_total\{/ && /status="5/ && !/path="\/v1\/place",status="503"/ {s += $2} END {print s + 0}')
HEALTH=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$URL/healthz")
kill -TERM "$PID"
EXIT=""
for _ in $(seq 300); do
  if ! kill -0 "$PID" 2>/dev/null; then wait "$PID" && EXIT=0 || EXIT=$?; break; fi
  sleep 0.1
done
PID_DONE=$PID; PID=""

echo "soak: $MINUTES min: $TOTAL requests ($S2 2xx, $S4 4xx, $S503 expected 503), 5xx $S5 (daemon's /metrics: $M5), socket errors $ERRS"
echo "soak: resident memory $RSS0 -> $RSS1 KiB, descriptors $FD0 -> $FD1, /healthz $HEALTH, exit ${EXIT:-none}"
fail=0
[ "$S5" -eq 0 ] && [ "$M5" -eq 0 ] || { echo "soak: FAIL: 5xx answers" >&2; fail=1; }
[ "$ERRS" -eq 0 ] || { echo "soak: FAIL: socket errors" >&2; fail=1; }
[ $(( RSS1 - RSS0 )) -le "$SLACK" ] || { echo "soak: FAIL: resident memory grew by $(( RSS1 - RSS0 )) KiB" >&2; fail=1; }
[ "$FD1" -eq "$FD0" ] || { echo "soak: FAIL: descriptors $FD0 -> $FD1" >&2; fail=1; }
[ "$HEALTH" = 200 ] || { echo "soak: FAIL: /healthz answered $HEALTH" >&2; fail=1; }
[ "${EXIT:-x}" = 0 ] || { echo "soak: FAIL: the daemon did not exit 0 on SIGTERM (pid $PID_DONE)" >&2; fail=1; }
[ $fail -eq 0 ] && echo "soak: PASS"
exit $fail
