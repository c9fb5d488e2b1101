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
# and with $200 per missed deadline -- against the best heuristic's. Then
# the same on the four shipped held-out traces of configs/sim/heldout-*.yaml
# (seeds 1001-1004, load 0.95; philly Poisson and bursty, and the Helios
# and PAI presets, which training never drew from), judged with the same
# weights. JCT mean is over finished jobs; the objective counts a job that
# never started (starved) until the run's end, and a rejected one (no plan
# even on the empty cluster) not at all, as sim_objective does. The JSON of
# every run is kept in eval-results/q7/.
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
            --method smd --method gavel --method sjf --load "$load" --arrivals "$arr" --seed "$seed" \
            --json > "$base-heuristics.json"
        for ck in "$@"; do
            name=$(basename "$ck" .h5)
            "$B/strata" simulate configs/eval/q7-shared.yaml --method policy --policy "$ck" \
                --load "$load" --arrivals "$arr" --seed "$seed" --json > "$base-policy:$name.json"
        done
    done
done
for cfg in configs/sim/heldout-philly-095.yaml configs/sim/heldout-philly-bursty-095.yaml \
    configs/sim/heldout-helios-095.yaml configs/sim/heldout-pai-095.yaml; do
    base="$OUT/shipped-$(basename "$cfg" .yaml)"
    "$B/strata" simulate "$cfg" --method fcfs --method exact-wait --method smd --method gavel \
        --method sjf \
        --json > "$base-heuristics.json"
    for ck in "$@"; do
        "$B/strata" simulate "$cfg" --method policy --policy "$ck" --json \
            > "$base-policy:$(basename "$ck" .h5).json"
    done
done
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
settings = [(f"load {l}, {a}: 5 traces of 200 jobs (seeds 101-105)", f"load{l}-{a}-seed*.json")
            for l, a in (("0.9", "poisson"), ("0.9", "bursty"), ("0.7", "poisson"))]
settings += [(f"{c}: its shipped 200-job trace", f"shipped-{c}-*.json")
             for c in ("heldout-philly-095", "heldout-philly-bursty-095", "heldout-helios-095",
                       "heldout-pai-095")]
for title, pattern in settings:
    files = sorted(glob.glob(os.path.join(out, pattern)))
    agg = {}
    for f in files:
        d = json.load(open(f))
        tag = f.split("-policy:")[1][:-5] if "-policy:" in f else ""
        for m in d["methods"]:
            name = m["method"] if m["method"] != "policy" else f"policy ({tag})"
            a = agg.setdefault(name, dict(jct=0.0, done=0, cost=0.0, missed=0, dl=0, rejected=0))
            # from the jobs, as sim_objective counts: rejected jobs (no plan
            # even on the empty cluster, the same for every method) count
            # nothing, starved ones (never started) their time to the end
            for j in m["jobs"]:
                assert j["state"] in ("done", "rejected", "starved"), j["state"]
                if j["state"] == "rejected":
                    a["rejected"] += 1
                    continue
                if j["state"] == "starved":
                    a["starved"] = a.get("starved", 0) + 1
                    a["jct_all"] = a.get("jct_all", 0.0) + max(0.0, m["summary"]["makespan"] - j["arrival"])
                else:
                    a["done"] += 1
                    a["jct"] += j["completion_time"]
                    a["cost"] += j["cost"]
                if j["deadline_met"] is not None:
                    a["dl"] += 1
                    a["missed"] += not j["deadline_met"]
    for a in agg.values():
        t = a["jct"] + a.get("jct_all", 0.0)
        a["obj"] = a["cost"] + 2 * t / 3600 + 50 * a["missed"]
        a["obj200"] = a["cost"] + 2 * t / 3600 + 200 * a["missed"]
    heur = [k for k in agg if not k.startswith("policy")]
    b50 = min(heur, key=lambda k: agg[k]["obj"])
    b200 = min(heur, key=lambda k: agg[k]["obj200"])
    rej = agg[heur[0]]["rejected"]
    print(f"\n{title}; best heuristic {b50} at $50 a miss, {b200} at $200"
          + (f"; {rej} jobs rejected by every method (no plan on the empty cluster)" if rej else "") + "\n")
    print("| method | JCT mean | total cost | missed deadlines | objective ($50/miss) | vs best | objective ($200/miss) | vs best |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for k, a in agg.items():
        st = f" ({a['starved']} starved)" if a.get("starved") else ""
        print(f"| {k}{st} | {a['jct'] / a['done'] / 3600:.2f} h | ${a['cost']:,.0f} | {a['missed']}/{a['dl']} | "
              f"${a['obj']:,.0f} | {100 * (a['obj'] / agg[b50]['obj'] - 1):+.1f}% | "
              f"${a['obj200']:,.0f} | {100 * (a['obj200'] / agg[b200]['obj200'] - 1):+.1f}% |")
PY
