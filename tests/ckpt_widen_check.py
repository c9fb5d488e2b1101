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
and decodes a plan of its own, and that a layout of the wrong width or a
missing file is refused with a message naming the file.

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
        names = []
        s.visititems(lambda n, d: names.append(n)
                     if isinstance(d, h5py.Dataset) and not n.startswith("meta") else None)
        onames = []
        o.visititems(lambda n, d: onames.append(n)
                     if isinstance(d, h5py.Dataset) and not n.startswith("meta") else None)
        check(len(names) > 20 and sorted(names) == sorted(onames),
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
    cg, whyg = plan_cost(strata, grown)
    cw, whyw = plan_cost(strata, out)
    check(c4 is not None, "the version-4 file decodes a plan (%s)" % (c4 or why4))
    check(c4 is not None and c4 == cg, "the grown file decodes the same plan's cost ($%s, $%s)" % (c4, cg))
    check(cw is not None, "the widened file loads and decodes a plan ($%s; %s)" % (cw, "" if cw else whyw))

    p = run([sys.executable, SCRIPT, V4, V4, os.path.join(tmp, "bad.h5")])
    check(p.returncode != 0 and V4 in p.stderr and "not a version-4 file and its version-5 layout" in p.stderr,
          "a layout of the wrong width is refused, naming the files (%s)" % p.stderr.strip())
    check(not os.path.exists(os.path.join(tmp, "bad.h5")), "and nothing is written")
    missing = os.path.join(tmp, "missing.h5")
    p = run([sys.executable, SCRIPT, missing, grown, os.path.join(tmp, "bad.h5")])
    check(p.returncode != 0 and missing in p.stderr and "Traceback" not in p.stderr,
          "a missing file is an error naming it (%s)" % p.stderr.strip()[:200])
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
