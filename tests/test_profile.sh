#!/usr/bin/env bash
# scripts/strata-profile end to end (Debian python3-torch + python3-torchvision,
# which scripts/setup.sh installs; no download: random weights):
#  - torchvision resnet50 and vgg16 at 224x224: the totals summed from the
#    layers of the YAML it writes are within 1% of the published parameters
#    (25,557,032 and 138,357,544) and 3% of the published forward multiply-adds
#    (4.09 G and 15.47 G), and `strata check` accepts the job with a cluster;
#  - a small model file of ours (a user's file path, a functional matmul in a
#    custom module, a parameter the root owns): every figure worked out by
#    hand, in both groupings, and --measure writes its timings as comments
#    that the loader accepts;
#  - the errors: unknown module, unknown callable, input-shape mismatch, a
#    model that does not run: one line each, the right exit status, no traceback.
#
#   tests/test_profile.sh STRATA_BIN
set -euo pipefail
bin=${1:?usage: test_profile.sh STRATA_BIN}
src=$(cd "$(dirname "$0")/.." && pwd)
prof=$src/scripts/strata-profile
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# totals FILE: prints "PARAMS MACS" summed from the layers (params bytes / 4,
# flops / 6 = forward MACs), reading the unit suffixes the script writes.
totals() {
  awk '
    function val(s,   n, u) {
      n = s + 0; u = s; sub(/^[-+0-9.eE]+/, "", u)
      if (u ~ /^K/) n *= 1e3; else if (u ~ /^M/) n *= 1e6
      else if (u ~ /^G/) n *= 1e9; else if (u ~ /^T/) n *= 1e12
      return n
    }
    /^    - \{name:/ {
      match($0, /flops: [^,]*/); f = substr($0, RSTART + 7, RLENGTH - 7)
      match($0, /params: [^,]*/); p = substr($0, RSTART + 8, RLENGTH - 8)
      macs += val(f) / 6; params += val(p) / 4
    }
    END { printf "%.0f %.0f\n", params, macs }' "$1"
}

# within GOT WANT TOL: relative difference at most TOL
within() { awk -v g="$1" -v w="$2" -v t="$3" 'BEGIN { d = (g - w) / w; if (d < 0) d = -d; exit !(d <= t) }'; }

check_job() { # FILE: strata check on the job with the aws-mixed cluster
  printf 'include: [%s, %s]\n' "$src/configs/clusters/aws-mixed.yaml" "$1" >"$tmp/run.yaml"
  if ! "$bin" check "$tmp/run.yaml" >"$tmp/check.out" 2>&1; then
    bad "strata check rejects $1:"; cat "$tmp/check.out"
  fi
}

for m in "resnet50 25557032 4.09e9 18" "vgg16 138357544 15.47e9 16"; do
  set -- $m
  if ! "$prof" "torchvision.models:$1" --batch 64 --run-batch 1 >"$tmp/$1.yaml" 2>"$tmp/$1.err"; then
    bad "strata-profile $1:"; cat "$tmp/$1.err"; continue
  fi
  read -r params macs < <(totals "$tmp/$1.yaml")
  within "$params" "$2" 0.01 || bad "$1: $params parameters, published $2"
  within "$macs" "$3" 0.03 || bad "$1: $macs forward MACs, published $3"
  n=$(grep -c '^    - {name:' "$tmp/$1.yaml")
  [ "$n" = "$4" ] || bad "$1: $n layers, want $4"
  check_job "$tmp/$1.yaml"
  echo "$1: $params parameters, $macs forward MACs, $n layers"
done

# The small model: fc1 Linear(8,4) + ReLU, proj (x @ w, w 4x2), fc2 Linear(2,3),
# times the root's own `scale` (3). Per sample, by hand:
#  fc1:  MACs 8*4 = 32 -> flops 6*32 = 192; params 36 x 4 = 144 B; act 4 floats
#        = 16 B; io = the 8 input floats = 32 B; kept for backward: its input
#        (32 B) and the ReLU result (16 B) -> mem 36*16 + 64*48 = 3648 B
#  proj: MACs 4*2 = 8 -> 48; params 8 -> 32 B; act 8 B; keeps h (already
#        counted) and w (a parameter) -> mem 8*16 = 128 B
#  fc2:  MACs 2*3 = 6 -> 36; params 9 + scale 3 (first used after fc2) = 48 B;
#        act 12 B; keeps its input (8 B) and its output for the product with
#        scale (12 B) -> mem 12*16 + 64*20 = 1472 B
cat >"$tmp/small.py" <<'EOF'
import torch
import torch.nn as nn


class Proj(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 2))

    def forward(self, x):
        return x @ self.w


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 4)
        self.act = nn.ReLU()
        self.proj = Proj()
        self.fc2 = nn.Linear(2, 3)
        self.scale = nn.Parameter(torch.ones(3))

    def forward(self, x):
        return self.fc2(self.proj(self.act(self.fc1(x)))) * self.scale


class Broken(nn.Module):
    def forward(self, x):
        raise ValueError("no forward for you")


def build():
    return Net()


def broken():
    return Broken()
EOF
want='    - {name: fc1, flops: 192FLOP, io: 32B, act: 16B, params: 144B, mem: 3.648KB}
    - {name: proj, flops: 48FLOP, io: 0, act: 8B, params: 32B, mem: 128B}
    - {name: fc2, flops: 36FLOP, io: 0, act: 12B, params: 48B, mem: 1.472KB}'
for grp in blocks modules; do
  got=$("$prof" "$tmp/small.py:build" --input-shape 8 --group $grp --name small 2>&1 | grep '^    - {name:\|^strata-profile:\|Error' || true)
  [ "$got" = "$want" ] || { bad "small model, --group $grp:"; diff <(echo "$want") <(echo "$got") || true; }
done
"$prof" "$tmp/small.py:build" --input-shape 8 --measure --repeat 1 --names a,b,c >"$tmp/small.yaml" || true
n=$(grep -c '^    - {name: [abc], .*}  # measured: [0-9.e+-]* ms/sample' "$tmp/small.yaml" || true)
[ "$n" = 3 ] || { bad "--measure: $n of 3 layers carry a measured comment"; cat "$tmp/small.yaml"; }
check_job "$tmp/small.yaml"

# expect_error STATUS TEXT ARGS...: fails unless the script exits with STATUS
# and one line on stderr containing TEXT.
expect_error() {
  local want=$1 text=$2 rc=0; shift 2
  "$prof" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ "$rc" != "$want" ] || ! grep -qF -- "$text" "$tmp/err" || [ "$(wc -l <"$tmp/err")" != 1 ] \
     || [ -s "$tmp/out" ]; then
    bad "strata-profile $* -> status $rc, want $want and one line with '$text':"; cat "$tmp/err"
  fi
}
expect_error 2 "unknown module 'torchvision.modelz'" torchvision.modelz:resnet50
expect_error 2 "module 'torchvision.models' has no callable 'resnet5' (did you mean 'resnet50'?)" \
  torchvision.models:resnet5
expect_error 2 "no such model file: $tmp/none.py" "$tmp/none.py:build"
expect_error 1 "input shape 3,224 (tensor (2,3,224)) does not fit the model: conv1 (Conv2d) failed:" \
  torchvision.models:resnet18 --input-shape 3,224
expect_error 1 "input shape 7 (tensor (2,7)) does not fit the model: fc1 (Linear) failed: mat1 and mat2" \
  "$tmp/small.py:build" --input-shape 7
expect_error 1 "the model does not run on input 8 (tensor (2,8)): model (Broken) raised ValueError: no forward for you" \
  "$tmp/small.py:broken" --input-shape 8

if [ $fail = 0 ]; then echo "strata-profile: all passed"; fi
exit $fail
