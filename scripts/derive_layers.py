#!/usr/bin/env python3
"""derive_layers.py -- per-layer figures of the shipped models, from their architectures.

Writes configs/models/<model>.yaml for the three shipped jobs torchvision
does not have (ctr-dlrm, bert-base, gpt2-small); resnet50 and vgg16 are
profiled from torchvision by scripts/strata-profile (scripts/profile_models.sh),
with the same figure definitions. Each architecture is described
below op by op (linear layers, attention, embedding bags);
the ops are grouped into schedulable layers, and for every layer the
script derives the per-sample figures of the cost model (docs/data.md):

  flops   forward + backward FLOP per sample = 3 x forward FLOP,
          forward FLOP = 2 x multiply-accumulates (MACs) of the matrix work;
          element-wise ops (BN, ReLU, softmax, adds) are not counted
  io      input bytes the layer reads per sample: the raw input for the
          first layer, the ids and gathered rows for embedding layers
  act     bytes (fp32) of the activation the layer passes to the next one
  params  bytes synchronised per step: dense parameters x 4 bytes; for an
          embedding table only the rows a step touches (expected number of
          distinct rows among batch x lookups uniform draws) x dim x 4
  mem     bytes one replica needs: 16 bytes per dense parameter (fp32
          weight, gradient, two Adam moments), the whole table for CTR
          embedding tables, plus the activations kept for the backward pass
          for one batch

Totals are checked against published figures (parameter counts, MACs);
the script stops with an error when one is off by more than the stated
tolerance.

Usage (pure Python 3 standard library; run from anywhere):

  /usr/bin/python3 scripts/derive_layers.py            write configs/models/*.yaml
  /usr/bin/python3 scripts/derive_layers.py --check    also score the all-one-type
        plans (docs/model.md §2) of every model on configs/clusters/*.yaml, and
        the best plan of at most three stages, and print the table
  /usr/bin/python3 scripts/derive_layers.py --check --no-write   only the table
"""

import argparse
import itertools
import math
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
F32 = 4  # bytes per fp32 value
ADAM = 16  # bytes per dense parameter: weight, gradient, two Adam moments (fp32)


class Layer:
    """One schedulable layer: per-sample figures (params and mem per step/replica)."""

    def __init__(self, name):
        self.name = name
        self.macs = 0.0  # forward multiply-accumulates per sample
        self.extra_flop = 0.0  # other forward FLOP per sample (embedding pooling)
        self.io = 0.0  # bytes read per sample
        self.act = 0.0  # bytes passed to the next layer per sample
        self.dense = 0  # dense parameters (count)
        self.sync_bytes = 0.0  # bytes synchronised per step besides dense params
        self.table_bytes = 0.0  # embedding table bytes held (no optimiser state)
        self.saved = 0.0  # activation bytes kept for backward, per sample

    def flops(self):
        return 3.0 * (2.0 * self.macs + self.extra_flop)

    def params_bytes(self):
        return self.dense * F32 + self.sync_bytes

    def mem_bytes(self, batch):
        return self.dense * ADAM + self.table_bytes + batch * self.saved


def distinct_rows(draws, rows):
    """Expected number of distinct rows among `draws` uniform draws from `rows`."""
    if rows <= 0:
        return 0.0
    return rows * (1.0 - math.exp(draws * math.log1p(-1.0 / rows))) if rows > 1 else 1.0


def near(what, got, want, tol, ref="published"):
    """Stops the script when got is not within tol (relative) of want, the
    reference figure (ref says where it comes from); returns a summary."""
    err = abs(got - want) / want
    if err > tol:
        sys.exit("derive_layers: %s is %.6g, %s %.6g (off by %.2f%%, tolerance %.1f%%)"
                 % (what, got, ref, want, 100 * err, 100 * tol))
    return "%s %.4g (%s %.4g, %+.2f%%)" % (what, got, ref, want, 100 * (got - want) / want)


# --------------------------------------------------------------------------
# Transformers. s tokens per sample, hidden h, a heads, feed-forward 4h.


def block_macs(s, h):
    """Forward MACs of one encoder/decoder block on s tokens: projections,
    QK^T and attention x V (computed in full, as dense kernels do), feed-forward."""
    return s * (4 * h * h + 8 * h * h) + 2 * s * s * h


def block_params(h):
    """Q, K, V, output projections with biases, two LayerNorms, 4h feed-forward with biases."""
    return (4 * h * h + 4 * h) + (8 * h * h + 5 * h) + 4 * h


def block_saved(s, h, a):
    """Activations one block keeps for backward, per sample, in bytes: twice the
    16-bit figure s*h*(34 + 5*a*s/h) of Korthikanti et al. 2022 ("Reducing
    activation recomputation in large transformer models", section 4.1)."""
    return 2 * s * h * (34 + 5.0 * a * s / h)


def embedding_sync(batch, lookups, rows, dim):
    """Bytes of a table's rows touched by one step of `batch` samples."""
    return distinct_rows(batch * lookups, rows) * dim * F32


def bert_base(batch):
    """BERT-base (uncased) pre-training at sequence length 128, 20 masked tokens
    (Devlin et al. 2018; google-research/bert max_predictions_per_seq=20)."""
    V, P, T, h, a, nl, s, masked = 30522, 512, 2, 768, 12, 12, 128, 20
    layers = []
    L = Layer("embeddings")  # word + position + token type, LayerNorm
    # input_ids, token_type_ids, attention_mask (int64), masked positions/ids/weights
    L.io = s * 3 * 8 + masked * 3 * 8 + s * h * F32  # + the word rows gathered
    L.extra_flop = 3 * s * h  # sum of three embeddings
    L.dense = P * h + T * h + 2 * h  # position, type, LayerNorm: dense
    # word table: its gradient touches only the tokens of the step (sparse push);
    # memory counts the whole table with Adam state (NLP embeddings train densely)
    L.sync_bytes = embedding_sync(batch, s, V, h)
    L.table_bytes = V * h * ADAM
    L.saved = 2 * s * h * F32
    L.act = s * h * F32
    layers.append(L)
    for i in range(nl):
        L = Layer("encoder%d" % i)
        L.macs = block_macs(s, h)
        L.dense = block_params(h)
        L.saved = block_saved(s, h, a)
        L.act = s * h * F32
        layers.append(L)
    L = Layer("head")  # pooler + NSP, MLM transform + decoder tied to the word table
    L.macs = h * h + 2 * h + masked * (h * h + h * V)
    L.dense = (h * h + h) + (2 * h + 2) + (h * h + h + 2 * h) + V  # pooler, NSP, transform, bias
    L.dense += V * h  # the decoder: tied to the word table, but its gradient is dense
    L.saved = masked * (2 * h + 2 * V) * F32 + 2 * h * F32
    L.act = F32  # the loss
    layers.append(L)
    # BERT-base's 110M counts the tied matrix once: the base model (embeddings,
    # encoders, pooler) is 109,482,240 parameters.
    base = sum(l.dense for l in layers[:-1]) + V * h + (h * h + h)
    macs = sum(l.macs for l in layers)
    # forward MACs against the Kaplan et al. 2020 approximation: non-embedding
    # parameters (85,054,464) per token, plus attention, plus the MLM decoder
    checks = [near("params (base model)", base, 110e6, 0.02),
              near("forward MACs per sequence", macs,
                   85054464 * s + 2 * nl * s * s * h + masked * h * V, 0.03, "Kaplan approx.")]
    return layers, checks


def gpt2_small(batch):
    """GPT-2 small (124M): 12 blocks, context 1024, LM head tied to the token table."""
    V, n_ctx, h, a, nl = 50257, 1024, 768, 12, 12
    s = n_ctx
    layers = []
    L = Layer("embeddings")  # token + position
    L.io = s * 8 + s * h * F32  # token ids (int64; targets are the same ids shifted) + rows
    L.extra_flop = s * h
    L.dense = n_ctx * h  # position table: dense
    L.sync_bytes = embedding_sync(batch, s, V, h)  # token rows touched by the step
    L.table_bytes = V * h * ADAM
    L.saved = 2 * s * h * F32
    L.act = s * h * F32
    layers.append(L)
    for i in range(nl):
        L = Layer("block%d" % i)
        L.macs = block_macs(s, h)
        L.dense = block_params(h)
        L.saved = block_saved(s, h, a)
        L.act = s * h * F32
        layers.append(L)
    L = Layer("lm_head")  # final LayerNorm + logits over the vocabulary (tied, dense gradient)
    L.macs = s * h * V
    L.dense = 2 * h + V * h
    L.saved = 2 * s * h * F32 + 2 * s * V * F32  # LN in/out, logits and their softmax
    L.act = F32
    layers.append(L)
    params = sum(l.dense for l in layers)  # the tied matrix is counted once, in lm_head
    macs = sum(l.macs for l in layers)
    # forward MACs against Kaplan et al. 2020: non-embedding parameters
    # (85,054,464) per token, attention, and the logits (V x h per token)
    checks = [near("params", params, 124439808, 0.01),  # HF gpt2: 124,439,808
              near("forward MACs per sequence", macs,
                   (85054464 + V * h) * s + 2 * nl * s * s * h, 0.03, "Kaplan approx.")]
    return layers, checks


# --------------------------------------------------------------------------
# CTR: DLRM-DCNv2 (the MLPerf Training "recommendation v2" reference,
# TorchRec dlrm_main): 13 dense features through a 512-256-128 bottom MLP, 26
# categorical features through 128-wide embedding bags with the multi-hot
# pooling factors of MLPerf's synthetic multi-hot Criteo 1TB data set, a
# 3-layer low-rank (512) DCN cross network, a 1024-1024-512-256-1 top MLP.
# Table rows: the Criteo 1TB feature counts of that reference, hashed to at
# most 10M rows (the DLRM reference's --max-ind-range) so the tables total
# ~26 GiB: they fit a CPU server and an A100-40GB, not 16-24 GB GPUs.

CRITEO_1TB_ROWS = [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000,
                   3067956, 405282, 10, 2209, 11938, 155, 4, 976, 14, 40000000,
                   40000000, 40000000, 590152, 12973, 108, 36]
MULTI_HOT = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]
CTR_MAX_ROWS = 10000000
CTR_DIM = 128
CRITEO_1TB_SAMPLES = 4373472329  # 24 days of click logs


def ctr_dlrm(batch):
    d = CTR_DIM
    rows = [min(r, CTR_MAX_ROWS) for r in CRITEO_1TB_ROWS]
    layers = []

    def mlp(L, sizes):
        for cin, cout in zip(sizes, sizes[1:]):
            L.macs += cin * cout
            L.dense += cin * cout + cout
            L.saved += 2 * cout * F32  # pre- and post-activation

    L = Layer("bottom_mlp")
    L.io = (1 + 13) * F32  # label + 13 dense features
    L.saved = 13 * F32
    mlp(L, [13, 512, 256, 128])
    carried = d  # floats passed on: the bottom output, then each pooled embedding
    L.act = carried * F32
    layers.append(L)

    big = [21, 22, 20, 10, 1]  # the features (1-based) with 10M-row tables, by lookups
    groups = [("emb_c%d" % c, [c - 1]) for c in big]
    groups.append(("emb_rest", [i for i in range(26) if i + 1 not in big]))
    for name, feats in groups:
        L = Layer(name)
        for i in feats:
            n = MULTI_HOT[i]
            L.io += n * (4 + d * F32)  # int32 ids + the rows gathered
            L.extra_flop += n * d  # sum pooling
            L.sync_bytes += embedding_sync(batch, n, rows[i], d)
            L.table_bytes += rows[i] * d * F32
            L.saved += (n + 1) * d * F32  # gathered rows, pooled vector
            carried += d
        L.act = carried * F32
        layers.append(L)

    x = 27 * d  # 3456: bottom output + 26 pooled embeddings, concatenated
    L = Layer("interaction")  # DCNv2 low-rank cross: x_{l+1} = x0 * (U (V x_l) + b) + x_l
    for _ in range(3):
        L.macs += 2 * x * 512 + x
        L.dense += 2 * x * 512 + x
        L.saved += (512 + 3 * x) * F32
    L.act = x * F32
    layers.append(L)
    for name, sizes in [("top_fc1", [x, 1024]), ("top_fc2", [1024, 1024]),
                        ("top_out", [1024, 512, 256, 1])]:
        L = Layer(name)
        mlp(L, sizes)
        L.act = sizes[-1] * F32
        layers.append(L)

    dense = sum(l.dense for l in layers)
    tables = sum(rows) * d * F32
    # dense parameters of DLRM-DCNv2 worked out by hand: bottom 13*512+512 +
    # 512*256+256 + 256*128+128 = 171,392; cross 3*(2*3456*512 + 3456) =
    # 3*3,542,400 = 10,627,200; top 3456*1024+1024 (3,539,968) +
    # 1024*1024+1024 (1,049,600) + 1024*512+512 (524,800) + 512*256+256
    # (131,328) + 256+1 = 5,245,953; total 16,044,545.
    checks = [near("dense params", dense, 16044545, 1e-9, "by hand"),
              "tables %.2f GiB (%d rows x %d x 4 bytes)" % (tables / 2**30, sum(rows), d)]
    return layers, checks


# --------------------------------------------------------------------------
# The jobs: batch per unit, samples to train, throughput target. The targets
# were chosen with --check so that on aws-mixed at least two all-one-type
# plans are feasible, one unit is far from enough, and a mixed plan wins.

JOBS = [
    {
        "file": "ctr-dlrm", "name": "ctr-dlrm", "build": ctr_dlrm,
        "batch": 2048,
        "samples": round(CRITEO_1TB_SAMPLES / 24),
        "min_throughput": 40000,
        "what": "DLRM-DCNv2 (MLPerf Training recommendation v2 reference: dim 128, "
                "bottom 512-256-128, DCN 3x low-rank 512, top 1024-1024-512-256-1, "
                "multi-hot pooling 3,2,1,2,6,1,1,1,1,7,3,8,1,6,9,5,1,1,1,12,100,27,10,3,1,1) "
                "over Criteo 1TB tables hashed to <= 10M rows",
        "why": "batch 2048 per unit; samples = one average day of the Criteo 1TB click "
               "logs (4,373,472,329 / 24); min_throughput = that day retrained in about 76 min",
    },
    {
        "file": "bert-base", "name": "bert-base", "build": bert_base,
        "batch": 32,
        "samples": 900000 * 256,
        "min_throughput": 300,
        "what": "BERT-base uncased pre-training (MLM + NSP), sequence length 128, "
                "20 masked tokens; embeddings, 12 encoder blocks, head",
        "why": "batch 32 sequences per GPU (fp32, seq 128); samples = BERT's phase 1, "
               "900k steps x 256 sequences of 128 tokens; min_throughput 300 sequences/s",
    },
    {
        "file": "gpt2-small", "name": "gpt2-small", "build": gpt2_small,
        "batch": 8,
        "samples": round(10e9 / 1024),
        "min_throughput": 50,
        "what": "GPT-2 small (124M), context 1024, fp32, no activation recomputation; "
                "embeddings, 12 blocks, LM head",
        "why": "batch 8 sequences per GPU; samples = 10B tokens (the llm.c GPT-2 124M "
               "reproduction on FineWeb) / 1024; min_throughput 50 sequences/s (51k tokens/s)",
    },
]


# The order of the --check table: every shipped model, those written here
# and those scripts/strata-profile writes from torchvision.
CHECK_ORDER = ["ctr-dlrm", "resnet50", "vgg16", "bert-base", "gpt2-small"]


# --------------------------------------------------------------------------
# Writing. Values carry units the config loader reads (env/units.h); six
# significant digits.


def fmt(v, unit):
    if v == 0:
        return "0"
    prefixes = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"), (1, "")]
    for scale, p in prefixes:
        if abs(v) >= scale:
            break
    s = "%.6g" % (v / scale)
    if "e" in s:
        s = "%.6g" % v
        return s
    return s + p + unit


def render(job, layers, checks):
    B = job["batch"]
    cmd = "/usr/bin/python3 scripts/derive_layers.py"
    out = []
    out.append("# GENERATED by scripts/derive_layers.py -- do not edit; change the script and rerun:")
    out.append("#   %s" % cmd)
    out.append("# Architecture: %s." % job["what"])
    out.append("# Job: %s." % job["why"])
    out.append("# Per sample: flops = 3 x forward (2 x MACs); io = input bytes read; act = fp32")
    out.append("# activation passed on. params = bytes synchronised per step (dense fp32; embedding")
    out.append("# tables: rows a step of %d samples touches). mem = one replica: 16 B per dense" % B)
    out.append("# parameter (weight, gradient, Adam moments), CTR tables as is, + activations of one batch.")
    out.append("# Checks: %s." % "; ".join(checks))
    out.append("job:")
    out.append("  name: %s" % job["name"])
    out.append("  batch: %d" % B)
    out.append("  samples: %d" % job["samples"])
    out.append("  min_throughput: %g" % job["min_throughput"])
    out.append("  alpha: 0.05")
    out.append("  layers:")
    for L in layers:
        out.append("    - {name: %s, flops: %s, io: %s, act: %s, params: %s, mem: %s}" % (
            L.name, fmt(L.flops(), "FLOP"), fmt(L.io, "B"), fmt(L.act, "B"),
            fmt(L.params_bytes(), "B"), fmt(L.mem_bytes(B), "B")))
    return "\n".join(out) + "\n"


def build_all(write):
    for job in JOBS:
        b = job["build"]
        layers, checks = b(job["batch"])
        text = render(job, layers, checks)
        path = os.path.join(ROOT, "configs", "models", job["file"] + ".yaml")
        if write:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
            print("wrote %s (%d layers; %s)" % (os.path.relpath(path, ROOT), len(layers), "; ".join(checks)))


# --------------------------------------------------------------------------
# Reading back: a small reader for the YAML subset the shipped configs use
# (block mappings, "- {flow map}" list items, [flow lists], # comments), and
# the unit spellings of env/units.h. It reads the files as shipped, so the
# checker scores exactly what strata loads.


def _scalar(tok):
    t = tok.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    return t


def _flow(text, i):
    """Parses a flow value at text[i:]; returns (value, next index)."""
    while text[i] == " ":
        i += 1
    if text[i] == "{":
        d, i = {}, i + 1
        while True:
            while text[i] in " ,":
                i += 1
            if text[i] == "}":
                return d, i + 1
            j = text.index(":", i)
            key = text[i:j].strip()
            v, i = _flow(text, j + 1)
            d[key] = v
    if text[i] == "[":
        lst, i = [], i + 1
        while True:
            while text[i] in " ,":
                i += 1
            if text[i] == "]":
                return lst, i + 1
            v, i = _flow(text, i)
            lst.append(v)
    j = i
    while j < len(text) and text[j] not in ",}]":
        j += 1
    return _scalar(text[i:j]), j


def _strip_comment(line):
    q = None
    for i, ch in enumerate(line):
        if q:
            if ch == q:
                q = None
        elif ch in "'\"":
            q = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def read_yaml(path):
    """Reads the subset described above into dicts/lists/strings."""
    lines = []
    with open(path) as f:
        for raw in f:
            s = _strip_comment(raw)
            if s.strip():
                lines.append((len(s) - len(s.lstrip(" ")), s.strip()))

    def block(k, indent):
        if k < len(lines) and lines[k][1].startswith("- "):
            lst = []
            while k < len(lines) and lines[k][0] == indent and lines[k][1].startswith("- "):
                body = lines[k][1][2:].strip()
                if body.startswith("{") or body.startswith("["):
                    lst.append(_flow(body, 0)[0])
                else:
                    lst.append(_scalar(body))
                k += 1
            return lst, k
        d = {}
        while k < len(lines) and lines[k][0] == indent:
            text = lines[k][1]
            key, _, rest = text.partition(":")
            rest = rest.strip()
            k += 1
            if rest:
                d[key.strip()] = _flow(rest, 0)[0] if rest[0] in "{[" else _scalar(rest)
            elif k < len(lines) and lines[k][0] > indent:
                d[key.strip()], k = block(k, lines[k][0])
            elif k < len(lines) and lines[k][0] == indent and lines[k][1].startswith("- "):
                d[key.strip()], k = block(k, indent)
            else:
                d[key.strip()] = None
        return d, k

    doc, k = block(0, lines[0][0] if lines else 0)
    if k != len(lines):
        raise ValueError("%s: cannot read line %r" % (path, lines[k][1]))
    return doc


_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15,
           "ki": 2.0**10, "mi": 2.0**20, "gi": 2.0**30, "ti": 2.0**40, "pi": 2.0**50}


def parse_value(text, kind):
    """Parses '16GiB', '25Gbit/s', '14TFLOPS', '50us', '0.1%', '3.06' into SI units."""
    t = str(text).strip().replace(" ", "")
    m = re.match(r"^\$?([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)(.*)$", t)
    if not m:
        raise ValueError("bad %s value %r" % (kind, text))
    x, u = float(m.group(1)), m.group(2)
    if u == "":
        return x
    if u == "%":
        return x / 100.0
    if kind == "seconds":
        return x * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}[u]
    m = re.match(r"^([kKmMgGtTpP]i?)?(.*)$", u)
    p, rest = (m.group(1) or ""), m.group(2)
    scale = _PREFIX[p.lower()]
    r = rest.lower()
    if r in ("b", "byte", "bytes", "b/s"):
        return x * scale
    if r in ("bit/s", "bits/s", "bps"):
        return x * scale / 8.0
    if r in ("flop", "flops", "flop/s"):
        return x * scale
    raise ValueError("bad %s value %r" % (kind, text))


def load_cluster(path):
    doc = read_yaml(path)["cluster"]
    types = []
    for t in doc["types"]:
        types.append({
            "name": t["name"], "flops": parse_value(t["flops"], "flops"),
            "io_bw": parse_value(t["io_bw"], "rate"), "net_bw": parse_value(t["net_bw"], "rate"),
            "mem": parse_value(t["mem"], "bytes"), "price": parse_value(t["price"], "dollars"),
            "count": int(t["count"]) if "count" in t else None})
    for t in types:
        if t["count"] is None:
            t["count"] = sum(int(n["units"]) for n in doc.get("nodes", []) if n["type"] == t["name"])
    return types


def load_job(path):
    j = read_yaml(path)["job"]
    layers = [{k: (parse_value(v, k) if k != "name" else v) for k, v in l.items()} for l in j["layers"]]
    return {"name": j["name"], "batch": float(j["batch"]), "samples": parse_value(j["samples"], "n"),
            "R": parse_value(j["min_throughput"], "n"),
            "alpha": parse_value(j.get("alpha", "0.05"), "n"), "layers": layers}


# --------------------------------------------------------------------------
# The cost model, docs/model.md §2, for checking targets.


def units_needed(step, B, R, alpha):
    q = R * step / B
    if q <= 1:
        return 1
    if alpha * q >= 1:
        return 0
    return math.ceil(q * (1 - alpha) / (1 - alpha * q) - 1e-9)


def stage_theta(step, B, k, alpha):
    return (B / step) * k / (1 + alpha * (k - 1))


def evaluate(job, types, assign):
    """Scores assign (type index per layer). Returns (cost, theta, units per type, why)."""
    L = job["layers"]
    B, R, al = job["batch"], job["R"], job["alpha"]
    stages, i = [], 0
    while i < len(L):
        j = i
        while j + 1 < len(L) and assign[j + 1] == assign[i]:
            j += 1
        stages.append((assign[i], i, j))
        i = j + 1
    used = [0] * len(types)
    theta, price = float("inf"), 0.0
    for si, (t, a, b) in enumerate(stages):
        T = types[t]
        C = B * sum(l["flops"] for l in L[a:b + 1]) / T["flops"]
        I = B * sum(l["io"] for l in L[a:b + 1]) / T["io_bw"]
        x = (L[a - 1]["act"] if si > 0 else 0.0) + (L[b]["act"] if si < len(stages) - 1 else 0.0)
        X = 2 * B * x / T["net_bw"]
        P = 2 * sum(l["params"] for l in L[a:b + 1]) / T["net_bw"]
        step = max(C, I) + X + P
        mem = sum(l["mem"] for l in L[a:b + 1])
        if mem > T["mem"]:  # checked first, as strata does
            return None, 0, used, "%s stage %s..%s needs %.1f GiB > %.1f GiB" % (
                T["name"], L[a]["name"], L[b]["name"], mem / 2**30, T["mem"] / 2**30)
        k = units_needed(step, B, R, al)
        if k == 0:
            return None, 0, used, "%s stage %s..%s can never reach R (1 unit: %.0f/s)" % (
                T["name"], L[a]["name"], L[b]["name"], B / step)
        used[t] += k
        theta = min(theta, stage_theta(step, B, k, al))
        price += k * T["price"]
    for t, T in enumerate(types):
        if used[t] > T["count"]:
            return None, 0, used, "needs %d %s units, %d free" % (used[t], T["name"], T["count"])
    return job["samples"] / theta / 3600 * price, theta, used, ""


def best_mixed(job, types, max_segments=3):
    """Cheapest plan of at most max_segments runs of one type (exhaustive)."""
    n, best = len(job["layers"]), None
    for nseg in range(2, max_segments + 1):
        for cuts in itertools.combinations(range(1, n), nseg - 1):
            bounds = (0,) + cuts + (n,)
            for ts in itertools.product(range(len(types)), repeat=nseg):
                if any(ts[i] == ts[i + 1] for i in range(nseg - 1)):
                    continue
                assign = []
                for s in range(nseg):
                    assign += [ts[s]] * (bounds[s + 1] - bounds[s])
                cost, theta, used, _ = evaluate(job, types, assign)
                if cost is not None and (best is None or cost < best[0]):
                    best = (cost, theta, used, assign)
    return best


def describe(job, types, assign):
    parts, i = [], 0
    L = job["layers"]
    while i < len(L):
        j = i
        while j + 1 < len(L) and assign[j + 1] == assign[i]:
            j += 1
        parts.append("%s[%s..%s]" % (types[assign[i]]["name"], L[i]["name"], L[j]["name"]))
        i = j + 1
    return " ".join(parts)


def check(cluster_paths):
    models = [os.path.join(ROOT, "configs", "models", f + ".yaml") for f in CHECK_ORDER]
    for cp in cluster_paths:
        types = load_cluster(cp)
        print("## %s" % os.path.relpath(cp, ROOT))
        print()
        print("| model | R (samples/s) | plan | units | throughput (samples/s) | $/h | time (h) | cost ($) |")
        print("|---|---|---|---|---|---|---|---|")
        for mp in models:
            job = load_job(mp)
            n = len(job["layers"])
            for t, T in enumerate(types):
                cost, theta, used, why = evaluate(job, types, [t] * n)
                if cost is None:
                    print("| %s | %g | all %s | - | infeasible: %s | | | |" % (job["name"], job["R"], T["name"], why))
                else:
                    print("| %s | %g | all %s | %d | %.0f | %.2f | %.1f | %.2f |" % (
                        job["name"], job["R"], T["name"], used[t], theta,
                        sum(u * types[i]["price"] for i, u in enumerate(used)),
                        job["samples"] / theta / 3600, cost))
            b = best_mixed(job, types)
            if b is None:
                print("| %s | %g | best of <= 3 stages | - | none feasible | | | |" % (job["name"], job["R"]))
            else:
                cost, theta, used, assign = b
                print("| %s | %g | best <= 3 stages: %s | %s | %.0f | %.2f | %.1f | %.2f |" % (
                    job["name"], job["R"], describe(job, types, assign),
                    "+".join("%d %s" % (u, types[i]["name"]) for i, u in enumerate(used) if u),
                    theta, sum(u * types[i]["price"] for i, u in enumerate(used)),
                    job["samples"] / theta / 3600, cost))
        print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="score the all-one-type plans and the best plan of <= 3 stages")
    ap.add_argument("--no-write", action="store_true", help="do not rewrite configs/models")
    ap.add_argument("clusters", nargs="*", help="cluster files for --check (default: configs/clusters/*.yaml)")
    args = ap.parse_args()
    build_all(not args.no_write)
    if args.check:
        paths = args.clusters or sorted(
            os.path.join(ROOT, "configs", "clusters", f)
            for f in os.listdir(os.path.join(ROOT, "configs", "clusters")) if f.endswith(".yaml"))
        check(paths)


if __name__ == "__main__":
    main()
