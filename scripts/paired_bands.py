#!/usr/bin/python3
"""paired_bands.py -- is one policy file really better than another, by band?

Two `strata eval` runs of the same draws of the held-out generator (the
q8-general-bands configs, one with each checkpoint) give, per job, each
method's gap to the exact optimum (results.csv: the `exact` rows' cost, the
method's rows' cost; a method run with several seeds counts as the job's
mean over them). This script pairs the jobs of a BASE run and a CANDIDATE
run, over as many draws as are given, and prints, per size band and
method, the mean of candidate - base in points with a 95% interval from a
bootstrap over the jobs (resampled within each draw, so every draw keeps
its number of jobs), and the mean per draw. An interval that holds 0 is a
difference the draws cannot tell from noise (docs/agent-runs.md, "Faster
draws, 90 more minutes").

Usage:
  scripts/paired_bands.py BASE_DIR:CAND_DIR [BASE_DIR:CAND_DIR ...]
      [--methods greedy,best-of-16] [--resamples 2000] [--seed 1]

Each argument is one draw: two output folders of `strata eval --out`.
A job that either run left without a plan (or without a row of the
method) is skipped, and counted; two runs whose exact costs differ on a
job are not the same draw, an error.
"""
import argparse
import collections
import csv
import os
import random
import sys

BANDS = ((1, 8), (9, 16), (17, 32), (33, 64))


def read(folder):
    """A run's rows: the layer count and exact's cost per instance (those
    with an exact plan), and the rows themselves."""
    path = os.path.join(folder, "results.csv")
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit("paired_bands: %s: %s" % (path, e.strerror))
    for col in ("instance", "layers", "method", "feasible", "cost"):
        if rows and col not in rows[0]:
            sys.exit("paired_bands: %s: no column '%s'" % (path, col))
    layers = {r["instance"]: int(r["layers"]) for r in rows}
    exact = {r["instance"]: float(r["cost"]) for r in rows
             if r["method"] == "exact" and r["feasible"] == "1"}
    return {"path": path, "rows": rows, "layers": layers, "exact": exact}


def gaps(run, method):
    """Per instance: the method's gap in percent (mean over its seeds), and
    the instances with rows of the method; instances without an exact plan
    or with an infeasible row of the method get no gap."""
    exact, g, bad, seen = run["exact"], collections.defaultdict(list), set(), set()
    for r in run["rows"]:
        if r["method"] != method:
            continue
        seen.add(r["instance"])
        if r["instance"] not in exact:
            continue
        if r["feasible"] != "1":
            bad.add(r["instance"])
            continue
        g[r["instance"]].append((float(r["cost"]) / exact[r["instance"]] - 1) * 100)
    if not seen:
        sys.exit("paired_bands: %s: no rows of method '%s'" % (run["path"], method))
    return {k: sum(v) / len(v) for k, v in g.items() if k not in bad}, seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("draws", nargs="+", metavar="BASE_DIR:CAND_DIR")
    ap.add_argument("--methods", default="greedy,best-of-16")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.resamples < 1:
        sys.exit("paired_bands: --resamples %d: want at least 1" % a.resamples)
    pairs = []
    for d in a.draws:
        if d.count(":") != 1:
            sys.exit("paired_bands: '%s': want BASE_DIR:CAND_DIR" % d)
        pairs.append(tuple(d.split(":")))
    rng = random.Random(a.seed)
    runs = []
    for b, c in pairs:
        rb, rc = read(b), read(c)
        for k in set(rb["exact"]) & set(rc["exact"]):
            eb, ec = rb["exact"][k], rc["exact"][k]
            if abs(eb - ec) > 1e-9 * max(1.0, abs(eb)) or rb["layers"][k] != rc["layers"][k]:
                sys.exit("paired_bands: %s and %s: %s differs (exact $%g against $%g): not the same draw"
                         % (b, c, k, eb, ec))
        runs.append((rb, rc))
    by_method = [(m, [(gaps(rb, m), gaps(rc, m), rb["layers"]) for rb, rc in runs])
                 for m in a.methods.split(",")]
    print("| band | method | jobs | candidate - base (points) | 95% interval | per draw |")
    print("|---|---|---:|---:|---|---|")
    for method, loaded in by_method:
        for lo, hi in BANDS:
            diffs, skipped = [], 0
            for (gb, sb), (gc, sc), lb in loaded:
                keys = [k for k in lb if lo <= lb[k] <= hi and (k in sb or k in sc)]
                d = [gc[k] - gb[k] for k in keys if k in gb and k in gc]
                skipped += len(keys) - len(d)
                diffs.append(d)
            n = sum(len(d) for d in diffs)
            if n == 0:
                continue
            mean = sum(sum(d) for d in diffs) / n
            boot = []
            for _ in range(a.resamples):
                s = 0.0
                for d in diffs:
                    s += sum(rng.choice(d) for _ in d) if d else 0.0
                boot.append(s / n)
            boot.sort()
            q = lambda p: boot[min(len(boot) - 1, int(p * len(boot)))]
            per = " ".join("%+.2f" % (sum(d) / len(d)) if d else "-" for d in diffs)
            note = " (%d skipped)" % skipped if skipped else ""
            print("| %d-%d | %s | %d%s | %+.2f | [%+.2f, %+.2f] | %s |"
                  % (lo, hi, method, n, note, mean, q(0.025), q(0.975), per))


if __name__ == "__main__":
    main()
