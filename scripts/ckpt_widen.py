#!/usr/bin/python3
"""ckpt_widen.py -- start look-ahead features 7-8 from their version-4 analogues.

A version-4 policy (checkpoints/general-39113.h5, installed until the
twenty-seventh session) read by this build gets look-ahead features 7 and 8 (the cheapest
completion that fits the unit counts, agent/rollout.h) with zero weights
and no Adam moments: the same policy, which then has to learn to read
them. This script writes the version-4 file's weights, Adam moments and
step into the version-5 layout with those two features' weights -- in
the type scorer's first layer (type_row/w) and in the decoder's input for
the previous choice (decoder/w_ih) -- and moments copied from features 6
and 5 (whether the cheapest completion fits, and its cost), so that the
network reads the fitting completion as it read the cheapest one. It was
the start of configs/train/general-fit-d.yaml (docs/agent-runs.md,
"Look-ahead version 5, a third seed") and of general-fit-f.yaml.

The layout comes from a file of the same network written by this build
(versions 5 to 9 share the rows; the output records the layout file's
version, and the twenty-sixth session's general-fit-f.yaml started from a
version-6 one), which strata writes without taking a training step:
  OPENBLAS_NUM_THREADS=1 build/strata train configs/train/general-fit-d.yaml \\
      --resume checkpoints/general-39113.h5 --stop-at 39113 --out /tmp/grown
  /usr/bin/python3 scripts/ckpt_widen.py checkpoints/general-39113.h5 /tmp/grown/last.h5 /tmp/start.h5

Usage: /usr/bin/python3 scripts/ckpt_widen.py V4.h5 LAYOUT_V5.h5 OUT.h5
"""
import shutil
import sys

import h5py
import numpy as np

GYM_TYPE_FEATS = 16  # gym's features of a type row, before the look-ahead's
FX4, FX5 = 7, 9      # look-ahead features in versions 4 and 5
# the layers whose input ends (decoder) or starts (type scorer) with a type row
ROWS = {"type_row/w": "first", "decoder/w_ih": "last"}


def widen(x, shape, where):
    """x[out, in] of version 4 in a version-5 shape: the type row's two new
    columns after its FX4 look-ahead ones, copied from features 6 and 5."""
    y = np.zeros(shape, x.dtype)
    row = 0 if where == "first" else x.shape[1] - GYM_TYPE_FEATS - FX4
    look = row + GYM_TYPE_FEATS
    y[:, :look + FX4] = x[:, :look + FX4]
    y[:, look + FX5:] = x[:, look + FX4:]
    y[:, look + 7] = x[:, look + 6]
    y[:, look + 8] = x[:, look + 5]
    return y


def tensors(f):
    """The names of f's network tensors (its datasets outside /meta)."""
    names = []
    f.visititems(lambda n, d: names.append(n) if isinstance(d, h5py.Dataset) and not n.startswith("meta") else None)
    return names


def open_h5(path):
    """path opened read-only, or the script stops with a line naming it."""
    try:
        return h5py.File(path, "r")
    except OSError as e:
        sys.exit("%s: cannot be read as HDF5 (%s)" % (path, e))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-1])
    v4, layout, out = sys.argv[1:4]
    with open_h5(v4) as s, open_h5(layout) as t:
        names = tensors(s)
        if sorted(names) != sorted(tensors(t)):
            sys.exit("%s and %s: not the same tensors" % (v4, layout))
        for name in names:
            a, b = s[name].shape, t[name].shape
            want = (a[0], a[1] + FX5 - FX4) if name in ROWS else a
            if b != want:
                sys.exit("%s and %s: %s is %s and %s, not a version-4 file and its version-5 layout"
                         % (v4, layout, name, a, b))
    shutil.copy(layout, out)
    with open_h5(v4) as s, h5py.File(out, "r+") as o:
        for name in tensors(s):
            for pre in ("", "meta/optimizer/m/", "meta/optimizer/v/"):
                x = s[pre + name][...]
                o[pre + name][...] = widen(x, o[pre + name].shape, ROWS[name]) if name in ROWS else x
        for k, v in s["meta"].attrs.items():
            o["meta"].attrs[k] = v
    print("%s -> %s: version-5 layout, features 7-8 from 6 and 5 (weights and Adam moments)" % (v4, out))


if __name__ == "__main__":
    main()
