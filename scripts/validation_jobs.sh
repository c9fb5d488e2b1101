#!/usr/bin/env bash
# Writes configs/measurements/jobs/*.yaml: strata jobs of the four models
# scripts/measure_torch.py trains (scripts/torch_models.py), profiled by
# scripts/strata-profile at the input sizes they are trained at
# (docs/validation.md). One torch thread, as in the measurements.
set -euo pipefail
cd "$(dirname "$0")/.."
out=configs/measurements/jobs
mkdir -p "$out"
prof() { # NAME BATCH SHAPE...
    local name=$1 batch=$2
    shift 2
    local shapes=()
    for s in "$@"; do shapes+=(--input-shape "$s"); done
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 scripts/strata-profile \
        "scripts/torch_models.py:$name" "${shapes[@]}" --batch "$batch" --threads 1 >"$out/$name.yaml"
    echo "wrote $out/$name.yaml"
}
prof resnet18 32 3,64,64
prof vgg11 32 3,32,32
prof transformer 32 64:int64:8000
prof ctr 256 13 8,4:int64:20000
