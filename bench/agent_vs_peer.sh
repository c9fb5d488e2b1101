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
# steps only (setup and the exact solve excluded), on both sides. With
# ROUNDS=N each job's pair of runs is repeated N times, alternating, and
# the rates are the medians over the rounds, the ratio theirs, `lowest`
# the lowest ratio of one round (the peer's rate moves by 5-10% from run
# to run on an idle machine); the times to the optimum are round 1's.
#
# Usage: bench/agent_vs_peer.sh [SECONDS (20)] [CLUSTER.yaml]
# Environment: BUILD (default ./build, needs strata and libstrata_peer.so),
# THREADS environment threads of both (default 1), TORCH_THREADS the peer's
# intra-op threads (default 1: on 2 shared cores 2 was not faster), SEED (1),
# ROUNDS (1).
# BLAS runs on one thread (OPENBLAS_NUM_THREADS=1), as the trainer's scripts.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-20}
cluster=$(realpath "${2:-$src/configs/clusters/aws-mixed.yaml}")
build=$(realpath "${BUILD:-$src/build}")
threads=${THREADS:-1}
tthreads=${TORCH_THREADS:-1}
seed=${SEED:-1}
rounds=${ROUNDS:-1}
case "$rounds" in '' | *[!0-9]* | 0) echo "agent_vs_peer.sh: ROUNDS must be a whole number from 1" >&2; exit 2 ;; esac
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "cluster $(basename "$cluster"), $secs s each, $rounds round(s), env threads $threads, torch threads $tthreads, seed $seed"
printf '%-11s %10s %10s %6s %7s %14s %14s\n' job strata_ep/s peer_ep/s ratio lowest strata_t_opt peer_t_opt
for m in "$src"/configs/models/*.yaml; do
    name=$(basename "$m" .yaml)
    run="$tmp/$name.yaml"
    printf 'model: v1\nobjective: cost\ninclude: [%s, %s]\n' "$cluster" "$(realpath "$m")" >"$run"
    r=1
    while [ "$r" -le "$rounds" ]; do
        # --no-polish: the peer is the learning algorithm alone, so strata runs
        # without its polish of the best samples (on by default in search mode)
        "$build/strata" train --search "$run" --seconds "$secs" --seed "$seed" --threads "$threads" \
            --no-polish --out "$tmp/out-$name-$r" --overwrite --quiet --json >"$tmp/$name.strata.json"
        /usr/bin/python3 "$src/bench/agent_peer.py" "$run" --seconds "$secs" --seed "$seed" --threads "$threads" \
            --torch-threads "$tthreads" --lib "$build/libstrata_peer.so" >"$tmp/$name.peer-$r.json"
        r=$((r + 1))
    done
    /usr/bin/python3 - "$name" "$rounds" "$tmp" <<'EOF'
import csv, json, statistics, sys
name, rounds, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s_eps, p_eps, s_opt, p_opt = [], [], None, None
for r in range(1, rounds + 1):
    rows = list(csv.DictReader(open("%s/out-%s-%d/metrics.csv" % (tmp, name, r))))
    s_eps.append(float(rows[-1]["episodes"]) / float(rows[-1]["time_s"]))
    p = json.load(open("%s/%s.peer-%d.json" % (tmp, name, r)))
    p_eps.append(p["episodes_per_s"])
    if r == 1:  # the seed is the same every round: round 1's times to the optimum
        s_opt = next(((float(x["time_s"]), int(float(x["step"]))) for x in rows
                      if x["best_gap"] and float(x["best_gap"]) <= 1e-9), None)
        p_opt = (p["t_opt"], p["steps_opt"]) if p["t_opt"] is not None else None
fmt = lambda o: "%.2f s (%d)" % o if o else "-"
s_med, p_med = statistics.median(s_eps), statistics.median(p_eps)
low = min(a / b for a, b in zip(s_eps, p_eps))
print("%-11s %10.0f %10.0f %5.2fx %6.2fx %14s %14s" % (name, s_med, p_med, s_med / p_med, low,
                                                        fmt(s_opt), fmt(p_opt)))
EOF
done
