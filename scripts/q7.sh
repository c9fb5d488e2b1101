#!/bin/sh
# q7.sh -- eval question 7 (docs/results.md, section 7): the learned policy
# of strata simulate against every heuristic on held-out traces.
#
#   scripts/q7.sh [BUILD_DIR] [CHECKPOINT]
#
# Plays configs/eval/q7-shared.yaml on seeds 101-105 at load 0.9 with
# Poisson and with bursty arrivals (held out: training drew seeds from 2e6
# on, loads 0.6-0.8, Poisson only), and at load 0.7 Poisson (a trained
# load, other seeds) for reference. Prints, per setting, each method's
# mean completion time, total cost, missed deadlines and combined
# objective summed over the five traces, and the policy's objective
# against the best heuristic's. The JSON of every run is kept in
# eval-results/q7/.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
CK=${2:-checkpoints/sim-philly.h5}
OUT=eval-results/q7
mkdir -p "$OUT"
for setting in "0.9 poisson" "0.9 bursty" "0.7 poisson"; do
    set -- $setting
    for seed in 101 102 103 104 105; do
        "$B/strata" simulate configs/eval/q7-shared.yaml --policy "$CK" --load "$1" \
            --arrivals "$2" --seed "$seed" --json > "$OUT/load$1-$2-seed$seed.json"
    done
done
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
for load, arr in (("0.9", "poisson"), ("0.9", "bursty"), ("0.7", "poisson")):
    files = sorted(glob.glob(os.path.join(out, f"load{load}-{arr}-seed*.json")))
    agg = {}
    for f in files:
        d = json.load(open(f))
        for m in d["methods"]:
            s = m["summary"]
            a = agg.setdefault(m["method"], dict(jct=0.0, done=0, cost=0.0, missed=0, dl=0, obj=0.0, starved=0))
            a["jct"] += s["jct_mean"] * s["done"]
            a["done"] += s["done"]
            a["cost"] += s["cost"]
            a["missed"] += s["missed_deadlines"]
            a["dl"] += s["deadline_jobs"]
            a["obj"] += s["objective"]
            a["starved"] += s["starved"]
    best = min((a["obj"], k) for k, a in agg.items() if k != "policy")
    print(f"\nload {load}, {arr}, {len(files)} traces of 200 jobs (seeds 101-105)\n")
    print("| method | JCT mean | total cost | missed deadlines | objective | vs best heuristic |")
    print("|---|---:|---:|---:|---:|---:|")
    for k, a in agg.items():
        rel = 100 * (a["obj"] / best[0] - 1)
        print(f"| {k} | {a['jct'] / max(a['done'], 1) / 3600:.2f} h | ${a['cost']:,.0f} | "
              f"{a['missed']}/{a['dl']} | ${a['obj']:,.0f} | {rel:+.1f}% |")
    print(f"\nbest heuristic: {best[1]}")
PY
