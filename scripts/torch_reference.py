#!/usr/bin/python3
"""torch_reference.py -- PyTorch reference values for tests/test_nets_torch.c
(nets/refnet) and tests/test_agent_torch.c (agent/net.c, the shipped network).

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
  /agent            agent/net.c's network (agent_forward): attrs FL FG FT FN E H Hd D
                    clip beta scale T G B K N Kn
  /agent/inputs     lf[T,G,FL] len[G] inst[B] glob[T,B,FG] rows[T,B,K,FT] prev[T,B,FT]
                    mask[T,B,K] action[T,B] adv[B]; nglob[N,FG] nrows[N,Kn,FN]
                    nmask[N,Kn] naction[N] nadv[N]
  /agent/params/<layer>/<name>   weights in agent_net_table's layout
  /agent/outputs/<name>          enc type_logits type_probs node_logits node_probs
                                 type_pg type_ent node_pg node_ent loss
  /agent/grads/<layer>/<name>    d loss / d weights
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


# ---------------------------------------------------------------------------
# agent/net.c: the policy network the product runs
# ---------------------------------------------------------------------------

# (layer, name, shape) in the order of agent_net_table (agent/net.c), for
# feature widths FL FG FT FN and dims E H Hd D.
def agent_table(c):
    E, H, Hd, D = c["E"], c["H"], c["Hd"], c["D"]
    FL, FG, FT, FN = c["FL"], c["FG"], c["FT"], c["FN"]
    Din = 2 * H + FG + FT
    return [
        ("embed", "w", (E, FL)), ("embed", "b", (E,)),
        ("enc_fwd", "w_ih", (4 * H, E)), ("enc_fwd", "w_hh", (4 * H, H)), ("enc_fwd", "b", (4 * H,)),
        ("enc_bwd", "w_ih", (4 * H, E)), ("enc_bwd", "w_hh", (4 * H, H)), ("enc_bwd", "b", (4 * H,)),
        ("decoder", "w_ih", (4 * Hd, Din)), ("decoder", "w_hh", (4 * Hd, Hd)), ("decoder", "b", (4 * Hd,)),
        ("type_ctx", "w", (D, Hd)),
        ("type_row", "w", (D, FT)), ("type_row", "b", (D,)),
        ("type_hid", "w", (D, D)), ("type_hid", "b", (D,)),
        ("type_out", "w", (1, D)),
        ("node_ctx", "w", (D, FG)), ("node_ctx", "b", (D,)), ("node_ctx2", "w", (D, D)),
        ("node_row", "w", (D, FN)), ("node_row", "b", (D,)),
        ("node_hid", "w", (D, D)), ("node_hid", "b", (D,)),
        ("node_out", "w", (1, D)),
    ]


def agent_case(rs, c):
    """Weights and one batch of stored trajectories: G instances of len[g]
    layers, B episodes (two share instance 0), K types with some masked,
    padded steps (action -1, mask all 0) past each instance's length and one
    dead end (action -1 on a live row); N node decisions over Kn nodes, one
    of them padding."""
    T, G, B, K, N, Kn = c["T"], c["G"], c["B"], c["K"], c["N"], c["Kn"]
    p = {}
    for layer, name, shp in agent_table(c):
        # large output weights: logits of a few units, where the tanh clip bends
        scale = 4.0 if name == "w" and layer.endswith("_out") else 0.5
        p[f"{layer}/{name}"] = f32(rs.uniform(-scale, scale, size=shp))
    lens = np.array([T, 2], dtype=np.int32)[:G]
    inst = np.array([0, 1, 0], dtype=np.int32)[:B]
    mask = (rs.uniform(size=(T, B, K)) < 0.7).astype(np.uint8)
    mask[:, :, 0] = 1  # at least one allowed type
    action = np.full((T, B), -1, dtype=np.int32)
    for b in range(B):
        for t in range(T):
            if t >= lens[inst[b]]:
                mask[t, b, :] = 0
                continue
            action[t, b] = rs.choice(np.flatnonzero(mask[t, b]))
    action[1, 2] = -1  # a dead end inside the episode
    nmask = (rs.uniform(size=(N, Kn)) < 0.6).astype(np.uint8)
    nmask[:, 1] = 1
    naction = np.array([rs.choice(np.flatnonzero(nmask[n])) for n in range(N)], dtype=np.int32)
    nmask[N - 1, :] = 0  # padding
    naction[N - 1] = -1
    inputs = {
        "lf": f32(rs.uniform(-1, 1, size=(T, G, c["FL"]))),
        "len": lens,
        "inst": inst,
        "glob": f32(rs.uniform(-1, 1, size=(T, B, c["FG"]))),
        "rows": f32(rs.uniform(-1, 1, size=(T, B, K, c["FT"]))),
        "prev": f32(rs.uniform(-1, 1, size=(T, B, c["FT"]))),
        "mask": mask,
        "action": action,
        "adv": f32(rs.uniform(-1.5, 1.5, size=B)),
        "nglob": f32(rs.uniform(-1, 1, size=(N, c["FG"]))),
        "nrows": f32(rs.uniform(-1, 1, size=(N, Kn, c["FN"]))),
        "nmask": nmask,
        "naction": naction,
        "nadv": f32(rs.uniform(-1.5, 1.5, size=N)),
    }
    return p, inputs


def lstm_from(w, prefix, suffix, lstm, fwd):
    """Puts agent weights prefix/{w_ih,w_hh,b} into lstm's direction
    (suffix "" or "_reverse") and rebinds w to the LSTM's own tensors so
    that their .grad is the gradient. agent/net.c has one bias b: it is
    b_ih, and b_hh stays 0 (so d/db = d/db_ih)."""
    with torch.no_grad():
        getattr(lstm, "weight_ih_l0" + suffix).copy_(w[prefix + "/w_ih"])
        getattr(lstm, "weight_hh_l0" + suffix).copy_(w[prefix + "/w_hh"])
        getattr(lstm, "bias_ih_l0" + suffix).copy_(w[prefix + "/b"])
        getattr(lstm, "bias_hh_l0" + suffix).zero_()
    w[prefix + "/w_ih"] = getattr(lstm, "weight_ih_l0" + suffix)
    w[prefix + "/w_hh"] = getattr(lstm, "weight_hh_l0" + suffix)
    w[prefix + "/b"] = getattr(lstm, "bias_ih_l0" + suffix)


def scorer(w, head, rows, ctx, clip):
    """z1 = relu(Wr r + br + ctx), z2 = relu(Wh z1 + bh), logit = C tanh(wo z2 / C)."""
    z1 = torch.relu(F.linear(rows, w[head + "_row/w"], w[head + "_row/b"]) + ctx.unsqueeze(-2))
    z2 = torch.relu(F.linear(z1, w[head + "_hid/w"], w[head + "_hid/b"]))
    raw = F.linear(z2, w[head + "_out/w"])[..., 0]
    return clip * torch.tanh(raw / clip)


def pg_terms(logits, mask, action, adv):
    """Masked softmax over the last axis; returns (probs with all-masked rows
    0, sum of -adv logp[action], sum of entropies) over rows with action >= 0."""
    mask = torch.tensor(mask, dtype=torch.bool)
    live = mask.any(-1, keepdim=True)
    m = mask | ~live  # an all-masked row (never counted) gets a finite softmax
    logp = torch.log_softmax(logits.masked_fill(~m, float("-inf")), dim=-1)
    probs = logp.exp()
    zero = torch.zeros(())
    ent = -(probs * torch.where(m, logp, zero)).sum(-1)
    act = torch.tensor(action, dtype=torch.long)
    has = act >= 0
    chosen = torch.where(has, logp.gather(-1, act.clamp(min=0).unsqueeze(-1))[..., 0], zero)
    pg = torch.where(has, -adv * chosen, zero).sum()
    en = torch.where(has, ent, zero).sum()
    return torch.where(live, probs, zero), pg, en


def agent_forward(c, p, inp):
    """agent/net.c's network on stored trajectories: returns (loss, outputs, leaf tensors)."""
    T, B, H, Hd, clip = c["T"], c["B"], c["H"], c["Hd"], c["clip"]
    w = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
    lens = torch.tensor(inp["len"], dtype=torch.long)
    inst = torch.tensor(inp["inst"], dtype=torch.long)
    # encoder: dense + relu, then a bidirectional LSTM over each instance's layers
    ex = torch.relu(F.linear(torch.tensor(inp["lf"]), w["embed/w"], w["embed/b"]))  # [T,G,E]
    enc_lstm = torch.nn.LSTM(c["E"], H, bidirectional=True)
    lstm_from(w, "enc_fwd", "", enc_lstm, True)
    lstm_from(w, "enc_bwd", "_reverse", enc_lstm, False)
    out, _ = enc_lstm(torch.nn.utils.rnn.pack_padded_sequence(ex, lens, enforce_sorted=False))
    enc, _ = torch.nn.utils.rnn.pad_packed_sequence(out, total_length=T)  # [T,G,2H], 0 past len
    # decoder: din = [enc[t, inst(b)], glob, prev], an LSTM over t, ctx = hd Wc^T
    din = torch.cat([enc[:, inst, :], torch.tensor(inp["glob"]), torch.tensor(inp["prev"])], dim=2)
    dec = torch.nn.LSTM(din.shape[2], Hd)
    lstm_from(w, "decoder", "", dec, True)
    out, _ = dec(torch.nn.utils.rnn.pack_padded_sequence(din, lens[inst], enforce_sorted=False))
    hd, _ = torch.nn.utils.rnn.pad_packed_sequence(out, total_length=T)  # [T,B,Hd]
    ctx = F.linear(hd, w["type_ctx/w"])
    tlogits = scorer(w, "type", torch.tensor(inp["rows"]), ctx, clip)  # [T,B,K]
    adv = torch.tensor(inp["adv"])[None, :].expand(T, B)
    tprobs, tpg, tent = pg_terms(tlogits, inp["mask"], inp["action"], adv)
    # node head: ctx = Wn2 relu(Wn glob + bn), a scorer of its own
    nctx = F.linear(torch.relu(F.linear(torch.tensor(inp["nglob"]), w["node_ctx/w"], w["node_ctx/b"])),
                    w["node_ctx2/w"])
    nlogits = scorer(w, "node", torch.tensor(inp["nrows"]), nctx, clip)  # [N,Kn]
    nprobs, npg, nent = pg_terms(nlogits, inp["nmask"], inp["naction"], torch.tensor(inp["nadv"]))
    beta, scale = c["beta"], c["scale"]
    loss = scale * (tpg - beta * tent) + scale * (npg - beta * nent)
    outs = {"enc": enc, "type_logits": tlogits, "type_probs": tprobs, "node_logits": nlogits,
            "node_probs": nprobs, "type_pg": tpg, "type_ent": tent, "node_pg": npg, "node_ent": nent,
            "loss": loss}
    return loss, outs, w


def write_agent(h5):
    # feature widths of env/gym.h and agent/net.h (the C test checks them)
    c = dict(FL=12, FG=24, FT=25, FN=18, E=5, H=6, Hd=7, D=8, clip=2.5, beta=0.125, scale=0.25,
             T=4, G=2, B=3, K=3, N=5, Kn=4)
    rs = np.random.RandomState(11)
    p, inp = agent_case(rs, c)
    loss, outs, w = agent_forward(c, p, inp)
    loss.backward()
    g = h5.create_group("agent")
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
        write_agent(h5)


if __name__ == "__main__":
    main()
