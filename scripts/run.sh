#!/usr/bin/env bash
# Sets up (installs what is missing, builds) and runs strata's main job on
# the shipped default config (configs/default.yaml: the CTR model on the
# mixed AWS-style cluster): validates the config, trains a small policy on
# the job for a minute (strata train --search) and compares its plan with
# the proven optimum, the baselines people use and the shipped general
# policy, then places the plan's tasks on the cluster's nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${1:-configs/default.yaml}
SECONDS_BUDGET=${STRATA_TRAIN_SECONDS:-60}

scripts/setup.sh >/dev/null
S=build/strata

$S check "$CONFIG"
echo
echo "== a policy trained on this job for ${SECONDS_BUDGET} s, against the baselines"
# --overwrite: a re-run replaces the previous run's runs/search
$S train --search "$CONFIG" --seconds "$SECONDS_BUDGET" --compare --quiet --out runs/search --overwrite
echo
echo "== its tasks on the cluster's nodes (strata place --method best)"
$S place "$CONFIG" --method best --plan-method exact
