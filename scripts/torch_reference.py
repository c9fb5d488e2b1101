#!/usr/bin/python3
"""torch_reference.py -- PyTorch reference values for tests/test_nets_torch.c.

Builds the reference policy network of nets/refnet.h in PyTorch (float64,
torch.nn.LSTM with packed variable-length sequences, F.linear, F.layer_norm,
log_softmax), runs forward and backward on fixed inputs and writes inputs,
weights, every intermediate output, the loss and every parameter gradient
to one HDF5 file. It also runs clip_grad_norm_ + torch.optim.AdamW twice
from those gradients, and the tanh/sigmoid/relu units alone, so the C test
can compare the optimizer and each activation too.

Usage: /usr/bin/python3 scripts/torch_reference.py OUT.h5
(Debian's python3-torch and python3-h5py; the ctest fixture runs it.)

Layout of OUT.h5, one group per network configuration ("plain": no logit
clipping, "clip": clip 2.5):
  /<cfg>            attrs T B V E H D K C beta clip ln_eps
  /<cfg>/inputs     tokens[T,B] len[B] cand[B,K,C] mask[B,K] action[T,B] adv[T,B]
  /<cfg>/params/<layer>/<name>   weights (float32 values stored as float64)
  /<cfg>/outputs/<name>          x hs c_final q1 q2 q3 qry c1 keys scores logp probs ent loss
  /<cfg>/grads/<layer>/<name>    d loss / d weights
  /adamw            attrs lr beta1 beta2 eps weight_decay max_norm; norm1 norm2
                    step1/<layer>/<name>, step2/<layer>/<name>, m2/..., v2/...
  /unit/<act>       x dy y dx for tanh, sigmoid, relu
"""
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)

# (layer, name, no_decay) in the order of nn_refnet_table (nets/refnet.c)
TABLE = [
    ("embed", "weight", 0),
    ("encoder", "w_ih", 0),
    ("encoder", "w_hh", 0),
    ("encoder", "b", 1),
    ("query", "w", 0),
    ("query", "b", 1),
    ("query_norm", "g", 1),
    ("query_norm", "b", 1),
    ("query_proj", "w", 0),
    ("cand", "w", 0),
    ("cand", "b", 1),
    ("key", "w", 0),
    ("key", "b", 1),
]


def shapes(c):
    return {
        "embed/weight": (c["V"], c["E"]),
        "encoder/w_ih": (4 * c["H"], c["E"]),
        "encoder/w_hh": (4 * c["H"], c["H"]),
        "encoder/b": (4 * c["H"],),
        "query/w": (c["D"], c["H"]),
        "query/b": (c["D"],),
        "query_norm/g": (c["D"],),
        "query_norm/b": (c["D"],),
        "query_proj/w": (c["D"], c["D"]),
        "cand/w": (c["D"], c["C"]),
        "cand/b": (c["D"],),
        "key/w": (c["D"], c["D"]),
        "key/b": (c["D"],),
    }


def f32(a):
    """Values exactly representable in float32, so C gets the same numbers."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def make_case(rs, c):
    T, B, K = c["T"], c["B"], c["K"]
    p = {}
    for key, shp in shapes(c).items():
        scale = 1.0 if key.startswith("embed") else 0.5
        p[key] = f32(rs.uniform(-scale, scale, size=shp))
    p["query_norm/g"] = f32(1.0 + rs.uniform(-0.3, 0.3, size=(c["D"],)))
    lens = np.array([T, 3, 1], dtype=np.int32)[:B]
    mask = np.ones((B, K), dtype=np.uint8)
    mask[1, K - 1] = 0  # instance 1: one padded candidate
    mask[2, 1] = 0  # instance 2: two padded candidates
    mask[2, 3] = 0
    action = np.full((T, B), -1, dtype=np.int32)
    for b in range(B):
        valid = np.flatnonzero(mask[b])
        for t in range(lens[b]):
            action[t, b] = valid[rs.randint(len(valid))]
    inputs = {
        "tokens": rs.randint(0, c["V"], size=(T, B)).astype(np.int32),
        "len": lens,
        "cand": f32(rs.uniform(-1, 1, size=(B, K, c["C"]))),
        "mask": mask,
        "action": action,
        "adv": f32(rs.uniform(-1.5, 1.5, size=(T, B))),
    }
    return p, inputs


def forward(c, p, inp):
    """The network of nets/refnet.h; returns (loss, outputs, leaf tensors)."""
    T, B, H = c["T"], c["B"], c["H"]
    w = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
    tokens = torch.tensor(inp["tokens"], dtype=torch.long)
    lens = torch.tensor(inp["len"], dtype=torch.long)
    x = F.embedding(tokens, w["embed/weight"])  # [T,B,E]
    lstm = torch.nn.LSTM(c["E"], H)
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(w["encoder/w_ih"])
        lstm.weight_hh_l0.copy_(w["encoder/w_hh"])
        lstm.bias_ih_l0.copy_(w["encoder/b"])
        lstm.bias_hh_l0.zero_()  # our single bias b = b_ih + b_hh, so d/db = d/db_ih
    w["encoder/w_ih"], w["encoder/w_hh"], w["encoder/b"] = lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lens, enforce_sorted=False)
    out, (h_n, c_n) = lstm(packed)
    hs_pad, _ = torch.nn.utils.rnn.pad_packed_sequence(out, total_length=T)
    # carried state past each instance's length (nets/layers.h semantics)
    valid = torch.arange(T)[:, None] < lens[None, :]  # [T,B]
    hs = torch.where(valid[:, :, None], hs_pad, h_n[0][None].expand(T, B, H))
    q1 = F.linear(hs, w["query/w"], w["query/b"])
    q2 = torch.tanh(q1)
    q3 = F.layer_norm(q2, (c["D"],), w["query_norm/g"], w["query_norm/b"], c["ln_eps"])
    qry = F.linear(q3, w["query_proj/w"])
    cand = torch.tensor(inp["cand"])
    c1 = F.linear(cand, w["cand/w"], w["cand/b"])
    c2 = torch.relu(c1)
    keys = F.linear(c2, w["key/w"], w["key/b"])  # [B,K,D]
    u = torch.einsum("tbd,bkd->tbk", qry, keys) / np.sqrt(c["D"])
    scores = c["clip"] * torch.tanh(u) if c["clip"] > 0 else u
    mask = torch.tensor(inp["mask"], dtype=torch.bool)[None].expand(T, B, c["K"])
    logp = torch.log_softmax(scores.masked_fill(~mask, float("-inf")), dim=2)
    probs = logp.exp()
    # -inf never enters a product: 0 * -inf would turn the gradients into NaN
    zero = torch.zeros(())
    ent = -(probs * torch.where(mask, logp, zero)).sum(2)
    act = torch.tensor(inp["action"], dtype=torch.long)
    has = act >= 0
    chosen = torch.where(has, logp.gather(2, act.clamp(min=0)[:, :, None])[:, :, 0], zero)
    adv = torch.tensor(inp["adv"])
    per = torch.where(has, -adv * chosen - c["beta"] * ent, zero)
    loss = per.sum()
    outs = {"x": x, "hs": hs, "c_final": c_n[0], "q1": q1, "q2": q2, "q3": q3, "qry": qry, "c1": c1,
            "keys": keys, "scores": scores, "logp": logp, "probs": probs, "ent": ent, "loss": loss}
    return loss, outs, w


def write_case(h5, name, c, seed):
    rs = np.random.RandomState(seed)
    p, inp = make_case(rs, c)
    loss, outs, w = forward(c, p, inp)
    loss.backward()
    g = h5.create_group(name)
    for k, v in c.items():
        g.attrs[k] = v
    for k, v in inp.items():
        g.create_dataset("inputs/" + k, data=v)
    for k, v in p.items():
        g.create_dataset("params/" + k, data=v)
    for k, v in outs.items():
        g.create_dataset("outputs/" + k, data=v.detach().numpy())
    for k, v in w.items():
        g.create_dataset("grads/" + k, data=v.grad.numpy())
    return p, {k: v.grad.numpy() for k, v in w.items()}


def write_adamw(h5, p, grads):
    cfg = dict(lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1, max_norm=0.5)
    w = {k: torch.tensor(f32(v), requires_grad=True) for k, v in p.items()}
    decay = [w[f"{l}/{n}"] for l, n, nd in TABLE if not nd]
    nodecay = [w[f"{l}/{n}"] for l, n, nd in TABLE if nd]
    opt = torch.optim.AdamW([{"params": decay}, {"params": nodecay, "weight_decay": 0.0}], lr=cfg["lr"],
                            betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"], weight_decay=cfg["weight_decay"])
    g = h5.create_group("adamw")
    for k, v in cfg.items():
        g.attrs[k] = v
    for step in (1, 2):
        for k, t in w.items():
            t.grad = torch.tensor(f32(grads[k]))
        norm = torch.nn.utils.clip_grad_norm_(list(w.values()), cfg["max_norm"])
        opt.step()
        g.attrs[f"norm{step}"] = float(norm)
        for k, t in w.items():
            g.create_dataset(f"step{step}/{k}", data=t.detach().numpy())
    for k, t in w.items():
        st = opt.state[t]
        g.create_dataset("m2/" + k, data=st["exp_avg"].numpy())
        g.create_dataset("v2/" + k, data=st["exp_avg_sq"].numpy())


def write_units(h5):
    rs = np.random.RandomState(7)
    x = f32(rs.uniform(-6, 6, size=37))
    x[np.abs(x) < 0.05] = 0.5  # keep relu away from its kink
    dy = f32(rs.uniform(-1, 1, size=37))
    for name, fn in (("tanh", torch.tanh), ("sigmoid", torch.sigmoid), ("relu", torch.relu)):
        xt = torch.tensor(x, requires_grad=True)
        y = fn(xt)
        y.backward(torch.tensor(dy))
        g = h5.create_group("unit/" + name)
        g.create_dataset("x", data=x)
        g.create_dataset("dy", data=dy)
        g.create_dataset("y", data=y.detach().numpy())
        g.create_dataset("dx", data=xt.grad.numpy())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: torch_reference.py OUT.h5")
    base = dict(T=5, B=3, V=7, E=4, H=12, D=10, K=4, C=3, beta=0.1, clip=0.0, ln_eps=1e-5)
    with h5py.File(sys.argv[1], "w") as h5:
        h5.attrs["torch_version"] = str(torch.__version__)
        p, grads = write_case(h5, "plain", base, 1)
        write_case(h5, "clip", dict(base, clip=2.5), 2)
        write_adamw(h5, p, grads)
        write_units(h5)


if __name__ == "__main__":
    main()
