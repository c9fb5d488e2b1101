#!/usr/bin/python3
"""paired_bands_check.py -- scripts/paired_bands.py on results written by hand.

Two draws, each a base and a candidate folder with a results.csv as
`strata eval --out` writes it (only the columns the script reads). The
differences are worked out here: draw 1 has jobs of 10 and 12 layers
(9-16 band) and one of 40 (33-64); draw 2 one of 14 layers. Checks the
printed means and per-draw means, that identical runs give 0 with the
interval [0, 0], that a seed's rows count as the job's mean, that a job
the candidate leaves without a plan is skipped and counted, and that a
missing file or column, two runs of different draws, a method without
rows or no resamples is an error naming it.

Usage: paired_bands_check.py TMPDIR
"""
import csv
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "scripts", "paired_bands.py")
FIELDS = ["instance", "layers", "method", "seed", "feasible", "cost"]


def write(folder, rows):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for r in rows:
            w.writerow(r)


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def row(out, band, method):
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0] == band and cells[1] == method:
            return cells
    sys.exit("FAIL: no row %s %s in\n%s" % (band, method, out))


def main():
    tmp = sys.argv[1]
    shutil.rmtree(tmp, ignore_errors=True)
    exact = lambda i, L, c: (i, L, "exact", 1, 1, c)
    g = lambda i, L, c, s=1, ok=1: (i, L, "greedy", s, ok, c)
    # draw 1: exact 100 / 200 / 50; base greedy +10% / +0% / +20%;
    # candidate +5% / +2% / +20%, and best-of-16's two seeds 101 and 103
    # (mean +2%) against base's 100 (+0%)
    write(tmp + "/b1", [exact("j1", 10, 100), exact("j2", 12, 200), exact("j3", 40, 50),
                        g("j1", 10, 110), g("j2", 12, 200), g("j3", 40, 60),
                        ("j1", 10, "best-of-16", 1, 1, 100), ("j1", 10, "best-of-16", 2, 1, 100)])
    write(tmp + "/c1", [exact("j1", 10, 100), exact("j2", 12, 200), exact("j3", 40, 50),
                        g("j1", 10, 105), g("j2", 12, 204), g("j3", 40, 60),
                        ("j1", 10, "best-of-16", 1, 1, 101), ("j1", 10, "best-of-16", 2, 1, 103)])
    # draw 2: exact 80; base +25%, candidate no plan (skipped)
    write(tmp + "/b2", [exact("k1", 14, 80), g("k1", 14, 100)])
    write(tmp + "/c2", [exact("k1", 14, 80), g("k1", 14, 0, ok=0)])

    rc, out, err = run(tmp + "/b1:" + tmp + "/c1")
    if rc != 0:
        sys.exit("FAIL: rc %d: %s" % (rc, err))
    r = row(out, "9-16", "greedy")
    # (-5 + 2) / 2 = -1.5 points
    if r[2] != "2" or r[3] != "-1.50" or r[5] != "-1.50":
        sys.exit("FAIL: 9-16 greedy %s" % r)
    r = row(out, "33-64", "greedy")
    if r[3] != "+0.00" or r[4] != "[+0.00, +0.00]":
        sys.exit("FAIL: 33-64 greedy %s" % r)
    r = row(out, "9-16", "best-of-16")
    if r[2] != "1" or r[3] != "+2.00":
        sys.exit("FAIL: 9-16 best-of-16 (seeds' mean) %s" % r)

    rc, out, err = run(tmp + "/b1:" + tmp + "/c1", tmp + "/b2:" + tmp + "/c2", "--methods", "greedy")
    r = row(out, "9-16", "greedy")
    if rc != 0 or r[2] != "2 (1 skipped)" or r[3] != "-1.50" or r[5] != "-1.50 -":
        sys.exit("FAIL: skipped job %s (rc %d, %s)" % (r, rc, err))
    lo, hi = [float(x) for x in r[4].strip("[]").split(",")]
    if not (-5.0 <= lo <= -1.5 <= hi <= 2.0):
        sys.exit("FAIL: interval %s outside the resampled means' range" % r[4])

    rc, out, err = run(tmp + "/b1:" + tmp + "/none")
    if rc == 0 or "none/results.csv" not in err:
        sys.exit("FAIL: missing folder: rc %d, %r" % (rc, err))
    write(tmp + "/bad", [])
    with open(tmp + "/bad/results.csv", "w") as f:
        f.write("instance,layers,method\nj1,10,exact\n")
    rc, out, err = run(tmp + "/b1:" + tmp + "/bad")
    if rc == 0 or "no column 'feasible'" not in err:
        sys.exit("FAIL: missing column: rc %d, %r" % (rc, err))
    write(tmp + "/other", [exact("j1", 10, 90), g("j1", 10, 99)])
    rc, out, err = run(tmp + "/b1:" + tmp + "/other")
    if rc == 0 or "j1 differs" not in err or "not the same draw" not in err:
        sys.exit("FAIL: another draw: rc %d, %r" % (rc, err))
    rc, out, err = run(tmp + "/b1:" + tmp + "/c1", "--methods", "best-of-8")
    if rc == 0 or "no rows of method 'best-of-8'" not in err:
        sys.exit("FAIL: unknown method: rc %d, %r" % (rc, err))
    rc, out, err = run(tmp + "/b1:" + tmp + "/c1", "--resamples", "0")
    if rc == 0 or "--resamples 0" not in err:
        sys.exit("FAIL: no resamples: rc %d, %r" % (rc, err))
    print("paired_bands_check: ok")


if __name__ == "__main__":
    main()
