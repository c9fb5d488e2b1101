#!/bin/sh
# q7.sh -- eval question 7 (docs/results.md, section 7): the learned policy
# of strata simulate against every heuristic on held-out traces.
#
#   scripts/q7.sh [BUILD_DIR] [CHECKPOINT...]
#
# Plays configs/eval/q7-shared.yaml on seeds 101-105 at load 0.9 with
# Poisson and with bursty arrivals (held out: training drew seeds from 2e6
# on, loads 0.6-0.8, Poisson only), and at load 0.7 Poisson (a trained
# load, other seeds) for reference: every heuristic once, and each
# checkpoint (default checkpoints/sim-philly.h5) as the policy. Prints, per
# setting, each method's mean completion time, total cost and missed
# deadlines over the five traces, and the combined objective -- with the
# config's weights ($1 per $, $2 per job-hour, $50 per missed deadline)
# and with $200 per missed deadline -- against the best heuristic's. The
# JSON of every run is kept in eval-results/q7/.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- checkpoints/sim-philly.h5
OUT=eval-results/q7
rm -rf "$OUT"
mkdir -p "$OUT"
for setting in "0.9 poisson" "0.9 bursty" "0.7 poisson"; do
    load=${setting% *}
    arr=${setting#* }
    for seed in 101 102 103 104 105; do
        base="$OUT/load$load-$arr-seed$seed"
        "$B/strata" simulate configs/eval/q7-shared.yaml --method fcfs --method exact-wait \
            --method smd --method gavel --load "$load" --arrivals "$arr" --seed "$seed" \
            --json > "$base-heuristics.json"
        for ck in "$@"; do
            name=$(basename "$ck" .h5)
            "$B/strata" simulate configs/eval/q7-shared.yaml --method policy --policy "$ck" \
                --load "$load" --arrivals "$arr" --seed "$seed" --json > "$base-policy:$name.json"
        done
    done
done
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
for load, arr in (("0.9", "poisson"), ("0.9", "bursty"), ("0.7", "poisson")):
    files = sorted(glob.glob(os.path.join(out, f"load{load}-{arr}-seed*.json")))
    agg, traces = {}, set()
    for f in files:
        d = json.load(open(f))
        traces.add(f.split("-seed")[1].split("-")[0])
        tag = f.split("-policy:")[1][:-5] if "-policy:" in f else ""
        for m in d["methods"]:
            s = m["summary"]
            name = m["method"] if m["method"] != "policy" else f"policy ({tag})"
            a = agg.setdefault(name, dict(jct=0.0, done=0, jobs=0, cost=0.0, missed=0, dl=0, obj=0.0))
            a["jct"] += s["jct_mean"] * s["done"]
            a["done"] += s["done"]
            a["jobs"] += s["jobs"]
            a["cost"] += s["cost"]
            a["missed"] += s["missed_deadlines"]
            a["dl"] += s["deadline_jobs"]
            a["obj"] += s["objective"]
    for a in agg.values():  # every job finished: the objective at $200 a miss
        assert a["done"] == a["jobs"]
        a["obj200"] = a["cost"] + 2 * a["jct"] / 3600 + 200 * a["missed"]
    heur = [k for k in agg if not k.startswith("policy")]
    b50 = min(heur, key=lambda k: agg[k]["obj"])
    b200 = min(heur, key=lambda k: agg[k]["obj200"])
    print(f"\nload {load}, {arr}: {len(traces)} traces of 200 jobs (seeds 101-105); "
          f"best heuristic {b50} at $50 a miss, {b200} at $200\n")
    print("| method | JCT mean | total cost | missed deadlines | objective ($50/miss) | vs best | objective ($200/miss) | vs best |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for k, a in agg.items():
        print(f"| {k} | {a['jct'] / a['done'] / 3600:.2f} h | ${a['cost']:,.0f} | {a['missed']}/{a['dl']} | "
              f"${a['obj']:,.0f} | {100 * (a['obj'] / agg[b50]['obj'] - 1):+.1f}% | "
              f"${a['obj200']:,.0f} | {100 * (a['obj200'] / agg[b200]['obj200'] - 1):+.1f}% |")
PY
