#!/usr/bin/python3
"""ckpt_widen_check.py -- scripts/ckpt_widen.py on a real version-4 policy.

tests/data/policy/general-27769.h5 (look-ahead version 4: type rows of
16 + 7 features) is grown by strata itself into this build's layout
(`strata train --resume ... --stop-at 27769`, no step taken), then
widened by the script. Checks, with h5py, every tensor and Adam moment of
the result against the version-4 file -- the type rows' two new columns
equal to features 6 and 5, every other column where it was -- and the
step; with strata, that the grown file decodes the same plan as the
version-4 file (growing adds zero weights), that the widened file loads
and decodes a plan of its own; and that a layout of the wrong width, of
another tensor shape or without a tensor, and a missing file, are
refused with a message naming the file, writing nothing.

Usage: ckpt_widen_check.py STRATA TMPDIR
"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
SCRIPT = os.path.join(ROOT, "scripts", "ckpt_widen.py")
V4 = os.path.join(ROOT, "tests", "data", "policy", "general-27769.h5")
CONFIG = os.path.join(ROOT, "configs", "train", "general-fit-d.yaml")
JOB = os.path.join(ROOT, "configs", "train", "eval", "aws-mixed-bert-base.yaml")
GT, FX4 = 16, 7  # gym's type features; look-ahead features in version 4

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(args, **kw):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.run(args, capture_output=True, text=True, env=env, **kw)


def tensors(f):
    """The names of f's network tensors (its datasets outside /meta)."""
    names = []
    f.visititems(lambda n, d: names.append(n) if isinstance(d, h5py.Dataset) and not n.startswith("meta") else None)
    return names


def refused(args, what, *named):
    """Runs the script on args (its output bad.h5), checks it fails with a
    message holding every string of named and writes nothing."""
    bad = args[-1]
    p = run([sys.executable, SCRIPT] + args)
    check(p.returncode != 0 and all(x in p.stderr for x in named) and "Traceback" not in p.stderr,
          "%s is refused, naming %s (%s)" % (what, ", ".join(named), p.stderr.strip()[:200]))
    check(not os.path.exists(bad), "and %s is not written" % os.path.basename(bad))


def plan_cost(strata, ckpt):
    p = run([strata, "solve", JOB, "--method", "policy", "--policy", ckpt])
    if p.returncode != 0:
        return None, p.stderr.strip()
    line = [x for x in p.stdout.splitlines() if ", cost $" in x]
    return (line[-1].split(", cost $")[-1] if line else None), p.stdout


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: ckpt_widen_check.py STRATA TMPDIR")
    strata, tmp = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    grown_dir = os.path.join(tmp, "grown")
    p = run([strata, "train", CONFIG, "--resume", V4, "--stop-at", "27769", "--out", grown_dir, "--quiet"],
            cwd=tmp)
    check(p.returncode == 0, "strata grows the version-4 file without a step (rc %d: %s)"
          % (p.returncode, p.stderr.strip()[-300:]))
    grown = os.path.join(grown_dir, "last.h5")
    out = os.path.join(tmp, "widened.h5")
    p = run([sys.executable, SCRIPT, V4, grown, out])
    check(p.returncode == 0 and os.path.exists(out), "the script widens it (%s)" % (p.stdout + p.stderr).strip())
    if failures:
        sys.exit(1)

    with h5py.File(V4, "r") as s, h5py.File(out, "r") as o:
        names = tensors(s)
        check(len(names) > 20 and sorted(names) == sorted(tensors(o)),
              "the same %d tensors in both files" % len(names))
        for name in names:
            for pre in ("", "meta/optimizer/m/", "meta/optimizer/v/"):
                x, y = s[pre + name][...], o[pre + name][...]
                if name not in ("type_row/w", "decoder/w_ih"):
                    if not np.array_equal(x, y):
                        check(False, "%s%s copied as is" % (pre, name))
                    continue
                # type_row/w starts with the type row; decoder/w_ih ends with it
                look = GT if name == "type_row/w" else x.shape[1] - FX4
                same = (y.shape == (x.shape[0], x.shape[1] + 2) and
                        np.array_equal(y[:, :look + FX4], x[:, :look + FX4]) and
                        np.array_equal(y[:, look + 9:], x[:, look + FX4:]) and
                        np.array_equal(y[:, look + 7], x[:, look + 6]) and
                        np.array_equal(y[:, look + 8], x[:, look + 5]))
                check(same, "%s%s: %s -> %s, features 7-8 from 6 and 5, the rest in place"
                      % (pre, name, x.shape, y.shape))
        check(int(o["meta"].attrs["step"]) == 27769, "the step is the version-4 file's")
        check(np.any(o["type_row/w"][:, GT + 8] != 0), "feature 8's weights are not zero")

    c4, why4 = plan_cost(strata, V4)
    cg, _ = plan_cost(strata, grown)
    cw, whyw = plan_cost(strata, out)
    check(c4 is not None, "the version-4 file decodes a plan (%s)" % (c4 or why4))
    check(c4 is not None and c4 == cg, "the grown file decodes the same plan's cost ($%s, $%s)" % (c4, cg))
    check(cw is not None, "the widened file loads and decodes a plan ($%s; %s)" % (cw, "" if cw else whyw))

    bad = os.path.join(tmp, "bad.h5")
    refused([V4, V4, bad], "a layout of the version-4 width", V4, "not a version-4 file and its version-5 layout")
    missing = os.path.join(tmp, "missing.h5")
    refused([missing, grown, bad], "a missing file", missing, "cannot be read as HDF5")
    # a layout of another network: one tensor of another shape, or one short
    other = os.path.join(tmp, "other.h5")
    shutil.copy(grown, other)
    with h5py.File(other, "r+") as f:
        del f["embed/w"]
        f.create_dataset("embed/w", data=np.zeros((33, 12), np.float32))
    refused([V4, other, bad], "a layout whose embed/w is wider", "embed/w", "(33, 12)")
    with h5py.File(other, "r+") as f:
        del f["embed/w"]
    refused([V4, other, bad], "a layout without embed/w", other, "not the same tensors")
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
