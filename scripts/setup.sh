#!/usr/bin/env bash
# Installs the Debian packages strata needs (only those missing) and builds
# it with CMake into build/ (or $STRATA_BUILD_DIR). Non-interactive: safe in
# CI with no standard input. As root it calls apt-get directly, otherwise
# through sudo -n.
#
#   scripts/setup.sh            install what is missing, configure, build
#   STRATA_SANITIZE=1 scripts/setup.sh   the same, built with ASan + UBSan
set -euo pipefail

cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake pkg-config
  libopenblas-dev            # cblas: every matrix product in nets/
  libhdf5-dev hdf5-tools     # checkpoints, h5dump
  libyaml-dev                # configs
  libmicrohttpd-dev          # the placement daemon
  libjansson-dev             # JSON in the daemon and --json output
  libsqlite3-dev             # the daemon's state file (serve --state): jobs, fixed plans, placements
  libcurl4-openssl-dev       # the extender's bindVerb: the pod's Binding through the API server (HTTPS)
  libcmocka-dev              # unit tests
  libglpk-dev                # ILP for the exact solver
  libopenmpi-dev openmpi-bin # training across machines
  python3 python3-numpy python3-h5py python3-torch  # reference tests
  python3-torchvision        # scripts/strata-profile (tests/test_profile.sh), scripts/torch_models.py: torchvision models to profile and time
  python3-kubernetes         # tests/kube_nodes.py, kube_extender.py: Node and Pod objects
  python3-jsonschema python3-yaml  # tests/manifest_schema.py: strata manifest vs the CRDs' schemas
  gnuplot-nox                # plots of strata eval
  wrk                        # daemon benchmark
  clang libclang-rt-14-dev   # libFuzzer + sanitizer runtimes: scripts/fuzz, CI's fuzz smoke
  valgrind                   # scripts/valgrind.sh (memcheck of the daemon and training)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo -n); fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
fi

BUILD_DIR=${STRATA_BUILD_DIR:-build}
SAN=OFF
if [ "${STRATA_SANITIZE:-0}" = 1 ]; then SAN=ON; BUILD_DIR=${STRATA_BUILD_DIR:-build-san}; fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${STRATA_BUILD_TYPE:-RelWithDebInfo} -DSTRATA_SANITIZE=$SAN >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
