#!/bin/sh
# agent_vs_peer.sh -- strata's search mode against its PyTorch peer.
#
# For every shipped model (configs/models/*.yaml) on one shipped cluster
# (aws-mixed by default), runs `strata train --search` and
# bench/agent_peer.py (the same network, algorithm and environment, the
# learner in PyTorch) for the same number of seconds, one after the other,
# and prints for both: episodes per second, the ratio strata / peer, and the
# time and step at which the best plan sampled first reached the exact
# solver's optimum ("-": not within the budget). Times count the training
# steps only (setup and the exact solve excluded), on both sides.
#
# Usage: bench/agent_vs_peer.sh [SECONDS (20)] [CLUSTER.yaml]
# Environment: BUILD (default ./build, needs strata and libstrata_peer.so),
# THREADS environment threads of both (default 1), TORCH_THREADS the peer's
# intra-op threads (default 1: on 2 shared cores 2 was not faster), SEED (1).
# BLAS runs on one thread (OPENBLAS_NUM_THREADS=1), as the trainer's scripts.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-20}
cluster=$(realpath "${2:-$src/configs/clusters/aws-mixed.yaml}")
build=$(realpath "${BUILD:-$src/build}")
threads=${THREADS:-1}
tthreads=${TORCH_THREADS:-1}
seed=${SEED:-1}
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "cluster $(basename "$cluster"), $secs s each, env threads $threads, torch threads $tthreads, seed $seed"
printf '%-11s %10s %10s %6s %14s %14s\n' job strata_ep/s peer_ep/s ratio strata_t_opt peer_t_opt
for m in "$src"/configs/models/*.yaml; do
    name=$(basename "$m" .yaml)
    run="$tmp/$name.yaml"
    printf 'model: v1\nobjective: cost\ninclude: [%s, %s]\n' "$cluster" "$(realpath "$m")" >"$run"
    # --no-polish: the peer is the learning algorithm alone, so strata runs
    # without its polish of the best samples (on by default in search mode)
    "$build/strata" train --search "$run" --seconds "$secs" --seed "$seed" --threads "$threads" \
        --no-polish --out "$tmp/out-$name" --overwrite --quiet --json >"$tmp/$name.strata.json"
    /usr/bin/python3 "$src/bench/agent_peer.py" "$run" --seconds "$secs" --seed "$seed" --threads "$threads" \
        --torch-threads "$tthreads" --lib "$build/libstrata_peer.so" >"$tmp/$name.peer.json"
    /usr/bin/python3 - "$name" "$tmp/out-$name/metrics.csv" "$tmp/$name.peer.json" <<'EOF'
import csv, json, sys
name, metrics, peer = sys.argv[1:4]
rows = list(csv.DictReader(open(metrics)))
last = rows[-1]
s_eps = float(last["episodes"]) / float(last["time_s"])
s_opt = next(((float(r["time_s"]), int(float(r["step"]))) for r in rows
              if r["best_gap"] and float(r["best_gap"]) <= 1e-9), None)
p = json.load(open(peer))
p_opt = (p["t_opt"], p["steps_opt"]) if p["t_opt"] is not None else None
fmt = lambda o: "%.2f s (%d)" % o if o else "-"
print("%-11s %10.0f %10.0f %5.2fx %14s %14s" % (name, s_eps, p["episodes_per_s"], s_eps / p["episodes_per_s"],
                                                fmt(s_opt), fmt(p_opt)))
EOF
done
