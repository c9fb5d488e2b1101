#!/usr/bin/python3
"""agent_peer.py -- a PyTorch peer of `strata train --search`, for speed.

The same algorithm as agent/train.c in search mode, written as a PyTorch
user would: agent/net.c's network and sizes (E 64, H 64, Hd 128, D 64,
clip 10) in float32, torch.no_grad rollouts over the whole batch, the
encoder run once per step and its part of the decoder's input projected
once per layer, risk-seeking advantages (only the best `risk` fraction of
the samples, against that quantile), and an update that recomputes only
the episodes with a gradient (autograd), global-norm clipping and Adam.

The environment is strata's own (bench/agent_peer_env.c, built as
build/libstrata_peer.so): the same gym and look-ahead features, masks,
sampling stream and reward as `strata train --search`, with this network
called back at every decision. So both sides play identical environments
and the comparison measures the learner: network, advantages, update.

Usage: /usr/bin/python3 bench/agent_peer.py RUN.yaml [--seconds N]
       [--steps N] [--samples 128] [--seed 1] [--torch-threads 1]
       [--threads 0] [--lib build/libstrata_peer.so]
Prints one JSON object: steps, episodes, seconds (the steps' time, setup
excluded), episodes_per_s, exact, best, and t_opt / steps_opt (first time
the best plan sampled reached the exact optimum; null when it did not).
"""
import argparse
import ctypes as C
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

POLICY = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_int, C.POINTER(C.c_float), C.POINTER(C.c_int), C.c_int,
                     C.c_int, C.POINTER(C.c_int), C.c_int, C.POINTER(C.c_float), C.POINTER(C.c_float),
                     C.POINTER(C.c_float), C.POINTER(C.c_uint8), C.POINTER(C.c_uint8), C.c_int,
                     C.POINTER(C.c_float))


def view(ptr, shape):
    """A numpy view (no copy) of a C array."""
    return np.ctypeslib.as_array(ptr, shape=shape)


class Net(torch.nn.Module):
    """agent/net.c's TYPE path: encoder, decoder LSTM, scorer (net.h)."""

    def __init__(self, FL, FG, FT, E=64, H=64, Hd=128, D=64, clip=10.0):
        super().__init__()
        self.H, self.Hd, self.clip = H, Hd, clip
        L = torch.nn.Linear
        self.emb = L(FL, E)
        self.encf = torch.nn.LSTM(E, H)
        self.encb = torch.nn.LSTM(E, H)
        self.dec_ih = L(2 * H + FG + FT, 4 * Hd)
        self.dec_hh = L(Hd, 4 * Hd, bias=False)
        self.ctx = L(Hd, D, bias=False)
        self.row = L(FT, D)
        self.hid = L(D, D)
        self.out = L(D, 1, bias=False)
        # agent_net_table's initialisers: Xavier, orthogonal recurrences,
        # zero biases but the LSTMs' forget gates (1)
        for name, w in self.named_parameters():
            if "weight_hh" in name or name == "dec_hh.weight":
                torch.nn.init.orthogonal_(w)
            elif w.dim() == 2:
                torch.nn.init.xavier_uniform_(w)
            else:
                torch.nn.init.zeros_(w)
        with torch.no_grad():
            for lstm, n in ((self.encf, H), (self.encb, H)):
                lstm.bias_ih_l0[n:2 * n] = 1
            self.dec_ih.bias[Hd:2 * Hd] = 1

    def encode(self, lf):
        """lf[T,FL] (one instance) -> enc[T,2H]."""
        x = torch.relu(self.emb(lf))[:, None, :]
        hf, _ = self.encf(x)
        hb, _ = self.encb(x.flip(0))
        return torch.cat([hf, hb.flip(0)], -1)[:, 0, :]

    def enc_proj(self, enc):
        """The encoder's part of the decoder's input gates, once per layer: [T,4Hd]."""
        return F.linear(enc, self.dec_ih.weight[:, :2 * self.H], self.dec_ih.bias)

    def cell(self, pe, x, h, c):
        """One decoder step: pe[.,4Hd] (encoder part), x[B,FG+FT] -> h, c."""
        g = pe + F.linear(x, self.dec_ih.weight[:, 2 * self.H:]) + self.dec_hh(h)
        i, f, gg, o = g.chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
        return torch.sigmoid(o) * torch.tanh(c), c

    def logits(self, h, rows):
        """h[...,Hd], rows[...,K,FT] -> clipped logits [...,K]."""
        z1 = torch.relu(self.row(rows) + self.ctx(h).unsqueeze(-2))
        z2 = torch.relu(self.hid(z1))
        return self.clip * torch.tanh(self.out(z2).squeeze(-1) / self.clip)


def masked(logits, mask):
    return logits.masked_fill(~mask, float("-inf"))


class Peer:
    def __init__(self, a):
        self.lib = C.CDLL(a.lib)
        lib = self.lib
        lib.peer_open.restype = C.c_void_p
        lib.peer_open.argtypes = [C.c_char_p, C.c_int, C.c_int, C.c_double, C.c_char_p, C.c_int]
        lib.peer_exact.restype = C.c_double
        lib.peer_exact.argtypes = [C.c_void_p]
        lib.peer_layers.argtypes = [C.c_void_p]
        lib.peer_play.argtypes = [C.c_void_p, POLICY, C.c_void_p, C.c_uint64, C.c_uint64,
                                  C.POINTER(C.c_double), C.POINTER(C.c_double), C.c_char_p, C.c_int]
        P = C.POINTER
        lib.peer_traj.argtypes = [C.c_void_p, P(C.c_int), P(C.c_int), P(P(C.c_float)), P(P(C.c_float)),
                                  P(P(C.c_float)), P(P(C.c_uint8)), P(P(C.c_int))]
        lib.peer_close.argtypes = [C.c_void_p]
        fl, fg, ft = C.c_int(), C.c_int(), C.c_int()
        lib.peer_sizes(C.byref(fl), C.byref(fg), C.byref(ft))
        self.FL, self.FG, self.FT = fl.value, fg.value, ft.value
        err = C.create_string_buffer(1024)
        self.B = a.samples
        self.h = lib.peer_open(a.config.encode(), self.B, a.threads, 4.0, err, 1024)
        if not self.h:
            sys.exit("agent_peer: " + err.value.decode())
        self.exact = lib.peer_exact(self.h)
        torch.manual_seed(a.seed)
        self.net = Net(self.FL, self.FG, self.FT)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
        self.a = a
        self.cb = POLICY(self.policy)
        self.r = np.zeros(self.B)
        self.cost = np.zeros(self.B)

    def policy(self, ctx, t, lf, ln, T, G, inst, B, glob, rows, prev, mask, active, K, probs):
        """The rollout's TYPE head (agent_type_policy), under no_grad."""
        try:
            with torch.no_grad():
                if t == 0:  # the encoder once per step, its projection once per layer
                    L = ln[0]
                    lf_t = torch.from_numpy(view(lf, (T, self.FL))[:L].copy())
                    self.lf = lf_t  # the update recomputes the encoder from it
                    self.pe = self.net.enc_proj(self.net.encode(lf_t))
                    self.hc = (torch.zeros(B, self.net.Hd), torch.zeros(B, self.net.Hd))
                x = torch.from_numpy(np.concatenate([view(glob, (B, self.FG)), view(prev, (B, self.FT))], 1))
                h, c = self.net.cell(self.pe[t], x, *self.hc)
                act = torch.from_numpy(view(active, (B,)).astype(bool))[:, None]
                self.hc = (torch.where(act, h, self.hc[0]), torch.where(act, c, self.hc[1]))
                mk = torch.from_numpy(view(mask, (B, K)).astype(bool))
                lg = self.net.logits(h, torch.from_numpy(view(rows, (B, K, self.FT))))
                p = torch.softmax(masked(lg, mk), -1).nan_to_num(0.0)  # an all-masked row: zeros
                view(probs, (B, K))[:] = p.numpy()
            return 0
        except Exception as e:  # never unwind through C
            print("agent_peer: policy: %r" % e, file=sys.stderr)
            return 1

    def step(self, s):
        a, B = self.a, self.B
        err = C.create_string_buffer(1024)
        rt = self.r.ctypes.data_as(C.POINTER(C.c_double))
        pc = self.cost.ctypes.data_as(C.POINTER(C.c_double))
        if self.lib.peer_play(self.h, self.cb, None, a.seed, s, rt, pc, err, 1024):
            sys.exit("agent_peer: " + err.value.decode())
        # risk-seeking advantages (agent/adv.c): the best `risk` fraction
        # against that quantile; the others get no gradient at all
        v = np.sort(self.r)
        q = v[min(int(math.floor((1.0 - a.risk) * B)), B - 1)]
        keep = np.nonzero(self.r >= q)[0]
        adv = torch.from_numpy((self.r[keep] - q).astype(np.float32))
        T, K = C.c_int(), C.c_int()
        g, rw, pv = (C.POINTER(C.c_float)() for _ in range(3))
        mk, ac = C.POINTER(C.c_uint8)(), C.POINTER(C.c_int)()
        self.lib.peer_traj(self.h, C.byref(T), C.byref(K), C.byref(g), C.byref(rw), C.byref(pv), C.byref(mk),
                           C.byref(ac))
        T, K = T.value, K.value
        L = self.lf.shape[0]
        glob = torch.from_numpy(view(g, (T, B, self.FG))[:L, keep])
        rows = torch.from_numpy(view(rw, (T, B, K, self.FT))[:L, keep])
        prev = torch.from_numpy(view(pv, (T, B, self.FT))[:L, keep])
        mask = torch.from_numpy(view(mk, (T, B, K))[:L, keep].astype(bool))
        act = torch.from_numpy(view(ac, (T, B))[:L, keep].astype(np.int64))
        # the update, on the kept episodes only
        net = self.net
        pe = net.enc_proj(net.encode(self.lf))  # [L,4Hd]
        x = torch.cat([glob, prev], -1)  # [L,Bs,FG+FT]
        n = len(keep)
        h = torch.zeros(n, net.Hd)
        c = torch.zeros(n, net.Hd)
        hs = []
        for t in range(L):
            h, c = net.cell(pe[t], x[t], h, c)
            hs.append(h)
        lg = masked(net.logits(torch.stack(hs), rows), mask)  # [L,Bs,K]
        logp = torch.log_softmax(lg, -1)
        p = logp.exp()
        ent = -(p * logp.masked_fill(~mask, 0.0)).sum(-1)  # [L,Bs]
        dec = act >= 0
        lpa = logp.gather(-1, act.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        loss = ((-adv * lpa - a.entropy * ent) * dec).sum() / B
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        self.opt.step()
        return float(np.min(self.cost))

    def run(self):
        a = self.a
        best, t_opt, s_opt, s = math.inf, None, None, 0
        t0 = time.perf_counter()
        while True:
            s += 1
            best = min(best, self.step(s))
            el = time.perf_counter() - t0
            if t_opt is None and best <= self.exact * (1 + 1e-9):
                t_opt, s_opt = el, s
            if (a.steps and s >= a.steps) or (a.seconds and el >= a.seconds):
                break
        return {"steps": s, "episodes": s * self.B, "seconds": el, "episodes_per_s": s * self.B / el,
                "exact": self.exact, "best": best, "t_opt": t_opt, "steps_opt": s_opt,
                "torch_threads": torch.get_num_threads()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config")
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--samples", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--entropy", type=float, default=0.02)
    ap.add_argument("--risk", type=float, default=0.1)
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="environment threads (0: all cores)")
    ap.add_argument("--lib", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                                                  "libstrata_peer.so"))
    a = ap.parse_args()
    if not a.seconds and not a.steps:
        a.seconds = 10
    torch.set_num_threads(a.torch_threads)
    print(json.dumps(Peer(a).run()))


if __name__ == "__main__":
    main()
