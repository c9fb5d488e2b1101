#!/usr/bin/python3
"""measure_torch.py -- measured training throughput of real PyTorch models on this CPU.

Trains each model of scripts/torch_models.py for real (forward, loss,
backward, SGD with momentum 0.9; synthetic data of the right shape) at
several batch sizes, in three arrangements:

  single     1 process
  allreduce  2 processes, torch.distributed gloo over 127.0.0.1,
             DistributedDataParallel (gradients all-reduced each step)
  ps         2 processes, gloo, a parameter-server arrangement: every rank
             computes gradients, pushes them to rank 0 (dist.reduce of the
             flattened gradients), rank 0 alone holds the optimizer and
             applies the step, and every rank pulls the new parameters
             (dist.broadcast)

Every process runs one thread (torch.set_num_threads(1), and
OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = 1 before torch is imported), so
two processes use the two cores. `batch` is per process (samples per step
per unit, as strata calibrate reads it).

Timing: 2 warm-up steps, one step timed to choose n steps of about
--target seconds, then --reps repeats of n steps between barriers; the
throughput of a repeat is processes x batch x n / its wall time, the row's
figure the median of the repeats, its spread (max - min) / median. A run
whose spread exceeds --max-spread is run again once and the one of smaller
spread kept (both are logged on stderr).

Output: CSV in strata calibrate's format (docs/calibration.md) with extra
columns calibrate ignores:
  job,type,workers,ps,batch,samples_per_s,model,mode,threads,steps,reps,spread_pct,cpu_share
(cpu_share: rank 0's process CPU time / wall time over the repeats: below
1 when the shared machine's other jobs took the core, or rank 0 waited on
the network)
Rows of the ps arrangement go to a second file (OUT with -ps before .csv),
since the cost model v1 has no term that tells them apart from
all-reduce (docs/calibration.md).

Usage:
  /usr/bin/python3 scripts/measure_torch.py --out configs/measurements/cpu-2core.csv
      [--models resnet18,vgg11,transformer,ctr] [--reps 5] [--target 1.5]
      [--batches 8,16] [--modes single,allreduce,ps] [--append]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BATCHES = {"resnet18": [8, 16, 32], "vgg11": [8, 16, 32],
           "transformer": [8, 16, 32], "ctr": [64, 256, 1024]}
MODES = [("single", 1), ("allreduce", 2), ("ps", 2)]


def worker(args):
    """One process of one run; rank 0 prints the result as one JSON line."""
    import torch
    import torch.distributed as dist
    sys.path.insert(0, HERE)
    import torch_models

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    torch.manual_seed(0)
    rank, world = args.rank, args.world
    if world > 1:
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % args.port,
                                rank=rank, world_size=world)
    model = torch_models.MODELS[args.model]()
    inputs = model.example_input(args.batch)
    lossf = model.loss
    net = model
    if world > 1 and args.mode == "allreduce":
        net = torch.nn.parallel.DistributedDataParallel(model)
    params = [p for p in model.parameters()]
    if world > 1 and args.mode == "ps":
        for p in params:  # start from rank 0's parameters
            dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9) if (rank == 0 or args.mode != "ps") else None

    def step():
        for p in params:
            p.grad = None
        out = net(*inputs)
        lossf(out, args.batch).backward()
        if world > 1 and args.mode == "ps":
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            dist.reduce(flat, 0)  # push: rank 0 receives the sum
            if rank == 0:
                flat /= world
                off = 0
                for p in params:
                    p.grad.copy_(flat[off:off + p.numel()].view_as(p))
                    off += p.numel()
                opt.step()
            pflat = torch.cat([p.data.reshape(-1) for p in params])
            dist.broadcast(pflat, 0)  # pull
            if rank != 0:
                off = 0
                for p in params:
                    p.data.copy_(pflat[off:off + p.numel()].view_as(p))
                    off += p.numel()
        else:
            opt.step()

    def barrier():
        if world > 1:
            dist.barrier()

    for _ in range(2):
        step()
    barrier()
    t0 = time.perf_counter()
    step()
    barrier()
    t1 = time.perf_counter() - t0
    n = torch.tensor([max(1, min(200, round(args.target / max(t1, 1e-6))))])
    if world > 1:
        dist.broadcast(n, 0)
    n = int(n.item())
    rates = []
    cpu = wall = 0.0
    for _ in range(args.reps):
        barrier()
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            step()
        barrier()
        dt = time.perf_counter() - t0
        cpu += time.process_time() - c0
        wall += dt
        rates.append(world * args.batch * n / dt)
    if rank == 0:
        med = statistics.median(rates)
        print(json.dumps({"rate": med, "steps": n, "reps": args.reps,
                          "spread": (max(rates) - min(rates)) / med, "rates": rates,
                          "cpu_share": cpu / wall}))
    if world > 1:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(model, batch, mode, world, args):
    """Starts `world` worker processes; returns rank 0's result dict."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    port = free_port()
    procs = []
    for rank in range(world):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--model", model,
               "--batch", str(batch), "--mode", mode, "--world", str(world), "--rank", str(rank),
               "--port", str(port), "--reps", str(args.reps), "--target", str(args.target)]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=600)[0] for p in procs]
    for p in procs:
        if p.returncode != 0:
            raise SystemExit("measure_torch: %s batch %d %s failed (exit %d)" % (model, batch, mode, p.returncode))
    return json.loads(outs[0].strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--model")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--mode", default="single")
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--target", type=float, default=1.5)
    ap.add_argument("--max-spread", type=float, default=0.15)
    ap.add_argument("--models", default="resnet18,vgg11,transformer,ctr")
    ap.add_argument("--type", default="EPYC")
    ap.add_argument("--jobs", default="jobs", help="job configs' folder, relative to OUT's folder")
    ap.add_argument("--batches", help="batch sizes for every model listed (default: per model)")
    ap.add_argument("--modes", default="single,allreduce,ps")
    ap.add_argument("--append", action="store_true", help="add rows to OUT instead of rewriting it")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if not args.out:
        raise SystemExit("measure_torch: --out OUT.csv is required")
    header = "job,type,workers,ps,batch,samples_per_s,model,mode,threads,steps,reps,spread_pct,cpu_share\n"
    mode = "a" if args.append else "w"
    files = {"main": open(args.out, mode), "ps": open(args.out.replace(".csv", "-ps.csv"), mode)}
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()
    for f in files.values():
        f.write("# made by scripts/measure_torch.py on %s, %s; load average at start %.2f %.2f %.2f\n"
                % (socket.gethostname(), stamp, *load))
        f.write("# 1 torch thread per process; synthetic data; median of %d repeats\n" % args.reps)
        if not args.append:
            f.write(header)
    modes = [(m, w) for m, w in MODES if m in args.modes.split(",")]
    for model in args.models.split(","):
        batches = [int(b) for b in args.batches.split(",")] if args.batches else BATCHES[model]
        for batch in batches:
            for mode, world in modes:
                t = time.time()
                r = run(model, batch, mode, world, args)
                if r["spread"] > args.max_spread:
                    r2 = run(model, batch, mode, world, args)
                    print("  rerun (spread %.0f%%): %.2f spread %.0f%%" % (100 * r["spread"], r2["rate"], 100 * r2["spread"]),
                          file=sys.stderr)
                    if r2["spread"] < r["spread"]:
                        r = r2
                row = "%s/%s.yaml,%s,%d,1,%d,%.4g,%s,%s,1,%d,%d,%.1f,%.2f\n" % (
                    args.jobs, model, args.type, world, batch, r["rate"], model, mode,
                    r["steps"], r["reps"], 100 * r["spread"], r["cpu_share"])
                files["ps" if mode == "ps" else "main"].write(row)
                for f in files.values():
                    f.flush()
                print("%-11s b=%-5d %-9s %8.2f samples/s spread %4.1f%% (%.0f s) load %.1f" % (
                    model, batch, mode, r["rate"], 100 * r["spread"], time.time() - t, os.getloadavg()[0]),
                    file=sys.stderr)
    for f in files.values():
        f.close()


if __name__ == "__main__":
    main()
