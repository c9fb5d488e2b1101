#!/usr/bin/env bash
# Runs the daemon's request path and a short training run under valgrind
# memcheck and fails unless both end with zero errors and zero leaks.
#
#   scripts/valgrind.sh [--bin PATH]   (default $STRATA_BIN or build/strata)
#
# 1. `strata serve` on 127.0.0.1 (ephemeral port, 2 threads, no policy)
#    answers real requests over loopback (curl): /v1/cost, /v1/place,
#    /v1/solve, a job PUT/GET/DELETE, the extender's filter and
#    prioritize, /metrics, and invalid ones (malformed JSON, NaN, unknown
#    key, 404, 405, a body over the limit); then SIGTERM.
# 2. `strata train --search configs/default.yaml --steps 2`: a short
#    policy-search run, with its checkpoints written.
# 3. `strata train CFG --stop-at 2` on a tiny general-mode config (a
#    checkpoint every step, evaluations), then `--resume` to step 3.
#
# memcheck runs with --leak-check=full; errors and definite or indirect
# leaks make the run fail (--error-exitcode). Memory still reachable at
# exit (library caches: OpenBLAS buffers, HDF5 free lists, libyaml, glibc)
# is not a leak and is only summarised. scripts/valgrind.supp holds the
# suppressions, each one documented there. Logs go to $TMP (printed).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${STRATA_BIN:-build/strata}
[ "${1:-}" = --bin ] && BIN=$2
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed (scripts/setup.sh)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "valgrind.sh: no strata program at $BIN" >&2; exit 2; }
TMP=$(mktemp -d /tmp/strata-valgrind.XXXXXX)
PID=""
trap '[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; true' EXIT
export OPENBLAS_NUM_THREADS=1
VG=(valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect
    --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --track-origins=yes
    --suppressions=scripts/valgrind.supp --num-callers=30)

summary() { # log
  local e d i
  e=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$1" | tail -1)
  d=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$1" | tail -1)
  i=$(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' "$1" | tail -1)
  echo "errors ${e:-?}, definitely lost ${d:-0} bytes, indirectly lost ${i:-0} bytes"
}

# ---- 1. the daemon -------------------------------------------------------------
"${VG[@]}" --log-file="$TMP/serve.vg" "$BIN" serve --listen 127.0.0.1:0 --threads 2 \
  >"$TMP/serve.out" 2>"$TMP/serve.log" </dev/null &
PID=$!
for _ in $(seq 600); do grep -q "listening on" "$TMP/serve.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/serve.out")
[ -n "$PORT" ] || { echo "valgrind.sh: the daemon did not start under valgrind" >&2; exit 1; }
U=http://127.0.0.1:$PORT
CL='{"types":[{"name":"gpu","kind":"gpu","flops":"1TFLOPS","io_bw":"1GB/s","net_bw":"8Gbit/s","mem":"10GB","price":3.6}],"zones":[{"name":"a"},{"name":"b"}],"nodes":[{"name":"n0","type":"gpu","units":4,"zone":"a","bw":"1GB/s"},{"name":"n1","type":"gpu","units":4,"zone":"b","bw":"1GB/s"}]}'
JOB='{"name":"tiny","batch":10,"samples":3.6e6,"min_throughput":100,"alpha":0,"layers":[{"name":"a","flops":"1GFLOP","io":0,"act":0,"params":"1MB","mem":"1MB"},{"name":"b","flops":"1GFLOP","io":0,"act":0,"params":0,"mem":"1MB"}]}'
POD='{"Pod":{"metadata":{"name":"tiny-worker-0","labels":{"training.kubeflow.org/job-name":"tiny","training.kubeflow.org/replica-type":"worker","training.kubeflow.org/replica-index":"0"}}},"Nodes":{"items":[{"metadata":{"name":"n0","labels":{"node.kubernetes.io/instance-type":"gpu","topology.kubernetes.io/zone":"a"}},"status":{"allocatable":{"nvidia.com/gpu":"4"}}}]}}'
req() { # expected-status method path [body]
  local got
  got=$(curl -s -o "$TMP/body" -w '%{http_code}' --max-time 120 -X "$2" ${4:+--data-binary "$4"} "$U$3")
  [ "$got" = "$1" ] || { echo "valgrind.sh: $2 $3: expected $1, got $got: $(head -c 300 "$TMP/body")" >&2; exit 1; }
  n_req=$(( ${n_req:-0} + 1 ))
}
req 200 POST /v1/cost "{\"cluster\":$CL,\"job\":$JOB,\"assignment\":\"gpu\",\"placement\":[{\"workers\":[\"n0\"],\"ps\":[\"n1\"]}]}"
req 200 POST /v1/cost "{\"cluster\":$CL,\"job\":$JOB,\"assignment\":\"gpu\",\"placement\":[{\"workers\":[\"n0\"],\"ps\":[\"n1\"]}]}"
req 200 POST /v1/place "{\"cluster\":$CL,\"job\":$JOB,\"options\":{\"plan_method\":\"greedy\",\"placement\":\"zone\"}}"
req 200 POST /v1/place "{\"cluster\":$CL,\"job\":$JOB,\"options\":{\"plan_method\":\"exact\",\"placement\":\"best\"}}"
req 503 POST /v1/place "{\"cluster\":$CL,\"job\":$JOB}"
req 200 POST /v1/solve "{\"cluster\":$CL,\"job\":$JOB,\"options\":{\"method\":\"genetic\",\"budget_ms\":200}}"
req 201 PUT /v1/jobs/tiny "{\"cluster\":{\"types\":$(echo "$CL" | sed 's/^{"types":\(\[[^]]*\]\).*/\1/')},\"job\":$JOB}"
req 200 POST /k8s/filter "$POD"
req 200 POST /k8s/prioritize "$POD"
req 200 GET /v1/jobs/tiny
req 200 GET /v1/jobs
req 204 DELETE /v1/jobs/tiny
req 200 GET /metrics
req 400 POST /v1/cost '{"cluster": {,}'
req 400 POST /v1/cost "{\"cluster\":$CL,\"job\":$(echo "$JOB" | sed 's/3.6e6/NaN/')}"
req 400 POST /v1/solve "{\"cluster\":$CL,\"job\":$JOB,\"bogus\":1}"
req 404 GET /v2/place
req 405 GET /v1/place
head -c 1100000 /dev/zero | tr '\0' ' ' >"$TMP/big"
req 413 POST /v1/cost "@$TMP/big"
kill -TERM "$PID"
rc=0; wait "$PID" || rc=$?
PID=""
echo "valgrind: serve ($n_req requests): exit $rc; $(summary "$TMP/serve.vg") (log $TMP/serve.vg)"
serve_rc=$rc

# ---- 2. a short training run -------------------------------------------------------
rc=0
"${VG[@]}" --log-file="$TMP/train.vg" "$BIN" train --search configs/default.yaml --steps 2 \
  --out "$TMP/train" --quiet >"$TMP/train.out" 2>&1 </dev/null || rc=$?
echo "valgrind: train --search configs/default.yaml --steps 2: exit $rc; $(summary "$TMP/train.vg") (log $TMP/train.vg)"
train_rc=$rc

# ---- 3. the general training loop, its checkpoints and a resume ----------------------
cat >"$TMP/general.yaml" <<YAML
mode: general
generator: $PWD/configs/train/gen.yaml
eval: [$PWD/configs/train/eval/onprem-small-ctr-dlrm.yaml]
valid: 2
seed: 3
steps: 100
instances: 2
samples: 4
embed: 8
hidden: 8
decoder: 8
scorer: 8
eval_every: 2
eval_samples: 2
ckpt_every: 1
placement: none
threads: 1
YAML
rc=0
"${VG[@]}" --log-file="$TMP/general.vg" "$BIN" train "$TMP/general.yaml" --stop-at 2 \
  --out "$TMP/general" --quiet >"$TMP/general.out" 2>&1 </dev/null || rc=$?
echo "valgrind: train (general, 2 steps, a checkpoint per step): exit $rc; $(summary "$TMP/general.vg")"
[ "$rc" -eq 0 ] || train_rc=$rc
rc=0
"${VG[@]}" --log-file="$TMP/resume.vg" "$BIN" train "$TMP/general.yaml" --resume "$TMP/general/last.h5" \
  --stop-at 3 --out "$TMP/general" --quiet >"$TMP/resume.out" 2>&1 </dev/null || rc=$?
echo "valgrind: train --resume (step 3): exit $rc; $(summary "$TMP/resume.vg")"
[ "$rc" -eq 0 ] || train_rc=$rc

if [ "$serve_rc" -ne 0 ] || [ "$train_rc" -ne 0 ]; then
  echo "valgrind: FAIL (exit 99 is memcheck's: see the logs)" >&2
  exit 1
fi
echo "valgrind: PASS"
