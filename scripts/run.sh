#!/usr/bin/env bash
# Sets up (installs what is missing, builds) and runs strata's main job on
# the shipped default config (configs/default.yaml: the CTR model on the
# mixed AWS-style cluster): validates the config, finds the proven optimal
# plan, compares it with the plans people use, and places its tasks.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${1:-configs/default.yaml}

scripts/setup.sh >/dev/null
S=build/strata

$S check "$CONFIG"
echo
echo "== the optimal plan (strata solve --method exact)"
$S solve "$CONFIG" --method exact
echo
echo "== against the baselines"
printf '%-12s %12s %14s\n' method 'cost ($)' 'samples/s'
for m in exact homogeneous rule greedy anneal; do
  $S solve "$CONFIG" --method "$m" --json |
    sed -n 's/^  "\(cost\|throughput\)": \(.*\),$/\2/p' | paste -sd' ' |
    { read -r c t; printf '%-12s %12.2f %14.0f\n' "$m" "$c" "$t"; }
done
echo
echo "== its tasks on the cluster's nodes (strata place --method best)"
$S place "$CONFIG" --method best --plan-method exact
