#!/usr/bin/python3
"""bench_torch.py -- PyTorch's time for the network bench/bench_nets.c times.

The reference policy network of nets/refnet.h at the benchmark's sizes
(T = 16, V = 64, E = 32, D = H, K = 32, C = 16; batch 256 and 1024, hidden
128 and 256), written the idiomatic way (nn.Embedding, nn.LSTM, nn.Linear,
nn.LayerNorm, log_softmax), float32 on the CPU. One timed pass is
zero_grad + forward + backward, as in the C benchmark; the median of --reps
passes after two warm-ups.

Threads are matched: --threads N sets torch.set_num_threads(N) and, before
torch is imported, OMP_NUM_THREADS and OPENBLAS_NUM_THREADS (Debian's torch
calls OpenBLAS, whose own thread pool torch.set_num_threads does not touch).
--torch-threads M overrides the first two: with N > 1 the two pools of
N threads each oversubscribe the cores (torch's OpenMP workers spin while
OpenBLAS works), and torch is fastest with M = 1 and OpenBLAS on N threads,
so bench/run_nets.sh reports both.

Usage: /usr/bin/python3 scripts/bench_torch.py [--threads N] [--torch-threads M] [--reps R]
Output: one "RESULT B H torch_ms" line per case (bench/run_nets.sh joins
them with bench_nets' lines).
"""
import argparse
import os
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--torch-threads", type=int, default=0)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    intra = args.torch_threads if args.torch_threads > 0 else args.threads
    os.environ["OMP_NUM_THREADS"] = str(intra)
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    import torch  # after the thread variables, on purpose
    import torch.nn.functional as F

    torch.set_num_threads(intra)
    torch.manual_seed(0)

    class RefNet(torch.nn.Module):
        def __init__(self, V, E, H, D, C):
            super().__init__()
            self.embed = torch.nn.Embedding(V, E)
            self.encoder = torch.nn.LSTM(E, H)
            self.query = torch.nn.Linear(H, D)
            self.query_norm = torch.nn.LayerNorm(D)
            self.query_proj = torch.nn.Linear(D, D, bias=False)
            self.cand = torch.nn.Linear(C, D)
            self.key = torch.nn.Linear(D, D)
            self.D = D

        def forward(self, tokens, cand, mask, action, adv, beta):
            x = self.embed(tokens)  # [T,B,E]
            hs, _ = self.encoder(x)  # [T,B,H]
            qry = self.query_proj(self.query_norm(torch.tanh(self.query(hs))))  # [T,B,D]
            keys = self.key(torch.relu(self.cand(cand)))  # [B,K,D]
            scores = torch.einsum("tbd,bkd->tbk", qry, keys) / self.D ** 0.5
            m = mask[None].expand_as(scores)
            logp = torch.log_softmax(scores.masked_fill(~m, float("-inf")), dim=2)
            probs = logp.exp()
            ent = -(probs * torch.where(m, logp, torch.zeros((), dtype=logp.dtype))).sum(2)
            chosen = logp.gather(2, action[:, :, None])[:, :, 0]
            return (-adv * chosen - beta * ent).sum()

    T, V, E, K, C = 16, 64, 32, 32, 16
    print(f"bench_torch: torch {torch.__version__}, threads {intra} (OpenBLAS {args.threads}), median of {args.reps}", file=sys.stderr)
    for B in (256, 1024):
        for H in (128, 256):
            net = RefNet(V, E, H, H, C)
            tokens = torch.randint(0, V, (T, B))
            cand = torch.randn(B, K, C)
            mask = torch.rand(B, K) < 0.8
            mask[:, 0] = True
            # an allowed action per (t, b): the first real candidate at or after a random index
            r = torch.randint(0, K, (T, B))
            action = torch.zeros(T, B, dtype=torch.long)
            for t in range(T):
                for b in range(B):
                    a = int(r[t, b])
                    while not mask[b, a]:
                        a = (a + 1) % K
                    action[t, b] = a
            adv = torch.randn(T, B)

            def one_pass():
                net.zero_grad(set_to_none=False)
                loss = net(tokens, cand, mask, action, adv, 0.01)
                loss.backward()

            for _ in range(2):
                one_pass()
            times = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                one_pass()
                times.append(time.perf_counter() - t0)
            ms = statistics.median(times) * 1e3
            print(f"RESULT {B} {H} {ms:.3f}", flush=True)


if __name__ == "__main__":
    main()
