#!/usr/bin/env bash
# Sets up (installs what is missing, builds) and runs strata's main job on
# the shipped default config (configs/default.yaml: the CTR model on the
# mixed AWS-style cluster): validates the config, then scores the plan
# people write by hand (embeddings on CPU servers, the rest on A100s)
# against the all-A100 plan.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${1:-configs/default.yaml}

scripts/setup.sh >/dev/null
S=build/strata

$S check "$CONFIG"
echo
echo "== hand rule: embeddings on CPU servers, dense layers on A100"
$S cost "$CONFIG" --assign A100,CPU,CPU,CPU,CPU,CPU,CPU,A100,A100,A100,A100 || true
echo
echo "== all on A100"
$S cost "$CONFIG" --assign A100 || true
