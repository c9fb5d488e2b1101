#!/usr/bin/env python3
"""bench_extender.py -- the scheduler extender over a 5,000-node cluster.

Generates 5,000 Node objects as the API server writes them (the Kubernetes
client's models, serialised by ApiClient like tests/kube_nodes.py, each
with 50 container images, conditions and addresses: about 15 KB a node),
starts `strata serve` on 127.0.0.1 with the instance catalogue, registers
one job (ctr-dlrm on types A100, A10G and CPU with aws-mixed's figures; its
cluster lists the 1,000 nodes of those types, on which its plan is fixed at
registration), and posts filter and prioritize for one Kubeflow worker pod:

  Nodes      kube-scheduler's nodeCacheCapable: false -- every Node object
             (the 4,000 the registry does not list are read from their
             labels through the catalogue, and refused: no type of the job's)
  NodeNames  nodeCacheCapable: true -- names only

The cluster: 250 p4d.24xlarge (8 A100), 250 g5.12xlarge (4 A10G), 500
r5n.24xlarge (CPU, 2 units of 48 cpus) and 4,000 m5.xlarge that are no
type of the job's, over three zones. The first call of each form (which
builds the job's inventory) is printed apart; then N calls of each verb.

In the Nodes form each call's body is new, as kube-scheduler's are in a
busy cluster: the pod alternates between workers 0 and 1, the node list
starts at another node each call (kube-scheduler's round-robin start,
nextStartNodeIndex), and --changed K nodes (default 10) have a new
resourceVersion and heartbeat time (kubelets report status every few
minutes: some 17 nodes a second in a 5,000-node cluster). --same sends the
same body every call (the figures of earlier sessions); --changed 5000
changes every node (nothing of the last body is reused: the worst case).
CPU ms per call is the daemon's user + system time (/proc/PID/stat) over
the calls, divided by N; wall ms per call is what the client saw, transfer
included; faults/call is the daemon's minor page faults (/proc/PID/stat),
which the machine's load does not change. Bounded: every request has a
timeout and the daemon is stopped at the end.

  /usr/bin/python3 bench/bench_extender.py [--bin build/strata] [--nodes 5000]
                                           [--calls N] [--names-calls N]
                                           [--changed K | --same] [--dump-body FILE]

--dump-body writes the Nodes-form body and stops: bench/bench_karead.c
reads it as the daemon does, for instruction counts under callgrind. It
also writes FILE.next, two calls later (unless --same): `bench_karead
FILE.next 10 FILE` times the read of a new body against the one before.
"""
import argparse
import copy
import http.client
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from kubernetes.client import ApiClient, V1ContainerImage, V1NodeCondition  # noqa: E402

import kube_nodes  # noqa: E402

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
# instance type, count, allocatable cpu, memory, GPUs, GPU product
POOLS = [
    ("p4d.24xlarge", 250, "95690m", "1176826588Ki", 8, "NVIDIA-A100-SXM4-40GB"),
    ("g5.12xlarge", 250, "47810m", "193016712Ki", 4, "NVIDIA-A10G"),
    ("r5n.24xlarge", 500, "95690m", "781211084Ki", None, None),
    ("m5.xlarge", 4000, "3920m", "15136204Ki", None, None),
]
TYPES = {  # aws-mixed's figures (configs/clusters/aws-mixed.yaml)
    "A100": {"kind": "gpu", "flops": "11.7TFLOPS", "io_bw": "7.88GB/s", "net_bw": "50Gbit/s",
             "mem": "40GiB", "price": 4.0966},
    "A10G": {"kind": "gpu", "flops": "10.92TFLOPS", "io_bw": "7.88GB/s", "net_bw": "10Gbit/s",
             "mem": "24GiB", "price": 1.418},
    "CPU": {"kind": "cpu", "flops": "0.576TFLOPS", "io_bw": "35.2GB/s", "net_bw": "50Gbit/s",
            "mem": "384GiB", "price": 3.576},
}
CATALOGUE_TYPE = {"p4d.24xlarge": ("A100", 8, "400Gbit/s"), "g5.12xlarge": ("A10G", 4, "40Gbit/s"),
                  "r5n.24xlarge": ("CPU", 2, "100Gbit/s")}


def template(pool, zone):
    """One Node object (a dict as the API server writes it) of a pool."""
    it, _, cpu, mem, gpus, prod = pool
    labels = {"node.kubernetes.io/instance-type": it, "beta.kubernetes.io/instance-type": it,
              "topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": "us-east-1",
              "failure-domain.beta.kubernetes.io/zone": zone,
              "eks.amazonaws.com/nodegroup": it.split(".")[0],
              "eks.amazonaws.com/capacityType": "ON_DEMAND",
              "k8s.io/cloud-provider-aws": "a94967527d6b4f8a8ddfbd6e0c3a8e1c"}
    if prod:
        labels["nvidia.com/gpu.product"] = prod
        labels["nvidia.com/gpu.count"] = str(gpus)
    n = kube_nodes.node("template", labels, cpu, mem, gpus=gpus)
    # 50 images, as the kubelet reports at most (nodeStatusMaxImages)
    n.status.images = [V1ContainerImage(
        names=["123456789012.dkr.ecr.us-east-1.amazonaws.com/team-%02d/service-%02d@sha256:%064x"
               % (i % 7, i, i * 7919),
               "123456789012.dkr.ecr.us-east-1.amazonaws.com/team-%02d/service-%02d:v1.%d.%d"
               % (i % 7, i, i, i * 3)],
        size_bytes=100000000 + i * 1234567) for i in range(50)]
    n.status.conditions = [V1NodeCondition(
        type=t, status="False" if t != "Ready" else "True", reason="Kubelet" + t,
        message="kubelet has no %s" % t, last_heartbeat_time="2024-03-01T10:00:00Z",
        last_transition_time="2024-03-01T10:00:00Z")
        for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")]
    return ApiClient().sanitize_for_serialization(n)


def cluster_nodes(total):
    """[(name, pool, zone, node dict)] for `total` nodes in POOLS' shares."""
    out = []
    scale = total / sum(p[1] for p in POOLS)
    for pool in POOLS:
        count = max(1, round(pool[1] * scale))
        tmpl = {z: template(pool, z) for z in ZONES}
        for i in range(count):
            zone = ZONES[i % 3]
            name = "ip-10-%d-%d-%d.ec2.internal" % (POOLS.index(pool), i // 250, i % 250)
            d = copy.deepcopy(tmpl[zone])
            d["metadata"]["name"] = name
            d["metadata"]["labels"]["kubernetes.io/hostname"] = name
            d["metadata"]["resourceVersion"] = str(1000 + len(out))
            d["status"]["addresses"][1]["address"] = name
            out.append((name, pool, zone, d))
    return out[:total] if len(out) > total else out


def job_doc(nodes=None):
    with open(os.path.join(ROOT, "configs/models/ctr-dlrm.yaml")) as f:
        import yaml
        job = yaml.safe_load(f)["job"]
    cl = {"types": [dict(name=k, **v) for k, v in TYPES.items()]}
    if nodes is not None:
        cl["zones"] = [{"name": z} for z in ZONES]
        cl["nodes"] = nodes
    return {"cluster": cl, "job": job}


def proc_stat(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()


def cpu_ticks(pid):
    fields = proc_stat(pid)
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)


def minor_faults(pid):
    return int(proc_stat(pid)[7])  # minflt (field 10)


def request(conn, method, path, body):
    conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status not in (200, 201):
        raise SystemExit("%s %s: %d %s" % (method, path, r.status, data[:300]))
    return data


def measure(pid, port, verb, bodies, calls):
    """(cpu ms, wall ms, minor page faults) per call over `calls` calls;
    bodies(i) is call i's body, made before the call's clock starts."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    hz = os.sysconf("SC_CLK_TCK")
    cpu = wall = faults = 0
    for i in range(calls):
        body = bodies(i)
        c0, w0, f0 = cpu_ticks(pid), time.monotonic(), minor_faults(pid)
        request(conn, "POST", "/k8s/" + verb, body)
        cpu += cpu_ticks(pid) - c0
        wall += time.monotonic() - w0
        faults += minor_faults(pid) - f0
    conn.close()
    return cpu * 1000.0 / hz / calls, wall * 1000.0 / calls, faults / calls


def nodes_bodies(items, pods, changed, same):
    """bodies(i) for the Nodes form: call i's ExtenderArgs (see the top)."""
    compact = {"separators": (",", ":")}
    raw = [json.dumps(d, **compact).encode() for d in items]
    pod_bytes = [json.dumps(p, **compact).encode() for p in pods]
    rng = random.Random(7)
    version = [0]

    def body(i):
        if same:
            k, node_bytes, pod = 0, raw, pod_bytes[0]
        else:
            k = rng.randrange(len(raw))
            node_bytes = list(raw)
            for j in rng.sample(range(len(raw)), min(changed, len(raw))):
                version[0] += 1
                d = copy.deepcopy(items[j])
                d["metadata"]["resourceVersion"] = str(10 ** 6 + version[0])
                for c in d["status"]["conditions"]:
                    c["lastHeartbeatTime"] = "2024-03-01T10:%02d:%02dZ" % (version[0] // 60 % 60,
                                                                           version[0] % 60)
                node_bytes[j] = raw[j] = json.dumps(d, **compact).encode()
                items[j] = d
            pod = pod_bytes[i % len(pod_bytes)]
        return b"".join([b'{"Pod":', pod, b',"Nodes":{"metadata":{},"items":[',
                         b",".join(node_bytes[k:] + node_bytes[:k]), b']},"NodeNames":null}'])
    return body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("STRATA_BIN", os.path.join(ROOT, "build/strata")))
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--calls", type=int, default=3, help="Nodes-form calls per verb")
    ap.add_argument("--names-calls", type=int, default=200, help="NodeNames-form calls per verb")
    ap.add_argument("--changed", type=int, default=10,
                    help="Nodes form: nodes with a new resourceVersion each call")
    ap.add_argument("--same", action="store_true",
                    help="Nodes form: the same body every call (no rotation, no change)")
    ap.add_argument("--dump-body", metavar="FILE",
                    help="write the Nodes-form body to FILE and stop (for bench/bench_karead.c)")
    a = ap.parse_args()

    t = time.monotonic()
    nodes = cluster_nodes(a.nodes)
    items = [n[3] for n in nodes]
    # compact, as kube-scheduler's extender client writes it (Go's encoding/json)
    nodes_body = json.dumps({"Pod": None, "Nodes": {"metadata": {}, "items": items},
                             "NodeNames": None}, separators=(",", ":")).encode()
    per_node = (len(nodes_body) - 60) / len(items)
    names = [n[0] for n in nodes]
    registered = []
    for name, pool, zone, _ in nodes:
        if pool[0] in CATALOGUE_TYPE:
            typ, units, bw = CATALOGUE_TYPE[pool[0]]
            registered.append({"name": name, "type": typ, "units": units, "zone": zone, "bw": bw})
    print("nodes: %d (%d of the job's types), Nodes-form body %.1f MB (%.1f KB a node), "
          "generated in %.1f s" % (len(items), len(registered), len(nodes_body) / 1e6,
                                   per_node / 1e3, time.monotonic() - t))

    def pod(job, index=0):
        return {"metadata": {"name": "%s-worker-%d" % (job, index), "namespace": "default",
                             "labels": {"training.kubeflow.org/job-name": job,
                                        "training.kubeflow.org/replica-type": "worker",
                                        "training.kubeflow.org/replica-index": str(index)}},
                "spec": {"schedulerName": "strata-scheduler"}}

    compact = {"separators": (",", ":")}
    nodes_body = nodes_body.replace(b'{"Pod":null', b'{"Pod":' + json.dumps(pod("bulk"), **compact).encode(), 1)
    names_body = json.dumps({"Pod": pod("bulk"), "Nodes": None, "NodeNames": names}, **compact).encode()
    if a.dump_body:
        with open(a.dump_body, "wb") as f:
            f.write(nodes_body)
        if not a.same:  # and the next call's, as the Nodes form's calls go
            bodies = nodes_bodies(items, [pod("bulk", 0), pod("bulk", 1)], a.changed, a.same)
            bodies(0)
            with open(a.dump_body + ".next", "wb") as f:
                f.write(bodies(1))
        return

    proc = subprocess.Popen([a.bin, "serve", "--listen", "127.0.0.1:0", "--threads", "1",
                             "--quiet", "--catalogue", os.path.join(ROOT, "configs/catalogue/instances.yaml"),
                             "--max-nodes", "1024"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        if "listening on" not in line:
            raise SystemExit("strata serve did not start: " + line + proc.stderr.read())
        port = int(line.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        t = time.monotonic()
        request(conn, "PUT", "/v1/jobs/bulk", json.dumps(job_doc(registered)).encode())
        print("registration (plans the job on 1,000 nodes): %.0f ms wall" %
              ((time.monotonic() - t) * 1000.0))
        print("form       verb        body      first call   CPU ms/call  wall ms/call  calls  faults/call")
        varied = nodes_bodies(items, [pod("bulk", 0), pod("bulk", 1)], a.changed, a.same)
        for form, body, calls, bodies in (
                ("Nodes", nodes_body, a.calls, varied),
                ("NodeNames", names_body, a.names_calls, lambda i: names_body)):
            conn.close()  # a fresh connection: the last one may have idled out
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c0, w0 = cpu_ticks(proc.pid), time.monotonic()
            out = json.loads(request(conn, "POST", "/k8s/filter", body))
            first_cpu = (cpu_ticks(proc.pid) - c0) * 1000.0 / os.sysconf("SC_CLK_TCK")
            first_wall = (time.monotonic() - w0) * 1000.0
            kept = len(out["NodeNames"] if form == "NodeNames" else out["Nodes"]["items"])
            never = len(out.get("FailedAndUnresolvableNodes") or {})
            busy = len(out.get("FailedNodes") or {})
            for verb in ("filter", "prioritize"):
                cpu, wall, faults = measure(proc.pid, port, verb, bodies, calls)
                print("%-10s %-10s %6.1f MB  %5.0f/%5.0f ms  %10.1f  %12.1f  %5d  %11.0f" %
                      (form, verb, len(body) / 1e6, first_cpu, first_wall, cpu, wall, calls,
                       faults))
            print("           filter kept %d, FailedNodes %d, FailedAndUnresolvableNodes %d" %
                  (kept, busy, never))
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/v1/jobs/bulk")
        st = json.loads(conn.getresponse().read())["extender"]
        print("job bulk: planned %s, plan_from %s, %d nodes seen" % (st.get("planned"), st.get("plan_from"),
                                                              st.get("nodes_seen", 0)))
        conn.request("GET", "/metrics")
        page = conn.getresponse().read().decode()
        got = {l.split('"')[1]: int(l.split()[-1]) for l in page.splitlines()
               if l.startswith("strata_extender_nodes_total{")}
        print("Node objects matched to the last body's bytes: %d, read in full: %d" %
              (got.get("reused", 0), got.get("read", 0)))
        conn.close()
        with open("/proc/%d/status" % proc.pid) as f:
            hwm = [l.split()[1] for l in f if l.startswith("VmHWM")]
        print("daemon peak resident memory (VmHWM): %.0f MiB" % (int(hwm[0]) / 1024.0))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
