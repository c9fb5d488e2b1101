#!/usr/bin/python3
"""ckpt_inspect.py -- describe a strata nets checkpoint (nets/ckpt.h) as JSON.

Reads the file with h5py only, the way a Python user would, and prints one
JSON object: the root attribute layer_names, per layer its weight_names and
each weight's shape, dtype and sum; the /meta attributes, hyperparameters
(with their HDF5 types), the config YAML text and the optimizer moments'
shapes. tests/test_nets_ckpt.c runs it on a checkpoint written by C and
checks every field, which proves the layout is what h5py users expect.

Usage: /usr/bin/python3 scripts/ckpt_inspect.py CHECKPOINT.h5
"""
import json
import sys

import h5py
import numpy as np


def text(v):
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def plain(v):
    """An attribute value as JSON: ints, floats, strings, lists of them."""
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, (bytes, str)):
        return text(v)
    if isinstance(v, (np.integer, int)):
        return int(v)
    return float(v)


def kind(v):
    if isinstance(v, (bytes, str)):
        return "str"
    if isinstance(v, (np.integer, int)):
        return "int"
    return "real"


def tensor(d):
    return {"shape": list(d.shape), "dtype": str(d.dtype), "sum": float(np.sum(d[()], dtype=np.float64)),
            "fletcher32": bool(d.fletcher32)}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: ckpt_inspect.py CHECKPOINT.h5")
    out = {}
    with h5py.File(sys.argv[1], "r") as f:
        names = [text(n) for n in f.attrs["layer_names"]]
        out["layer_names"] = names
        out["layers"] = {}
        for ln in names:
            g = f[ln]
            wn = [text(n) for n in g.attrs["weight_names"]]
            out["layers"][ln] = {"weight_names": wn, "weights": {w: tensor(g[w]) for w in wn}}
        meta = f["meta"]
        out["meta"] = {k: plain(v) for k, v in meta.attrs.items()}
        out["hparams"] = {k: {"type": kind(v), "value": plain(v)} for k, v in meta["hparams"].attrs.items()}
        out["config_yaml"] = text(meta["config_yaml"][0])
        out["optimizer"] = {}
        for mv in ("m", "v"):
            out["optimizer"][mv] = {f"{ln}/{w}": tensor(meta["optimizer"][mv][ln][w])
                                    for ln in names for w in out["layers"][ln]["weight_names"]}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
