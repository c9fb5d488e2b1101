#!/usr/bin/python3
"""validation.py -- the figures, table and plot of docs/validation.md.

Runs `strata calibrate` on this machine's measurements
(configs/measurements/cpu-2core.csv, made by scripts/measure_torch.py) with
the cluster configs/measurements/cluster.yaml:

  - a random hold-out: --holdout 0.3 --seed 1
  - one model held out at a time: --holdout-job jobs/<model>.yaml

and rewrites the part of docs/validation.md between the markers
"<!-- BEGIN validation.py -->" and "<!-- END validation.py -->": each
command with the MAPE line it printed (tests/test_validation.c runs the
commands again and checks the lines), a table of every row, predicted
against measured, and the cross-type table (strata's a-priori figures for
published GPU measurements, below). It also writes the plot
docs/img/validation.png with gnuplot (predicted against measured, log-log).

Usage: /usr/bin/python3 scripts/validation.py [--strata build/strata]
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CLUSTER = "configs/measurements/cluster.yaml"
CSV = "configs/measurements/cpu-2core.csv"
CSV_CPU = "configs/measurements/cpu-2core-cputime.csv"
MODELS = ["resnet18", "vgg11", "transformer", "ctr"]
DOC = "docs/validation.md"
PLOT = "docs/img/validation"

# Published single-GPU training throughput of ResNet-50 v1.5 (PyTorch), NVIDIA
# Deep Learning Examples, "Training performance results" (pytorch-21.03 NGC
# container): A100 in TF32, V100 in FP32.
NVIDIA_RN50 = ("https://github.com/NVIDIA/DeepLearningExamples/tree/master/"
               "PyTorch/Classification/ConvNets/resnet50v1.5#training-performance-results")
PUBLISHED = [
    # (type in configs/clusters/aws-mixed.yaml, units, images/s, what, source)
    ("V100", 1, 367.0, "DGX-1, 1x V100 16GB, FP32", NVIDIA_RN50),
    ("V100", 8, 2855.0, "DGX-1, 8x V100 16GB, FP32", NVIDIA_RN50),
    ("A100", 1, 938.0, "DGX A100, 1x A100 80GB, TF32", NVIDIA_RN50),
    ("A100", 8, 7248.0, "DGX A100, 8x A100 80GB, TF32", NVIDIA_RN50),
]

UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
         "Ki": 1024.0, "Mi": 1024.0 ** 2, "Gi": 1024.0 ** 3, "Ti": 1024.0 ** 4}


def quantity(text):
    """A figure as the configs write it (11.7TFLOPS, 3.94GB/s, 12.5Gbit/s, 56B) in SI base units
    (FLOP/s, bytes/s, bytes)."""
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([KMGTP]i?)?(FLOPS|FLOP|B/s|B|bit/s)?\s*", str(text))
    if not m:
        raise SystemExit("validation.py: cannot read the figure %r" % text)
    v = float(m.group(1)) * UNITS[m.group(2) or ""]
    return v / 8 if m.group(3) == "bit/s" else v


def flow_map(line):
    """The {k: v, ...} of one YAML flow-map line."""
    body = line[line.index("{") + 1:line.rindex("}")]
    return dict((k.strip(), v.strip()) for k, v in (kv.split(":", 1) for kv in body.split(",")))


def a_priori(cluster, job, type_name, units):
    """The cost model v1 (docs/model.md §2) for every layer of job on units of type_name, at the
    cluster file's figures: step = max(C, I) + P, throughput = B/step x k / (1 + alpha (k-1))."""
    ty = None
    for line in open(os.path.join(ROOT, cluster)):
        if "{name: %s," % type_name in line:
            ty = flow_map(line)
    layers, B, alpha = [], None, 0.05
    for line in open(os.path.join(ROOT, job)):
        s = line.strip()
        if s.startswith("- {name:"):
            layers.append(flow_map(s))
        elif s.startswith("batch:"):
            B = float(s.split(":")[1])
        elif s.startswith("alpha:"):
            alpha = float(s.split(":")[1])
    f = sum(quantity(l["flops"]) for l in layers)
    d = sum(quantity(l["io"]) for l in layers)
    w = sum(quantity(l["params"]) for l in layers)
    comp = max(B * f / quantity(ty["flops"]), B * d / quantity(ty["io_bw"]))
    scale = units / (1 + alpha * (units - 1))
    return B / (comp + 2 * w / quantity(ty["net_bw"])) * scale, B / comp * scale, B


def calibrate(strata, csv_path, *extra):
    cmd = [strata, "calibrate", CLUSTER, csv_path] + list(extra)
    text = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    js = json.loads(subprocess.run(cmd + ["--json"], cwd=ROOT, check=True, capture_output=True,
                                   text=True).stdout)
    mape = [l for l in text.splitlines() if l.startswith("MAPE")][0]
    return "strata calibrate %s %s %s" % (CLUSTER, csv_path, " ".join(extra)), text, mape, js


def read_rows(path):
    """{line: record} of the CSV's measured rows."""
    rows = {}
    for lno, line in enumerate(open(os.path.join(ROOT, path)), 1):
        if line.startswith("#") or line.startswith("job,") or not line.strip():
            continue
        rows[lno] = dict(zip(["job", "type", "workers", "ps", "batch", "samples_per_s", "model", "mode",
                              "threads", "steps", "reps", "spread_pct", "cpu_share"],
                             line.strip().split(",")))
    return rows


def write_cputime(rows):
    """Writes CSV_CPU: every row's samples_per_s divided by its cpu_share (samples per second of
    rank 0's CPU time), line for line with CSV so that the lines match."""
    lines = open(os.path.join(ROOT, CSV)).read().splitlines()
    out = ["# GENERATED by scripts/validation.py from cpu-2core.csv: samples_per_s = the measured",
           "# samples/s / cpu_share (per second of rank 0's CPU time), an estimate of the unloaded",
           "# machine; other columns as measured."]
    for lno, line in enumerate(lines, 1):
        if lno in rows:
            f = line.split(",")
            f[5] = "%.4g" % (float(f[5]) / float(f[12]))
            line = ",".join(f)
        out.append(line)
    # the three comment lines above shift every line by 3
    open(os.path.join(ROOT, CSV_CPU), "w").write("\n".join(out) + "\n")


def section(strata, csv_path, rows, shift, title):
    """The commands, MAPE lines and table of one CSV; returns (markdown lines, plot rows)."""
    out = []
    cmd, text, mape, rand = calibrate(strata, csv_path, "--holdout", "0.3", "--seed", "1")
    out += ["%s, a random 30%% of the rows held out (seed 1):" % title, "", "```", "$ " + cmd,
            text.rstrip(), "```", ""]
    loo, blocks = {}, []
    for m in [m for m in MODELS if any(r["model"] == m for r in rows.values())]:
        c, t, mp, js = calibrate(strata, csv_path, "--holdout-job", "jobs/%s.yaml" % m)
        loo[m] = js
        blocks += ["$ " + c, mp]
    out += ["%s, one model held out at a time (fitted on the other three; the MAPE lines only):" % title,
            "", "```"] + blocks + ["```", ""]
    pred_rand = {r["line"] - shift: r for r in rand["rows"]}
    pred_loo = {}
    for js in loo.values():
        for r in js["rows"]:
            if r["holdout"]:
                pred_loo[r["line"] - shift] = r["predicted"]
    out += ["| model | mode | workers | batch | measured (samples/s) | spread | CPU share | "
            "predicted, random split | error | predicted, model held out | error |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    dat = []
    for lno, rec in sorted(rows.items()):
        r = pred_rand[lno]
        meas = r["measured"]
        e1 = 100 * (r["predicted"] - meas) / meas
        p2 = pred_loo[lno]
        e2 = 100 * (p2 - meas) / meas
        out.append("| %s | %s | %s | %s | %.4g | %s%% | %s | %.4g%s | %+.0f%% | %.4g | %+.0f%% |" % (
            rec["model"], rec["mode"], rec["workers"], rec["batch"], meas, rec["spread_pct"],
            rec["cpu_share"], r["predicted"], " (held out)" if r["holdout"] else "", e1, p2, e2))
        dat.append((rec["model"], meas, r["predicted"], int(r["holdout"]), p2))
    out += ["", "Rows marked *held out* were not in the random split's fit; every row of the last "
            "two columns was predicted from a fit on the other three models.", ""]
    return out, dat


def plot(dat, name, title):
    datp = os.path.join(ROOT, name + ".dat")
    with open(datp, "w") as f:
        f.write("# model\tmeasured\tpredicted_random\tholdout\tpredicted_model_out\n")
        for d in dat:
            f.write("%s\t%.6g\t%.6g\t%d\t%.6g\n" % d)
    lo = min(min(d[1], d[2], d[4]) for d in dat) / 1.5
    hi = max(max(d[1], d[2], d[4]) for d in dat) * 1.5
    gp = """set terminal pngcairo size 720,560 font "sans,10" noenhanced
set output '{png}'
set title "{title}" font "sans,12"
set datafile separator "\\t"
set grid xtics ytics lc rgb "#dddddd"
set border 3
set tics nomirror
set logscale xy
set xrange [{lo}:{hi}]
set yrange [{lo}:{hi}]
set xlabel "measured (samples/s, log scale)"
set ylabel "predicted (samples/s, log scale)"
set key top left
set pointsize 1.1
plot x title "exact" lc rgb "#333333" dt 1, \\
     1.15*x title "+-15%" lc rgb "#999999" dt 2, 0.85*x notitle lc rgb "#999999" dt 2, \\
     '{dat}' using 2:($4==0?$3:1/0) title "random split, fitted" pt 7 lc rgb "#1f77b4", \\
     '{dat}' using 2:($4==1?$3:1/0) title "random split, held out" pt 5 lc rgb "#d62728", \\
     '{dat}' using 2:5 title "model held out" pt 2 lc rgb "#2ca02c"
""".format(png=os.path.join(ROOT, name + ".png"), dat=datp, lo=lo, hi=hi, title=title)
    subprocess.run(["gnuplot"], input=gp, text=True, check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", default=os.path.join(ROOT, "build", "strata"))
    args = ap.parse_args()
    rows = read_rows(CSV)
    write_cputime(rows)
    out, dat = section(args.strata, CSV, rows, 0, "Wall clock (as measured)")
    out2, dat2 = section(args.strata, CSV_CPU, rows, 3, "Per CPU second (load-corrected)")
    out += ["#### Per CPU second", ""] + out2
    plot(dat, PLOT, "wall clock on the loaded machine: predicted against measured")
    plot(dat2, PLOT + "-cputime", "per CPU second: predicted against measured")

    out += ["Cross-type: strata's a-priori figures (configs/clusters/aws-mixed.yaml, no calibration) "
            "for ResNet-50 (configs/models/resnet50.yaml) against published training throughput:", "",
            "| GPUs | published (images/s) | strata a priori | error | without the sync term P | error | source |",
            "|---|---|---|---|---|---|---|"]
    for ty, k, img, what, src in PUBLISHED:
        p, pc, B = a_priori("configs/clusters/aws-mixed.yaml", "configs/models/resnet50.yaml", ty, k)
        out.append("| %s | %.0f | %.0f | %+.0f%% | %.0f | %+.0f%% | [NVIDIA Deep Learning Examples](%s) |" % (
            what, img, p, 100 * (p - img) / img, pc, 100 * (pc - img) / img, src))
    out.append("")
    out.append("(strata at the job's batch of %d per unit.)" % B)

    doc = open(os.path.join(ROOT, DOC)).read()
    a, b = "<!-- BEGIN validation.py -->\n", "<!-- END validation.py -->"
    i, j = doc.index(a) + len(a), doc.index(b)
    open(os.path.join(ROOT, DOC), "w").write(doc[:i] + "\n".join(out) + "\n" + doc[j:])

    print("wrote %s, %s.png, %s-cputime.png, %s" % (DOC, PLOT, PLOT, CSV_CPU))


if __name__ == "__main__":
    main()
